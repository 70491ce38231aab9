/* SPDX-License-Identifier: Apache-2.0 */
/* The simulated disk's private structures (see disk.h), shared by the
 * files of the disk and by their Check suites, never by anything else. A
 * file keeps two copies of its bytes: `dur`, what survives any crash, and
 * `cur`, what reads see, with a mark per 512-byte sector that differs
 * between them; fsync copies the marked sectors over. A directory keeps two
 * sorted entry lists, current and durable, and the disk one log of the
 * directory operations not yet durable everywhere they touch; fsync of a
 * directory snapshots its entries. Inode numbers are never reused, so they
 * are stable for a run. The units: disk_tree.c (entry lists, inodes, the
 * directory log, path lookup), disk_data.c (a file's bytes, its dirty
 * sectors and their sync), disk_crash.c (the crash), disk.c (the system
 * calls, on top of the three), disk_locks.c (byte-range locks, alone).
 * Pure C; never includes Python.h. */
#ifndef ASKEW_DISK_IMPL_H
#define ASKEW_DISK_IMPL_H

#include "disk.h"

/* Writes past this offset are EFBIG: the buffers are flat arrays. */
#define FILE_SIZE_MAX ((int64_t)1 << 40)
#define DIR_SIZE      4096

enum dirop_kind {
    DIROP_LINK = ASKEW_DISK_DIROP_LINK,
    DIROP_UNLINK = ASKEW_DISK_DIROP_UNLINK,
    DIROP_RENAME = ASKEW_DISK_DIROP_RENAME
};

struct dent {
    char *name;
    uint64_t ino;
};

struct dmap {
    struct dent *v;
    size_t len;
    size_t cap;
};

struct inode {
    uint64_t ino;
    int is_dir;
    uint32_t mode;
    int64_t mtime_ns;
    int64_t dur_mtime_ns;
    uint32_t cur_links; /* entries naming it in the current tree */
    uint32_t dur_links; /* entries naming it in durable snapshots */
    uint32_t opens;
    uint32_t log_refs; /* unsynced directory operations naming it */
    /* a file */
    unsigned char *cur;
    size_t cur_size;
    size_t cur_cap;
    unsigned char *dur;
    size_t dur_size;
    size_t dur_cap;
    uint8_t *mark; /* per sector of cur: 1 when dirty */
    size_t mark_cap;
    uint64_t *dirty; /* the marked sectors, in the order first marked */
    size_t dirty_len;
    size_t dirty_cap;
    /* a directory */
    struct dmap ents;
    struct dmap dur_ents;
    uint64_t parent;
    uint64_t synced_seq; /* the log's seq at its last fsync */
};

struct dirop {
    uint64_t seq;
    uint32_t kind;
    uint64_t dir1;
    char *name1;
    uint64_t dir2; /* a rename's target directory */
    char *name2;
    uint64_t ino;
};

struct handle {
    int used;
    int flags;
    uint64_t ino;
    int64_t off;
};

struct askew_disk {
    struct askew_sched *sched; /* borrowed: the clock and the trace */
    int32_t node;
    uint64_t crashes; /* askew_disk_crash calls so far */
    struct askew_rng rng;
    struct askew_disk_faults faults;
    int64_t latency_ns;
    uint64_t bytes;
    uint64_t files;
    struct inode **inodes; /* by inode number; NULL once freed */
    size_t inodes_len;
    size_t inodes_cap;
    struct handle *handles;
    size_t handles_len;
    size_t handles_cap;
    size_t handles_open;
    struct dirop *log;
    size_t log_len;
    size_t log_cap;
    uint64_t log_seq;
};

/* What a path's last component is, as the kernel's namei sorts it: a name,
 * ".", "..", or none (the mount itself). The calls answer by it: rmdir of
 * "d/." is EINVAL, of "d/.." ENOTEMPTY, mkdir of either EEXIST. */
enum last_kind { LAST_NORM = 0, LAST_DOT = 1, LAST_DOTDOT = 2, LAST_ROOT = 3 };

/* A path resolved in the current tree: the directory `dir` holding `name`
 * and the inode it names (0 when absent), or, for the mount itself and paths
 * ending in "." or "..", that directory alone (dir 0, empty name). `slash`:
 * the last component had a '/' after it ("f/"), so it must be a directory. */
struct lookup {
    uint64_t dir;
    uint64_t ino;
    int last; /* enum last_kind */
    int slash;
    char name[ASKEW_DISK_NAME_MAX + 1];
};

/* ---- trace and latency (every unit) ------------------------------------- */

static inline int64_t traced(struct askew_disk *d, uint32_t op, uint64_t detail,
                             int64_t result)
{
    askew_trace_record(&d->sched->trace, d->sched->now_ns, ASKEW_EV_DISK, d->node,
                       op | (detail << 8), (uint64_t)result);
    return result;
}

static inline void mix(struct askew_disk *d, uint64_t v)
{
    askew_trace_mix(&d->sched->trace, v);
}

/* The latency fault, drawn first by every operation. */
static inline void charge(struct askew_disk *d)
{
    const struct askew_disk_faults *f = &d->faults;
    if (f->latency_ns_max > 0)
        d->latency_ns += askew_rng_range(&d->rng, f->latency_ns_min, f->latency_ns_max);
}

/* The inode numbered ino, or NULL (never made, or freed). */
static inline struct inode *inode_get(const struct askew_disk *d, uint64_t ino)
{
    return ino < d->inodes_len ? d->inodes[ino] : NULL;
}

/* The 512-byte sectors size bytes span. */
static inline uint64_t sectors(size_t size)
{
    return (size + ASKEW_DISK_SECTOR - 1) / ASKEW_DISK_SECTOR;
}

/* A handle closes: the locks it holds go. */
static inline void locks_drop(struct askew_disk *d, int fh)
{
    /* The byte-range locks' place (disk.h): nothing to drop until then. */
    (void)d;
    (void)fh;
}

/* ---- disk_tree.c -------------------------------------------------------- */

/* A directory's entries, sorted by name (bytewise). get: the inode `name`
 * names, 0 if none; set: name -> ino, the inode it replaced (0 if none) in
 * *old, -ENOMEM; del: remove name, the inode it named (0 if none); copy:
 * dst becomes a copy of src, -ENOMEM. */
uint64_t askew__disk_dmap_get(const struct dmap *m, const char *name);
int askew__disk_dmap_set(struct dmap *m, const char *name, uint64_t ino, uint64_t *old);
uint64_t askew__disk_dmap_del(struct dmap *m, const char *name);
int askew__disk_dmap_copy(struct dmap *dst, const struct dmap *src);
void askew__disk_dmap_free(struct dmap *m);

/* A new inode (a directory when is_dir), mtime now: -ENOSPC past
 * ASKEW_DISK_FILES_MAX, -ENOMEM. */
int askew__disk_inode_new(struct askew_disk *d, int is_dir, uint32_t mode,
                          struct inode **out);
/* Free an inode nothing names and no handle or logged operation holds (the
 * root never goes). */
void askew__disk_maybe_free(struct askew_disk *d, uint64_t ino);
/* Free an inode's memory, leaving the links of what it names alone. */
void askew__disk_inode_destroy(struct askew_disk *d, struct inode *n);

/* Log a directory operation not yet durable: -ENOSPC past
 * ASKEW_DISK_DIROPS_MAX, -ENOMEM. drop: forget the oldest k (with `gc`, an
 * inode only they held goes); pop: take back the one just added. */
int askew__disk_log_add(struct askew_disk *d, uint32_t kind, uint64_t dir1,
                        const char *name1, uint64_t dir2, const char *name2,
                        uint64_t ino);
void askew__disk_log_drop(struct askew_disk *d, size_t k, int gc);
void askew__disk_log_pop(struct askew_disk *d);
/* fsync of a directory: its entries become its durable snapshot, and the
 * log drops what is durable everywhere it touches. -ENOMEM. */
int askew__disk_dir_sync(struct askew_disk *d, struct inode *dir);

/* Resolve path in the current tree component by component, as the kernel
 * does (see struct lookup): every component but the last must be a
 * directory that exists, so "f/.." is -ENOTDIR and "no/.." -ENOENT; the
 * last may be absent or, with a '/' after it, anything: each call decides
 * (a lookup wants a directory there, open(O_CREAT) says EISDIR). -ENOENT
 * (an empty path, a missing directory on the way), -ENOTDIR, -ENAMETOOLONG.
 * ".." at the root stays there: askew_disk_locate hands the calls no path
 * that climbs out of the mount. */
int askew__disk_walk(const struct askew_disk *d, const char *path, struct lookup *lk);
/* The inode an existing path names, for a call that needs one: -ENOENT,
 * -ENOTDIR ("file/"), or a walk's error. */
int askew__disk_found(const struct askew_disk *d, const char *path, struct lookup *lk,
                      struct inode **out);

/* ---- disk_data.c -------------------------------------------------------- */

/* Set a file's size, zero-filling growth, within the capacity: -ENOSPC,
 * -ENOMEM. */
int askew__disk_resize(struct askew_disk *d, struct inode *n, size_t size);
/* Make the file's bytes and size durable: the marked sectors are copied.
 * -ENOMEM. */
int askew__disk_file_sync(struct askew_disk *d, struct inode *n);
/* truncate(2) of an inode: -EISDIR, -EINVAL, -EFBIG, or as resize. */
int askew__disk_truncate_inode(struct askew_disk *d, struct inode *n, int64_t length);
/* pread(2)/pwrite(2) through handle h (NULL: a bad one) at off, with the
 * read, write and bit-rot faults drawn: the byte count or -errno. */
int64_t askew__disk_read_at(struct askew_disk *d, struct handle *h, void *buf,
                            size_t len, int64_t off);
int64_t askew__disk_write_at(struct askew_disk *d, struct handle *h, const void *buf,
                             size_t len, int64_t off);

#endif
