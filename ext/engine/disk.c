/* SPDX-License-Identifier: Apache-2.0 */
/* The simulated disk's system calls (see disk.h): making and freeing a
 * disk, its faults and usage, the namespace by path (open, stat, rename,
 * unlink, mkdir, rmdir, truncate, list) and the calls on open handles
 * (close, read, write, their p- forms, lseek, fsync, fdatasync, ftruncate,
 * fstat). Each call draws its latency first, mixes its arguments and traces
 * its result; the tree (disk_tree.c) and a file's bytes (disk_data.c) do
 * the work. The binding (ext/disk_type.c) and the preload's disk hook call
 * it. Pure C: never includes Python.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "disk_impl.h"

static uint64_t hash_str(const char *s)
{
    uint64_t h = 0xCBF29CE484222325ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001B3ULL;
    return h;
}

/* ---- the disk
 * ------------------------------------------------------------------------ */

int askew_disk_new(struct askew_disk **out, struct askew_sched *sched, int32_t node,
                   uint64_t seed)
{
    struct askew_disk *d = calloc(1, sizeof(*d));
    if (d == NULL)
        return -ENOMEM;
    d->sched = sched;
    d->node = node;
    askew_rng_seed(&d->rng,
                   askew_seed_stream(askew_seed_stream(seed, ASKEW_STREAM_DISK),
                                     (uint64_t)(uint32_t)node));
    d->faults.capacity_bytes = ASKEW_DISK_CAPACITY_DEFAULT;
    /* Inode numbers 0 and 1 are never used, as on ext4. */
    d->inodes_len = ASKEW_DISK_ROOT_INO;
    struct inode *root;
    if (askew__grow((void **)&d->inodes, &d->inodes_cap, d->inodes_len,
                    sizeof(*d->inodes)) ||
        askew__disk_inode_new(d, 1, 0755, &root)) {
        askew_disk_free(d);
        return -ENOMEM;
    }
    root->parent = root->ino;
    root->cur_links = root->dur_links = 1;
    *out = d;
    return 0;
}

void askew_disk_free(struct askew_disk *disk)
{
    if (disk == NULL)
        return;
    for (size_t i = 0; i < disk->inodes_len; i++) {
        struct inode *n = disk->inodes[i];
        if (n != NULL)
            askew__disk_inode_destroy(disk, n);
    }
    askew__disk_log_drop(disk, disk->log_len, 0);
    free(disk->log);
    free(disk->inodes);
    free(disk->handles);
    free(disk);
}

int askew_disk_set_faults(struct askew_disk *disk, const struct askew_disk_faults *f)
{
    const uint32_t ppm_max = 1000000u;
    if (f->eio_read_ppm > ppm_max || f->eio_write_ppm > ppm_max ||
        f->eio_fsync_ppm > ppm_max || f->bitrot_ppm > ppm_max ||
        f->latency_ns_min < 0 || f->latency_ns_max < f->latency_ns_min)
        return -EINVAL;
    disk->faults = *f;
    if (disk->faults.capacity_bytes == 0)
        disk->faults.capacity_bytes = ASKEW_DISK_CAPACITY_DEFAULT;
    mix(disk, f->eio_read_ppm);
    mix(disk, f->eio_write_ppm);
    mix(disk, f->eio_fsync_ppm);
    mix(disk, f->bitrot_ppm);
    mix(disk, (uint64_t)f->latency_ns_min);
    mix(disk, (uint64_t)f->latency_ns_max);
    mix(disk, disk->faults.capacity_bytes);
    return 0;
}

void askew_disk_get_faults(const struct askew_disk *disk, struct askew_disk_faults *f)
{
    *f = disk->faults;
}

int64_t askew_disk_latency_ns(struct askew_disk *disk)
{
    const int64_t ns = disk->latency_ns;
    disk->latency_ns = 0;
    return ns;
}

void askew_disk_usage(const struct askew_disk *disk, struct askew_disk_usage *out)
{
    out->bytes = disk->bytes;
    out->files = disk->files;
    out->handles = disk->handles_open;
    out->dirty = 0;
    for (size_t i = 0; i < disk->inodes_len; i++)
        if (disk->inodes[i])
            out->dirty += disk->inodes[i]->dirty_len;
    out->dirops = disk->log_len;
}

/* ---- the namespace -----------------------------------------------------------------
 */

/* Add name -> ino in the current tree of directory `dir`, logged. */
static int link_in(struct askew_disk *d, struct inode *dir, const char *name,
                   struct inode *n)
{
    uint64_t old;
    if (askew__disk_dmap_set(&dir->ents, name, n->ino, &old))
        return -ENOMEM;
    const int rc = askew__disk_log_add(d, DIROP_LINK, dir->ino, name, 0, NULL, n->ino);
    if (rc) {
        (void)askew__disk_dmap_del(&dir->ents, name);
        return rc;
    }
    ASKEW_ASSERT(old == 0);
    n->cur_links++;
    if (n->is_dir)
        n->parent = dir->ino;
    dir->mtime_ns = d->sched->now_ns;
    return 0;
}

static int handle_new(struct askew_disk *d, uint64_t ino, int flags)
{
    size_t fh = 0;
    while (fh < d->handles_len && d->handles[fh].used)
        fh++;
    if (fh == ASKEW_DISK_HANDLES_MAX)
        return -EMFILE;
    if (askew__grow((void **)&d->handles, &d->handles_cap, fh + 1, sizeof(*d->handles)))
        return -ENOMEM;
    if (fh == d->handles_len)
        d->handles_len++;
    d->handles[fh] = (struct handle){.used = 1, .flags = flags, .ino = ino, .off = 0};
    d->handles_open++;
    inode_get(d, ino)->opens++;
    return (int)fh;
}

static int do_open(struct askew_disk *d, const char *path, int flags, uint32_t mode)
{
    struct lookup lk;
    int rc = askew__disk_walk(d, path, &lk);
    if (rc)
        return rc;
    const int acc = flags & O_ACCMODE;
    struct inode *n = inode_get(d, lk.ino);
#ifdef O_TMPFILE
    if ((flags & O_TMPFILE) == O_TMPFILE)
        return -EOPNOTSUPP; /* an unnamed file: not modelled (tempfile falls back) */
#endif
    if (flags & O_CREAT) {
        /* Linux: a create names a file, never "name/" nor "d/." (which
         * exists: EEXIST with O_EXCL). */
        if (lk.last != LAST_NORM)
            return (flags & O_EXCL) ? -EEXIST : -EISDIR;
        if (lk.slash)
            return -EISDIR;
        if (n && (flags & O_EXCL))
            return -EEXIST;
    }
    if (n == NULL) {
        if (!(flags & O_CREAT))
            return -ENOENT;
        if (flags & O_DIRECTORY)
            return -EINVAL; /* Linux refuses O_CREAT | O_DIRECTORY */
        rc = askew__disk_inode_new(d, 0, mode, &n);
        if (rc)
            return rc;
        rc = link_in(d, inode_get(d, lk.dir), lk.name, n);
        if (rc) {
            askew__disk_maybe_free(d, n->ino);
            return rc;
        }
    } else if (n->is_dir) {
        if (acc != O_RDONLY || (flags & O_CREAT))
            return -EISDIR;
    } else if ((flags & O_DIRECTORY) || lk.slash) {
        return -ENOTDIR;
    } else if ((flags & O_TRUNC) && n->cur_size) {
        rc = askew__disk_resize(d, n, 0);
        if (rc)
            return rc;
        n->mtime_ns = d->sched->now_ns;
    }
    return handle_new(d, n->ino, flags);
}

int askew_disk_open(struct askew_disk *disk, const char *path, int flags, uint32_t mode)
{
    charge(disk);
    mix(disk, hash_str(path ? path : ""));
    mix(disk, (uint64_t)(uint32_t)flags);
    return (int)traced(disk, ASKEW_DISK_OP_OPEN, 0, do_open(disk, path, flags, mode));
}

static void fill_stat(const struct askew_disk *d, const struct inode *n,
                      struct askew_disk_stat *st)
{
    st->dev = ASKEW_DISK_DEV_BASE + (uint64_t)(uint32_t)d->node + (d->crashes << 20);
    st->ino = n->ino;
    st->mode = n->mode;
    st->is_dir = n->is_dir;
    st->mtime_ns = n->mtime_ns;
    if (n->is_dir) {
        uint32_t subdirs = 0;
        for (size_t i = 0; i < n->ents.len; i++) {
            const struct inode *c = inode_get(d, n->ents.v[i].ino);
            subdirs += c && c->is_dir;
        }
        st->size = DIR_SIZE;
        st->nlink = n->cur_links ? 2 + subdirs : 0;
    } else {
        st->size = n->cur_size;
        st->nlink = n->cur_links;
    }
    st->blocks = sectors(st->size);
}

/* The start of a call on an existing path: the latency drawn, the path
 * mixed in, the inode it names, or NULL with *rc = -errno. */
static struct inode *existing(struct askew_disk *d, const char *path, int *rc)
{
    struct lookup lk;
    struct inode *n = NULL;
    charge(d);
    mix(d, hash_str(path ? path : ""));
    *rc = askew__disk_found(d, path, &lk, &n);
    return *rc ? NULL : n;
}

int askew_disk_stat(struct askew_disk *disk, const char *path,
                    struct askew_disk_stat *st)
{
    int rc;
    const struct inode *n = existing(disk, path, &rc);
    if (n)
        fill_stat(disk, n, st);
    return (int)traced(disk, ASKEW_DISK_OP_STAT, 0, rc);
}

/* Whether directory `anc` is `ino` or one of its ancestors. */
static int is_ancestor(const struct askew_disk *d, uint64_t anc, uint64_t ino)
{
    for (;;) {
        if (ino == anc)
            return 1;
        if (ino == ASKEW_DISK_ROOT_INO)
            return 0;
        ino = inode_get(d, ino)->parent;
    }
}

static int do_rename(struct askew_disk *d, const char *from, const char *to)
{
    struct lookup a, b;
    int rc = askew__disk_walk(d, from, &a);
    if (rc)
        return rc;
    rc = askew__disk_walk(d, to, &b);
    if (rc)
        return rc;
    /* In Linux's order (do_renameat2, then vfs_rename). */
    if (a.last != LAST_NORM || b.last != LAST_NORM)
        return -EBUSY; /* ".", "..", or the mount itself */
    if (a.ino == 0)
        return -ENOENT;
    struct inode *src = inode_get(d, a.ino), *dst = inode_get(d, b.ino);
    if (!src->is_dir && (a.slash || b.slash))
        return -ENOTDIR; /* "file/", or a file renamed to "name/" */
    if (src->is_dir && is_ancestor(d, src->ino, b.dir))
        return -EINVAL; /* into itself */
    if (dst && dst->is_dir && is_ancestor(d, dst->ino, a.dir))
        return -ENOTEMPTY; /* onto its own ancestor */
    if (src == dst)
        return 0;
    if (dst) {
        if (src->is_dir && !dst->is_dir)
            return -ENOTDIR;
        if (!src->is_dir && dst->is_dir)
            return -EISDIR;
        if (dst->is_dir && dst->ents.len)
            return -ENOTEMPTY;
    }
    struct inode *sdir = inode_get(d, a.dir), *tdir = inode_get(d, b.dir);
    uint64_t old;
    rc = askew__disk_log_add(d, DIROP_RENAME, a.dir, a.name, b.dir, b.name, src->ino);
    if (rc)
        return rc;
    if (askew__disk_dmap_set(&tdir->ents, b.name, src->ino, &old)) {
        askew__disk_log_pop(d);
        return -ENOMEM;
    }
    (void)askew__disk_dmap_del(&sdir->ents, a.name);
    if (src->is_dir)
        src->parent = tdir->ino;
    sdir->mtime_ns = tdir->mtime_ns = d->sched->now_ns;
    if (dst) {
        dst->cur_links--;
        askew__disk_maybe_free(d, dst->ino);
    }
    return 0;
}

int askew_disk_rename(struct askew_disk *disk, const char *from, const char *to)
{
    charge(disk);
    mix(disk, hash_str(from ? from : ""));
    mix(disk, hash_str(to ? to : ""));
    return (int)traced(disk, ASKEW_DISK_OP_RENAME, 0, do_rename(disk, from, to));
}

static int do_remove(struct askew_disk *d, const char *path, int want_dir)
{
    struct lookup lk;
    int rc = askew__disk_walk(d, path, &lk);
    if (rc)
        return rc;
    /* In Linux's order (do_rmdir, do_unlinkat). */
    if (want_dir && lk.last != LAST_NORM)
        return lk.last == LAST_DOT      ? -EINVAL
               : lk.last == LAST_DOTDOT ? -ENOTEMPTY
                                        : -EBUSY;
    if (!want_dir && lk.last != LAST_NORM)
        return -EISDIR;
    if (lk.ino == 0)
        return -ENOENT;
    struct inode *n = inode_get(d, lk.ino), *dir = inode_get(d, lk.dir);
    if (want_dir && !n->is_dir)
        return -ENOTDIR;
    if (!want_dir && n->is_dir)
        return -EISDIR;
    if (!want_dir && lk.slash)
        return -ENOTDIR; /* "file/" */
    if (want_dir && n->ents.len)
        return -ENOTEMPTY;
    rc = askew__disk_log_add(d, DIROP_UNLINK, dir->ino, lk.name, 0, NULL, n->ino);
    if (rc)
        return rc;
    (void)askew__disk_dmap_del(&dir->ents, lk.name);
    dir->mtime_ns = d->sched->now_ns;
    n->cur_links--;
    askew__disk_maybe_free(d, n->ino);
    return 0;
}

int askew_disk_unlink(struct askew_disk *disk, const char *path)
{
    charge(disk);
    mix(disk, hash_str(path ? path : ""));
    return (int)traced(disk, ASKEW_DISK_OP_UNLINK, 0, do_remove(disk, path, 0));
}

int askew_disk_rmdir(struct askew_disk *disk, const char *path)
{
    charge(disk);
    mix(disk, hash_str(path ? path : ""));
    return (int)traced(disk, ASKEW_DISK_OP_RMDIR, 0, do_remove(disk, path, 1));
}

static int do_mkdir(struct askew_disk *d, const char *path, uint32_t mode)
{
    struct lookup lk;
    int rc = askew__disk_walk(d, path, &lk);
    if (rc)
        return rc;
    if (lk.ino || lk.last != LAST_NORM)
        return -EEXIST; /* "d/." and "d/.." name directories that exist */
    struct inode *n;
    rc = askew__disk_inode_new(d, 1, mode, &n);
    if (rc)
        return rc;
    rc = link_in(d, inode_get(d, lk.dir), lk.name, n);
    if (rc)
        askew__disk_maybe_free(d, n->ino);
    return rc;
}

int askew_disk_mkdir(struct askew_disk *disk, const char *path, uint32_t mode)
{
    charge(disk);
    mix(disk, hash_str(path ? path : ""));
    return (int)traced(disk, ASKEW_DISK_OP_MKDIR, 0, do_mkdir(disk, path, mode));
}

int askew_disk_truncate(struct askew_disk *disk, const char *path, int64_t length)
{
    int rc;
    struct inode *n = existing(disk, path, &rc);
    mix(disk, (uint64_t)length);
    if (n)
        rc = askew__disk_truncate_inode(disk, n, length);
    return (int)traced(disk, ASKEW_DISK_OP_TRUNCATE, 0, rc);
}

int askew_disk_list(struct askew_disk *disk, const char *path, askew_disk_dirent_fn fn,
                    void *ctx)
{
    int rc;
    const struct inode *dir = existing(disk, path, &rc);
    if (dir == NULL)
        return (int)traced(disk, ASKEW_DISK_OP_LIST, 0, rc);
    if (!dir->is_dir)
        return (int)traced(disk, ASKEW_DISK_OP_LIST, 0, -ENOTDIR);
    traced(disk, ASKEW_DISK_OP_LIST, 0, (int64_t)dir->ents.len);
    for (size_t i = 0; i < dir->ents.len; i++) {
        const struct inode *c = inode_get(disk, dir->ents.v[i].ino);
        rc = fn(ctx, dir->ents.v[i].name, c->ino, c->is_dir);
        if (rc)
            return rc;
    }
    return 0;
}

/* ---- handles ----------------------------------------------------------------------
 */

static struct handle *handle_get(struct askew_disk *d, int fh)
{
    if (fh < 0 || (size_t)fh >= d->handles_len || !d->handles[fh].used)
        return NULL;
    return &d->handles[fh];
}

int askew_disk_flags(const struct askew_disk *disk, int fh)
{
    if (fh < 0 || (size_t)fh >= disk->handles_len || !disk->handles[fh].used)
        return -EBADF;
    return disk->handles[fh].flags;
}

int askew_disk_close(struct askew_disk *disk, int fh)
{
    charge(disk);
    struct handle *h = handle_get(disk, fh);
    if (h == NULL)
        return (int)traced(disk, ASKEW_DISK_OP_CLOSE, 0, -EBADF);
    locks_drop(disk, fh);
    h->used = 0;
    disk->handles_open--;
    struct inode *n = inode_get(disk, h->ino);
    n->opens--;
    askew__disk_maybe_free(disk, n->ino);
    return (int)traced(disk, ASKEW_DISK_OP_CLOSE, (uint64_t)fh, 0);
}

int64_t askew_disk_pread(struct askew_disk *disk, int fh, void *buf, size_t len,
                         int64_t off)
{
    charge(disk);
    mix(disk, (uint64_t)off);
    return traced(disk, ASKEW_DISK_OP_READ, (uint64_t)fh,
                  askew__disk_read_at(disk, handle_get(disk, fh), buf, len, off));
}

int64_t askew_disk_pwrite(struct askew_disk *disk, int fh, const void *buf, size_t len,
                          int64_t off)
{
    charge(disk);
    mix(disk, (uint64_t)off);
    return traced(disk, ASKEW_DISK_OP_WRITE, (uint64_t)fh,
                  askew__disk_write_at(disk, handle_get(disk, fh), buf, len, off));
}

int64_t askew_disk_read(struct askew_disk *disk, int fh, void *buf, size_t len)
{
    struct handle *h = handle_get(disk, fh);
    charge(disk);
    const int64_t got = askew__disk_read_at(disk, h, buf, len, h ? h->off : 0);
    if (got > 0)
        h->off += got;
    return traced(disk, ASKEW_DISK_OP_READ, (uint64_t)fh, got);
}

int64_t askew_disk_write(struct askew_disk *disk, int fh, const void *buf, size_t len)
{
    struct handle *h = handle_get(disk, fh);
    charge(disk);
    const int64_t put = askew__disk_write_at(disk, h, buf, len, h ? h->off : 0);
    if (put >= 0) {
        /* An O_APPEND write leaves the offset at the new end. */
        if (h->flags & O_APPEND)
            h->off = (int64_t)inode_get(disk, h->ino)->cur_size;
        else
            h->off += put;
    }
    return traced(disk, ASKEW_DISK_OP_WRITE, (uint64_t)fh, put);
}

int64_t askew_disk_lseek(struct askew_disk *disk, int fh, int64_t off, int whence)
{
    struct handle *h = handle_get(disk, fh);
    int64_t rc;
    charge(disk);
    if (h == NULL) {
        rc = -EBADF;
    } else {
        int64_t base;
        switch (whence) {
        case SEEK_SET:
            base = 0;
            break;
        case SEEK_CUR:
            base = h->off;
            break;
        case SEEK_END:
            base = (int64_t)inode_get(disk, h->ino)->cur_size;
            break;
        default:
            base = -1;
        }
        if (base < 0 || (off < 0 && base + off < 0) ||
            (off > 0 && base > INT64_MAX - off))
            rc = -EINVAL;
        else
            rc = h->off = base + off;
    }
    return traced(disk, ASKEW_DISK_OP_SEEK, (uint64_t)fh, rc);
}

static int do_sync(struct askew_disk *d, int fh, int data_only)
{
    struct handle *h = handle_get(d, fh);
    if (h == NULL)
        return -EBADF;
    if (askew_rng_chance_ppm(&d->rng, d->faults.eio_fsync_ppm))
        return -EIO; /* nothing becomes durable; the page cache is kept */
    struct inode *n = inode_get(d, h->ino);
    if (n->is_dir)
        return askew__disk_dir_sync(d, n);
    const int rc = askew__disk_file_sync(d, n);
    if (rc == 0 && !data_only)
        n->dur_mtime_ns = n->mtime_ns;
    return rc;
}

int askew_disk_fsync(struct askew_disk *disk, int fh)
{
    charge(disk);
    return (int)traced(disk, ASKEW_DISK_OP_FSYNC, (uint64_t)fh, do_sync(disk, fh, 0));
}

int askew_disk_fdatasync(struct askew_disk *disk, int fh)
{
    charge(disk);
    return (int)traced(disk, ASKEW_DISK_OP_FDATASYNC, (uint64_t)fh,
                       do_sync(disk, fh, 1));
}

int askew_disk_ftruncate(struct askew_disk *disk, int fh, int64_t length)
{
    struct handle *h = handle_get(disk, fh);
    int rc;
    charge(disk);
    mix(disk, (uint64_t)length);
    if (h == NULL)
        rc = -EBADF;
    else if ((h->flags & O_ACCMODE) == O_RDONLY)
        rc = inode_get(disk, h->ino)->is_dir ? -EISDIR : -EINVAL;
    else
        rc = askew__disk_truncate_inode(disk, inode_get(disk, h->ino), length);
    return (int)traced(disk, ASKEW_DISK_OP_TRUNCATE, (uint64_t)fh, rc);
}

int askew_disk_setattr(struct askew_disk *disk, const char *path, int fh,
                       const struct askew_disk_attr *attr)
{
    int rc = 0;
    struct inode *n;
    if (path != NULL) {
        n = existing(disk, path, &rc);
    } else {
        charge(disk);
        const struct handle *h = handle_get(disk, fh);
        n = h ? inode_get(disk, h->ino) : NULL;
        rc = h ? 0 : -EBADF;
    }
    mix(disk, attr->set_mode ? attr->mode : UINT64_MAX);
    mix(disk, attr->set_mtime ? (uint64_t)attr->mtime_ns : UINT64_MAX);
    if (n != NULL) {
        if (attr->set_mode)
            n->mode = (n->mode & ~07777u) | (attr->mode & 07777u);
        if (attr->set_mtime)
            n->mtime_ns = attr->mtime_ns;
    }
    return (int)traced(disk, ASKEW_DISK_OP_SETATTR, path ? 0 : (uint64_t)fh, rc);
}

int askew_disk_fstat(struct askew_disk *disk, int fh, struct askew_disk_stat *st)
{
    struct handle *h = handle_get(disk, fh);
    charge(disk);
    if (h)
        fill_stat(disk, inode_get(disk, h->ino), st);
    return (int)traced(disk, ASKEW_DISK_OP_STAT, (uint64_t)fh, h ? 0 : -EBADF);
}
