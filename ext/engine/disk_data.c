/* SPDX-License-Identifier: Apache-2.0 */
/* A simulated file's bytes (see disk_impl.h): the current copy and the
 * durable one, the mark of each 512-byte sector that differs between them,
 * growth and truncation within the capacity, their sync, and reads and
 * writes at an offset with the read, write and bit-rot faults drawn from
 * the DISK stream. Knows nothing of names or handles' offsets: disk.c calls
 * it for the system calls on a file's content. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include "disk_impl.h"

/* Mark the sectors of cur over [lo, hi) dirty. */
static int mark_dirty(struct inode *n, size_t lo, size_t hi)
{
    if (lo >= hi)
        return 0;
    const uint64_t first = lo / ASKEW_DISK_SECTOR, end = sectors(hi);
    if (askew__grow((void **)&n->mark, &n->mark_cap, end, 1))
        return -ENOMEM;
    for (uint64_t s = first; s < end; s++) {
        if (n->mark[s])
            continue;
        if (askew__grow((void **)&n->dirty, &n->dirty_cap, n->dirty_len + 1,
                        sizeof(uint64_t)))
            return -ENOMEM;
        n->mark[s] = 1;
        n->dirty[n->dirty_len++] = s;
    }
    return 0;
}

/* Set cur's size to `size`, zero-filling growth, within the capacity. */
int askew__disk_resize(struct askew_disk *d, struct inode *n, size_t size)
{
    const uint64_t cap = d->faults.capacity_bytes;
    if (size > n->cur_size && d->bytes + (size - n->cur_size) > cap)
        return -ENOSPC;
    if (askew__grow((void **)&n->cur, &n->cur_cap, size, 1))
        return -ENOMEM;
    if (size > n->cur_size) {
        memset(n->cur + n->cur_size, 0, size - n->cur_size);
        /* Durable bytes under the new zeros must not come back whole. */
        const size_t dur_end = size < n->dur_size ? size : n->dur_size;
        if (mark_dirty(n, n->cur_size, dur_end))
            return -ENOMEM;
        d->bytes += size - n->cur_size;
    } else {
        d->bytes -= n->cur_size - size;
        /* A sector cut in two keeps its head; later growth zero-fills. */
        size_t keep = 0;
        for (size_t i = 0; i < n->dirty_len; i++) {
            const uint64_t s = n->dirty[i];
            if (s * ASKEW_DISK_SECTOR < size)
                n->dirty[keep++] = s;
            else
                n->mark[s] = 0;
        }
        n->dirty_len = keep;
    }
    n->cur_size = size;
    return 0;
}

/* Make the file's bytes and size durable: the marked sectors are copied. */
int askew__disk_file_sync(struct askew_disk *d, struct inode *n)
{
    if (askew__grow((void **)&n->dur, &n->dur_cap, n->cur_size, 1))
        return -ENOMEM;
    /* Unmarked bytes past the durable size are zeros of a truncate. */
    if (n->cur_size > n->dur_size)
        memset(n->dur + n->dur_size, 0, n->cur_size - n->dur_size);
    for (size_t i = 0; i < n->dirty_len; i++) {
        const uint64_t s = n->dirty[i];
        const size_t lo = s * ASKEW_DISK_SECTOR;
        size_t hi = lo + ASKEW_DISK_SECTOR;
        if (hi > n->cur_size)
            hi = n->cur_size;
        if (lo < hi)
            memcpy(n->dur + lo, n->cur + lo, hi - lo);
        n->mark[s] = 0;
    }
    d->bytes += n->cur_size;
    d->bytes -= n->dur_size;
    mix(d, n->dirty_len);
    n->dirty_len = 0;
    n->dur_size = n->cur_size;
    return 0;
}

int askew__disk_truncate_inode(struct askew_disk *d, struct inode *n, int64_t length)
{
    if (n->is_dir)
        return -EISDIR;
    if (length < 0)
        return -EINVAL;
    if (length > FILE_SIZE_MAX)
        return -EFBIG;
    const int rc = askew__disk_resize(d, n, (size_t)length);
    if (rc == 0)
        n->mtime_ns = d->sched->now_ns;
    return rc;
}

int64_t askew__disk_read_at(struct askew_disk *d, struct handle *h, void *buf,
                            size_t len, int64_t off)
{
    if (h == NULL || (h->flags & O_ACCMODE) == O_WRONLY)
        return -EBADF;
    const struct inode *n = inode_get(d, h->ino);
    if (n->is_dir)
        return -EISDIR;
    if (off < 0)
        return -EINVAL;
    if (askew_rng_chance_ppm(&d->rng, d->faults.eio_read_ppm))
        return -EIO;
    if ((uint64_t)off >= n->cur_size || len == 0)
        return 0;
    size_t got = n->cur_size - (size_t)off;
    if (got > len)
        got = len;
    memcpy(buf, n->cur + off, got);
    if (askew_rng_chance_ppm(&d->rng, d->faults.bitrot_ppm)) {
        const uint64_t bit = askew_rng_below(&d->rng, (uint64_t)got * 8);
        ((unsigned char *)buf)[bit / 8] ^= (unsigned char)(1u << (bit % 8));
        mix(d, bit);
    }
    return (int64_t)got;
}

int64_t askew__disk_write_at(struct askew_disk *d, struct handle *h, const void *buf,
                             size_t len, int64_t off)
{
    if (h == NULL || (h->flags & O_ACCMODE) == O_RDONLY)
        return -EBADF;
    struct inode *n = inode_get(d, h->ino);
    if (off < 0)
        return -EINVAL;
    if (askew_rng_chance_ppm(&d->rng, d->faults.eio_write_ppm))
        return -EIO;
    if (h->flags & O_APPEND)
        off = (int64_t)n->cur_size;
    if (len == 0)
        return 0;
    if (len > (size_t)FILE_SIZE_MAX || off > FILE_SIZE_MAX - (int64_t)len)
        return -EFBIG;
    const size_t end = (size_t)off + len;
    if (end > n->cur_size) {
        const int rc = askew__disk_resize(d, n, end);
        if (rc)
            return rc;
    }
    if (mark_dirty(n, (size_t)off, end))
        return -ENOMEM;
    memcpy(n->cur + off, buf, len);
    n->mtime_ns = d->sched->now_ns;
    return (int64_t)len;
}
