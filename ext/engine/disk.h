/* SPDX-License-Identifier: Apache-2.0 */
/* The simulated disk: one per node, a tree of files and directories under the
 * node's mount, each file with durable content and a page cache of unsynced
 * writes, each directory with durable and pending entries, and the crash that
 * keeps what is durable plus a seeded subset of the rest (docs/disks.md).
 * Every call returns >= 0 or -errno exactly as the Linux system call of the
 * same name would; paths are relative to the mount ("a/b", a leading '/' is
 * the mount itself, ".." never climbs above it; askew_disk_locate finds a
 * path's part on the disk). Pure C: never includes
 * Python.h, draws only from the disk's own DISK stream, mixes every operation
 * and crash outcome into the scheduler's trace. The signatures here are
 * stable: the LD_PRELOAD path (item 4 of issue 15) builds on them. */
#ifndef ASKEW_DISK_H
#define ASKEW_DISK_H

#include <stddef.h>
#include <stdint.h>

#include "engine.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a crash can tear: a write is kept or lost per 512-byte sector. */
#define ASKEW_DISK_SECTOR 512
/* The memory bound: the bytes of file content a disk may hold (its durable
 * copy and its page cache counted apart) before a write or a truncate that
 * needs more fails with -ENOSPC. Set per disk with askew_disk_set_faults. */
#define ASKEW_DISK_CAPACITY_DEFAULT (64ull << 20)
/* Files and directories alive on one disk, and directory operations not
 * yet durable, at once: ENOSPC past either (the rest of the memory bound). */
#define ASKEW_DISK_FILES_MAX  (1u << 20)
#define ASKEW_DISK_DIROPS_MAX (1u << 20)
/* Open file handles of one disk at once (EMFILE past it). */
#define ASKEW_DISK_HANDLES_MAX 65536
/* A path component's longest name (ENAMETOOLONG), as on ext4. */
#define ASKEW_DISK_NAME_MAX 255
/* The root directory's inode number. */
#define ASKEW_DISK_ROOT_INO 2
/* A disk's device number (st_dev), C's stat and Python's alike: base + node
 * + crashes << 20. A crash makes it a new device, so that what a dead
 * incarnation's C code keeps in the process by (device, inode) (sqlite's
 * table of inodes and their locks) never meets the next incarnation's. */
#define ASKEW_DISK_DEV_BASE 0xa5000
/* The longest path askew_disk_locate takes, with its NUL (Linux's PATH_MAX:
 * ENAMETOOLONG past it). */
#define ASKEW_DISK_PATH_MAX 4096

/* What a disk operation is, fed to the trace as an event's `a` low byte.
 * Part of the determinism contract: never renumber. */
enum askew_disk_op {
    ASKEW_DISK_OP_OPEN = 1,
    ASKEW_DISK_OP_CLOSE = 2,
    ASKEW_DISK_OP_READ = 3,
    ASKEW_DISK_OP_WRITE = 4,
    ASKEW_DISK_OP_SEEK = 5,
    ASKEW_DISK_OP_FSYNC = 6,
    ASKEW_DISK_OP_FDATASYNC = 7,
    ASKEW_DISK_OP_TRUNCATE = 8,
    ASKEW_DISK_OP_STAT = 9,
    ASKEW_DISK_OP_RENAME = 10,
    ASKEW_DISK_OP_UNLINK = 11,
    ASKEW_DISK_OP_MKDIR = 12,
    ASKEW_DISK_OP_RMDIR = 13,
    ASKEW_DISK_OP_LIST = 14,
    ASKEW_DISK_OP_CRASH = 15,
    ASKEW_DISK_OP_LOCK = 16, /* reserved for the byte-range locks below */
    ASKEW_DISK_OP_SETATTR = 17
};

/* stat(2), the fields the model has. mode is S_IFREG or S_IFDIR | the
 * permission bits given at creation (never enforced). mtime is virtual: the
 * scheduler's now_ns of the last change to the content or the entries. */
struct askew_disk_stat {
    uint64_t dev; /* see ASKEW_DISK_DEV_BASE */
    uint64_t ino;
    uint64_t size;   /* a directory: 4096, as ext4 shows a small one */
    uint64_t blocks; /* 512-byte blocks: ceil(size / 512) */
    uint32_t mode;
    uint32_t nlink; /* 1 for a file; 2 + subdirectories for a directory */
    int is_dir;
    int64_t mtime_ns;
};

/* Faults and the bound; all zero but the capacity by default (no faults).
 * Each *_ppm is a probability in millionths (<= 1e6) drawn from the DISK
 * stream per call of that kind; latency is uniform in [min, max] ns per
 * operation, handed back by askew_disk_latency_ns (the binding charges it
 * to the calling node); bit rot flips one bit of the bytes a read returns
 * (never the stored copy). */
struct askew_disk_faults {
    uint32_t eio_read_ppm;
    uint32_t eio_write_ppm;
    uint32_t eio_fsync_ppm;
    uint32_t bitrot_ppm;
    int64_t latency_ns_min;
    int64_t latency_ns_max;
    uint64_t capacity_bytes; /* 0: ASKEW_DISK_CAPACITY_DEFAULT */
};

/* What a crash did, for the world log. */
struct askew_disk_crash_result {
    uint64_t sectors_kept; /* unsynced dirty sectors that survived */
    uint64_t sectors_lost;
    uint64_t sizes_kept; /* files whose unsynced size change survived */
    uint64_t sizes_lost;
    uint64_t dirops_kept; /* unsynced directory operations replayed */
    uint64_t dirops_lost;
    uint64_t handles_closed;
};

/* Counters, for tests and the bench. */
struct askew_disk_usage {
    uint64_t bytes;   /* content held: durable + cache, against capacity */
    uint64_t files;   /* inodes alive, directories included */
    uint64_t handles; /* open */
    uint64_t dirty;   /* unsynced dirty sectors */
    uint64_t dirops;  /* unsynced directory operations */
};

struct askew_disk;

/* A new empty disk (its root directory alone, durable) of node `node` on
 * `sched` (borrowed, must outlive it: the clock for mtimes and the trace).
 * Its DISK stream is askew_seed_stream(askew_seed_stream(seed,
 * ASKEW_STREAM_DISK), node). -ENOMEM. */
int askew_disk_new(struct askew_disk **out, struct askew_sched *sched, int32_t node,
                   uint64_t seed);
void askew_disk_free(struct askew_disk *disk);

/* Replace the faults and the capacity. -EINVAL for a ppm > 1e6 or a latency
 * range with min < 0 or max < min; nothing changes then. A capacity below
 * what is held already only fails later writes. */
int askew_disk_set_faults(struct askew_disk *disk, const struct askew_disk_faults *f);
void askew_disk_get_faults(const struct askew_disk *disk, struct askew_disk_faults *f);
/* The latency the last operation drew (0 without a latency fault), taken:
 * a second call returns 0. */
int64_t askew_disk_latency_ns(struct askew_disk *disk);
void askew_disk_usage(const struct askew_disk *disk, struct askew_disk_usage *out);

/* ---- the namespace, by path -------------------------------------------- */

/* Where an absolute `path` lands for this disk mounted at `mount` (absolute
 * and normalised: no "//", ".", ".." or trailing '/'), resolved component by
 * component as the kernel does; the real file system's part is folded
 * lexically (askew does not see its symbolic links), so "//data/f" and
 * "/x/../data/f" reach a mount at /data. 1 with *rel the rest of path after
 * the mount, untouched (the calls below resolve it: "f/" or "d/." keep
 * their meaning), "/" for the mount itself; 0 when the path is not on the
 * disk and never passed it; 2 when it entered the disk and left it by ".."
 * again: `real` (cap bytes; may be NULL) is then the real path it names,
 * folded (the
 * components it passed on the disk must exist as directories, else their
 * -ENOENT or -ENOTDIR). -ENAMETOOLONG, -EINVAL for a relative path or
 * mount. The one resolver of the Python file calls (ext/disk_type.c) and C
 * code's (ext/preload_disk.c). Draws nothing, traces nothing. */
int askew_disk_locate(const struct askew_disk *disk, const char *mount,
                      const char *path, const char **rel, char *real, size_t cap);

/* open(2): flags are Linux's O_RDONLY/O_WRONLY/O_RDWR, O_CREAT, O_EXCL,
 * O_TRUNC, O_APPEND, O_DIRECTORY (others are ignored); mode is kept in
 * st_mode. Returns a handle >= 0 (the lowest free one) or -errno: ENOENT,
 * EEXIST, EISDIR (a directory opened for writing), ENOTDIR, ENAMETOOLONG,
 * EMFILE, ENOSPC. A directory opens read-only (for fsync, fstat). */
int askew_disk_open(struct askew_disk *disk, const char *path, int flags,
                    uint32_t mode);
int askew_disk_stat(struct askew_disk *disk, const char *path,
                    struct askew_disk_stat *st);
/* rename(2): replaces a file target, or an empty directory target with a
 * directory; EISDIR, ENOTDIR, ENOTEMPTY, EINVAL (a directory into itself). */
int askew_disk_rename(struct askew_disk *disk, const char *from, const char *to);
int askew_disk_unlink(struct askew_disk *disk, const char *path);
int askew_disk_mkdir(struct askew_disk *disk, const char *path, uint32_t mode);
int askew_disk_rmdir(struct askew_disk *disk, const char *path);
/* truncate(2) by path. */
int askew_disk_truncate(struct askew_disk *disk, const char *path, int64_t length);
/* The entries of a directory, sorted by name (bytewise), "." and ".."
 * left out: `fn` is called once per entry and a nonzero return stops the
 * listing and is returned. ENOENT, ENOTDIR. */
typedef int (*askew_disk_dirent_fn)(void *ctx, const char *name, uint64_t ino,
                                    int is_dir);
int askew_disk_list(struct askew_disk *disk, const char *path, askew_disk_dirent_fn fn,
                    void *ctx);

/* ---- open handles ------------------------------------------------------- */

/* The current path from the disk's root ("/", "/a/b") of the directory open
 * as handle fh, for the *at calls and os.scandir(fd): -EBADF, -ENOTDIR (a
 * file's handle, as openat(2) with one), -ENOENT (removed since),
 * -ENAMETOOLONG. Draws nothing, traces nothing. */
int askew_disk_handle_path(const struct askew_disk *disk, int fh, char *out,
                           size_t cap);

/* chmod(2) and utime(2) by path, or by handle (path NULL): set the
 * permission bits (mode & 07777, kept and never enforced) when set_mode, the
 * mtime (virtual, as the disk keeps it) when set_mtime. The mtime is
 * durable after the next fsync, as a write's; the mode at once. ENOENT,
 * ENOTDIR, EBADF. */
struct askew_disk_attr {
    int set_mode;
    uint32_t mode;
    int set_mtime;
    int64_t mtime_ns;
};
int askew_disk_setattr(struct askew_disk *disk, const char *path, int fh,
                       const struct askew_disk_attr *attr);

int askew_disk_close(struct askew_disk *disk, int fh);
/* read(2)/write(2) at the handle's offset, which they advance; O_APPEND
 * writes go to the end. Return the byte count or -errno: EBADF (closed, or
 * the wrong access mode), EISDIR (read of a directory), EIO (fault),
 * ENOSPC, EFBIG. */
int64_t askew_disk_read(struct askew_disk *disk, int fh, void *buf, size_t len);
int64_t askew_disk_write(struct askew_disk *disk, int fh, const void *buf, size_t len);
/* pread(2)/pwrite(2): the offset is left alone (pwrite with O_APPEND
 * appends, as Linux does); EINVAL for off < 0. */
int64_t askew_disk_pread(struct askew_disk *disk, int fh, void *buf, size_t len,
                         int64_t off);
int64_t askew_disk_pwrite(struct askew_disk *disk, int fh, const void *buf, size_t len,
                          int64_t off);
/* lseek(2): whence SEEK_SET/SEEK_CUR/SEEK_END; the new offset or EINVAL. */
int64_t askew_disk_lseek(struct askew_disk *disk, int fh, int64_t off, int whence);
/* fsync(2): the file's content, size and mtime become durable; of a
 * directory, its entries do (every create, unlink, rename in it so far).
 * Allowed on a read-only handle, as on Linux. fdatasync(2): the content and
 * the size (which reading the data needs, as Linux keeps it too) become
 * durable, the mtime does not; of a directory, as fsync. */
int askew_disk_fsync(struct askew_disk *disk, int fh);
int askew_disk_fdatasync(struct askew_disk *disk, int fh);
/* ftruncate(2): EINVAL on a read-only handle (as Linux), EISDIR. */
int askew_disk_ftruncate(struct askew_disk *disk, int fh, int64_t length);
int askew_disk_fstat(struct askew_disk *disk, int fh, struct askew_disk_stat *st);
/* The handle's open flags (as given to open), or -EBADF. */
int askew_disk_flags(const struct askew_disk *disk, int fh);

/* ---- the crash ---------------------------------------------------------- */

/* The node crashed: every handle closes and the disk becomes what survives.
 * Draws from the DISK stream, in this order:
 *   1. the directory operations: k uniform in [0, n] for the n unsynced
 *      ones, and the first k (in the order they were made) are replayed
 *      onto the durable entries: a prefix, never a hole;
 *   2. per file with unsynced changes, in inode order: one coin for its size
 *      when it differs from the durable one (the current size kept, or the
 *      durable one), then one coin per dirty
 *      sector in ascending order (kept with probability 1/2), so a write
 *      can be torn and a later write can survive an earlier one.
 * Files no entry reaches any more are freed. The outcome is traced (one
 * event) with every count mixed in. out may be NULL. */
int askew_disk_crash(struct askew_disk *disk, struct askew_disk_crash_result *out);
/* How many times the disk crashed: what the node's process held before the
 * last one (its handles, a stat's device, below) belongs to a dead
 * incarnation. */
uint64_t askew_disk_crashes(const struct askew_disk *disk);

/* The unsynced directory operations, oldest first: what a crash keeps a
 * prefix of, so that its report can name what it lost. kind is
 * ASKEW_DISK_DIROP_LINK (a create, mkdir or link), _UNLINK (unlink, rmdir)
 * or _RENAME (never renumber); is_dir whether its inode is a directory;
 * dir_synced whether its directory (a rename's target's) was ever fsynced.
 * path and path2 (a rename's target) get the entry's current path from the
 * disk's root, as far as it still has one (-ENOENT: a directory on it was
 * removed since; -ENAMETOOLONG), each of cap bytes. -ERANGE past the end.
 * Draws nothing, traces nothing. */
enum {
    ASKEW_DISK_DIROP_LINK = 1,
    ASKEW_DISK_DIROP_UNLINK = 2,
    ASKEW_DISK_DIROP_RENAME = 3
};
struct askew_disk_dirop {
    int kind;
    int is_dir;
    int dir_synced;
};
size_t askew_disk_dirops(const struct askew_disk *disk);
int askew_disk_dirop_get(const struct askew_disk *disk, size_t i,
                         struct askew_disk_dirop *out, char *path, char *path2,
                         size_t cap);

/* ---- byte-range locks (fcntl F_SETLK/F_SETLKW/F_GETLK, OFD locks) --------
 * (The LD_PRELOAD path's block: issue 15 item 4.) POSIX record locks as
 * sqlite takes them, in a table the caller owns (one per disk), keyed by
 * inode and an opaque owner: the binding uses the node's incarnation token
 * for process-owned locks and the open file for OFD ones. A lock of one
 * owner never conflicts with its own; setting a range replaces the owner's
 * locks on it (splitting them), F_UNLCK removes them. Ranges are [start,
 * end), end ASKEW_DISK_LOCK_EOF for "to the end of the file, however it
 * grows". Types are Linux's F_RDLCK, F_WRLCK, F_UNLCK. Nothing here draws
 * or blocks: a lock that would wait is the caller's to refuse. */
#define ASKEW_DISK_LOCK_EOF INT64_MAX

struct askew_disk_lock {
    uint64_t ino;
    uint64_t owner;
    int64_t start;
    int64_t end;
    int type;
};

struct askew_disk_locks {
    struct askew_disk_lock *v;
    size_t len;
    size_t cap;
};

void askew_disk_locks_free(struct askew_disk_locks *t);
/* F_GETLK: 1 and the first conflicting lock of another owner in *out
 * (out may be NULL), or 0 when `type` could be set. -EINVAL for a bad type
 * or an empty or negative range. */
int askew_disk_lock_test(const struct askew_disk_locks *t, uint64_t ino, uint64_t owner,
                         int type, int64_t start, int64_t end,
                         struct askew_disk_lock *out);
/* F_SETLK: 0, -EAGAIN when another owner holds a conflicting lock (the
 * table is unchanged), -EINVAL, -ENOMEM (unchanged). */
int askew_disk_lock_set(struct askew_disk_locks *t, uint64_t ino, uint64_t owner,
                        int type, int64_t start, int64_t end);
/* Remove the locks of `owner` on `ino`; ino 0 is every inode, owner
 * ASKEW_DISK_LOCK_ANY every owner (close(2) drops a process's locks on the
 * file; a crash drops them all). */
#define ASKEW_DISK_LOCK_ANY UINT64_MAX
void askew_disk_locks_drop(struct askew_disk_locks *t, uint64_t ino, uint64_t owner);

#ifdef __cplusplus
}
#endif
#endif
