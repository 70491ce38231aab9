/* SPDX-License-Identifier: Apache-2.0 */
/* The simulated disk (ext/engine/disk.h): stubs while the model is built. */
#include <errno.h>
#include <stdlib.h>

#include "disk.h"

struct askew_disk {
    struct askew_sched *sched;
    int32_t node;
    struct askew_rng rng;
    struct askew_disk_faults faults;
};

int askew_disk_new(struct askew_disk **out, struct askew_sched *sched, int32_t node,
                   uint64_t seed)
{
    struct askew_disk *d = calloc(1, sizeof(*d));
    if (!d)
        return -ENOMEM;
    d->sched = sched;
    d->node = node;
    askew_rng_seed(
        &d->rng,
        askew_seed_stream(askew_seed_stream(seed, ASKEW_STREAM_DISK), (uint64_t)node));
    *out = d;
    return 0;
}

void askew_disk_free(struct askew_disk *disk)
{
    free(disk);
}

int askew_disk_set_faults(struct askew_disk *disk, const struct askew_disk_faults *f)
{
    disk->faults = *f;
    return 0;
}
void askew_disk_get_faults(const struct askew_disk *disk, struct askew_disk_faults *f)
{
    *f = disk->faults;
}
int64_t askew_disk_latency_ns(struct askew_disk *disk)
{
    (void)disk;
    return 0;
}
void askew_disk_usage(const struct askew_disk *disk, struct askew_disk_usage *out)
{
    (void)disk;
    *out = (struct askew_disk_usage){0};
}
int askew_disk_open(struct askew_disk *disk, const char *path, int flags, uint32_t mode)
{
    (void)disk, (void)path, (void)flags, (void)mode;
    return -ENOSYS;
}
int askew_disk_stat(struct askew_disk *disk, const char *path,
                    struct askew_disk_stat *st)
{
    (void)disk, (void)path, (void)st;
    return -ENOSYS;
}
int askew_disk_rename(struct askew_disk *disk, const char *from, const char *to)
{
    (void)disk, (void)from, (void)to;
    return -ENOSYS;
}
int askew_disk_unlink(struct askew_disk *disk, const char *path)
{
    (void)disk, (void)path;
    return -ENOSYS;
}
int askew_disk_mkdir(struct askew_disk *disk, const char *path, uint32_t mode)
{
    (void)disk, (void)path, (void)mode;
    return -ENOSYS;
}
int askew_disk_rmdir(struct askew_disk *disk, const char *path)
{
    (void)disk, (void)path;
    return -ENOSYS;
}
int askew_disk_truncate(struct askew_disk *disk, const char *path, int64_t length)
{
    (void)disk, (void)path, (void)length;
    return -ENOSYS;
}
int askew_disk_list(struct askew_disk *disk, const char *path, askew_disk_dirent_fn fn,
                    void *ctx)
{
    (void)disk, (void)path, (void)fn, (void)ctx;
    return -ENOSYS;
}
int askew_disk_close(struct askew_disk *disk, int fh)
{
    (void)disk, (void)fh;
    return -ENOSYS;
}
int64_t askew_disk_read(struct askew_disk *disk, int fh, void *buf, size_t len)
{
    (void)disk, (void)fh, (void)buf, (void)len;
    return -ENOSYS;
}
int64_t askew_disk_write(struct askew_disk *disk, int fh, const void *buf, size_t len)
{
    (void)disk, (void)fh, (void)buf, (void)len;
    return -ENOSYS;
}
int64_t askew_disk_pread(struct askew_disk *disk, int fh, void *buf, size_t len,
                         int64_t off)
{
    (void)disk, (void)fh, (void)buf, (void)len, (void)off;
    return -ENOSYS;
}
int64_t askew_disk_pwrite(struct askew_disk *disk, int fh, const void *buf, size_t len,
                          int64_t off)
{
    (void)disk, (void)fh, (void)buf, (void)len, (void)off;
    return -ENOSYS;
}
int64_t askew_disk_lseek(struct askew_disk *disk, int fh, int64_t off, int whence)
{
    (void)disk, (void)fh, (void)off, (void)whence;
    return -ENOSYS;
}
int askew_disk_fsync(struct askew_disk *disk, int fh)
{
    (void)disk, (void)fh;
    return -ENOSYS;
}
int askew_disk_fdatasync(struct askew_disk *disk, int fh)
{
    (void)disk, (void)fh;
    return -ENOSYS;
}
int askew_disk_ftruncate(struct askew_disk *disk, int fh, int64_t length)
{
    (void)disk, (void)fh, (void)length;
    return -ENOSYS;
}
int askew_disk_fstat(struct askew_disk *disk, int fh, struct askew_disk_stat *st)
{
    (void)disk, (void)fh, (void)st;
    return -ENOSYS;
}
int askew_disk_flags(const struct askew_disk *disk, int fh)
{
    (void)disk, (void)fh;
    return -EBADF;
}
int askew_disk_crash(struct askew_disk *disk, struct askew_disk_crash_result *out)
{
    (void)disk;
    if (out)
        *out = (struct askew_disk_crash_result){0};
    return 0;
}
