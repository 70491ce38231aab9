/* SPDX-License-Identifier: Apache-2.0 */
/* C code on a node's simulated disk: the path calls (stat, access, unlink,
 * rename, mkdir, rmdir, truncate, readlink, creat; open lives in
 * hook_open.c) ask the extension's disk hook whether the path is on the
 * running node's disk, and the fd calls (close, lseek, pread, pwrite, fsync,
 * fdatasync, ftruncate, fstat, fcntl, fchmod, fchown; read and write live in
 * hook_sockio.c) serve the simulated fds the hook handed out. A simulated fd
 * is >= ASKEW_DISK_FD_BASE, so a real fd costs one comparison. The calls a
 * disk cannot serve on a simulated fd (mmap, dup, flock, fallocate) are
 * refused and recorded; any call not interposed at all fails in the kernel
 * with EBADF, never on a real file. Outside a run nothing here acts: paths
 * go to libc and a simulated fd left from a run is EBADF. */
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "hook_disk.h"
#include "internal.h"

#define RET __builtin_return_address(0)

/* Every interposer's tail, for a real fd or a path on no disk: libc's call,
 * else (while dlsym is re-entered and REAL() is still NULL) the system call
 * nr with its arguments, its result in the interposer's return type. */
#define FORWARD(name, call_real, nr, a0, a1, a2, a3, a4, a5)                           \
    do {                                                                               \
        __typeof__(&name) real = REAL(name);                                           \
        if (ASKEW_LIKELY(real != NULL))                                                \
            return call_real;                                                          \
        return (__typeof__(call_real))askew__raw_syscall((nr), (long)(a0), (long)(a1), \
                                                         (long)(a2), (long)(a3),       \
                                                         (long)(a4), (long)(a5));      \
    } while (0)

/* The hook's result as libc returns it: -1 and errno for a negative one. */
static long as_libc(int64_t r)
{
    if (r < 0) {
        errno = (int)-r;
        return -1;
    }
    return (long)r;
}

/* Only an absolute path, one relative to the working directory, or one
 * relative to a simulated directory can be on a simulated disk; a path
 * relative to a real directory fd is that directory's. */
static int may_be_ours(int dirfd, const char *path)
{
    return path != NULL &&
           (path[0] == '/' || dirfd == AT_FDCWD || askew__disk_fd(dirfd));
}

int askew__disk_path(const struct askew_preload_hooks *h, struct askew_disk_call *call,
                     const char *name, void *ret, long *rc)
{
    if (!may_be_ours(call->fd, call->path))
        return 0;
    int64_t r = askew__hook_disk(h, call);
    if (r == ASKEW_DISK_PASS)
        return 0;
    if (r == ASKEW_DISK_REFUSE)
        *rc = askew__refuse_errno(h, ASKEW_VIOLATION_DISK, name, call->op, 0, ret,
                                  EACCES);
    else
        *rc = as_libc(r);
    return 1;
}

long askew__disk_fdcall(struct askew_disk_call *call, const char *name, void *ret)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (h == NULL) {
        errno = EBADF; /* a simulated fd outside its run */
        return -1;
    }
    int64_t r = askew__hook_disk(h, call);
    if (r == ASKEW_DISK_PASS) {
        errno = EBADF; /* an extension without a disk hook handed out none */
        return -1;
    }
    if (r == ASKEW_DISK_REFUSE)
        return askew__refuse_errno(h, ASKEW_VIOLATION_DISK, name, call->fd, call->flags,
                                   ret, EINVAL);
    return as_libc(r);
}

/* A call the disk cannot serve on a simulated fd: recorded inside a run
 * (the run fails naming it), EBADF-like `err` either way. */
static long refuse_fd(const char *name, int fd, void *ret, int err)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (h == NULL) {
        errno = EBADF;
        return -1;
    }
    return askew__refuse_errno(h, ASKEW_VIOLATION_DISK, name, fd, 0, ret, err);
}

/* ---- stat ------------------------------------------------------------- */

#define FILL_STAT(out, st)                                                             \
    do {                                                                               \
        memset((out), 0, sizeof(*(out)));                                              \
        (out)->st_dev = (st)->dev;                                                     \
        (out)->st_ino = (st)->ino;                                                     \
        (out)->st_mode = (st)->mode;                                                   \
        (out)->st_nlink = (st)->nlink;                                                 \
        (out)->st_size = (off_t)(st)->size;                                            \
        (out)->st_blksize = 4096;                                                      \
        (out)->st_blocks = (blkcnt_t)(st)->blocks;                                     \
        (out)->st_mtim.tv_sec = (st)->mtime_ns / 1000000000;                           \
        (out)->st_mtim.tv_nsec = (st)->mtime_ns % 1000000000;                          \
        (out)->st_atim = (out)->st_mtim;                                               \
        (out)->st_ctim = (out)->st_mtim;                                               \
    } while (0)

static void fill_statx(struct statx *out, const struct askew_disk_stat_out *st)
{
    memset(out, 0, sizeof(*out));
    out->stx_mask = STATX_BASIC_STATS;
    out->stx_blksize = 4096;
    out->stx_nlink = st->nlink;
    out->stx_mode = (uint16_t)st->mode;
    out->stx_ino = st->ino;
    out->stx_size = st->size;
    out->stx_blocks = st->blocks;
    out->stx_mtime.tv_sec = st->mtime_ns / 1000000000;
    out->stx_mtime.tv_nsec = (uint32_t)(st->mtime_ns % 1000000000);
    out->stx_atime = out->stx_mtime;
    out->stx_ctime = out->stx_mtime;
    out->stx_dev_major = major(st->dev);
    out->stx_dev_minor = minor(st->dev);
}

/* The stat family's simulated side: 1 when answered (*rc set), 0 to pass.
 * fd >= 0 with path NULL (or "" and AT_EMPTY_PATH) is an fstat. */
static int stat_call(int dirfd, const char *path, int atflags,
                     struct askew_disk_stat_out *st, const char *name, void *ret,
                     long *rc)
{
    struct askew_disk_call c = {.op = ASKEW_DCALL_STAT, .fd = dirfd, .st = st};
    if (path == NULL || (path[0] == '\0' && (atflags & AT_EMPTY_PATH) != 0)) {
        if (!askew__disk_fd(dirfd))
            return 0;
        *rc = askew__disk_fdcall(&c, name, ret);
        return 1;
    }
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_LIKELY(h == NULL))
        return 0;
    c.path = path;
    return askew__disk_path(h, &c, name, ret, rc);
}

#define STAT_BODY(name, dirfd, path, atflags, call_real, nr, a0, a1, a2, a3)           \
    do {                                                                               \
        struct askew_disk_stat_out st;                                                 \
        long rc;                                                                       \
        if (ASKEW_UNLIKELY(askew__t_hooks != NULL || askew__disk_fd(dirfd)) &&         \
            stat_call((dirfd), (path), (atflags), &st, #name, RET, &rc)) {             \
            if (rc == 0)                                                               \
                FILL_STAT(buf, &st);                                                   \
            return (int)rc;                                                            \
        }                                                                              \
        FORWARD(name, call_real, nr, a0, a1, a2, a3, 0, 0);                            \
    } while (0)

ASKEW_EXPORT int stat(const char *restrict path, struct stat *restrict buf)
{
    STAT_BODY(stat, AT_FDCWD, path, 0, real(path, buf), SYS_newfstatat, AT_FDCWD, path,
              buf, 0);
}

ASKEW_EXPORT int stat64(const char *restrict path, struct stat64 *restrict buf)
{
    STAT_BODY(stat64, AT_FDCWD, path, 0, real(path, buf), SYS_newfstatat, AT_FDCWD,
              path, buf, 0);
}

ASKEW_EXPORT int lstat(const char *restrict path, struct stat *restrict buf)
{
    STAT_BODY(lstat, AT_FDCWD, path, 0, real(path, buf), SYS_newfstatat, AT_FDCWD, path,
              buf, AT_SYMLINK_NOFOLLOW);
}

ASKEW_EXPORT int lstat64(const char *restrict path, struct stat64 *restrict buf)
{
    STAT_BODY(lstat64, AT_FDCWD, path, 0, real(path, buf), SYS_newfstatat, AT_FDCWD,
              path, buf, AT_SYMLINK_NOFOLLOW);
}

ASKEW_EXPORT int fstat(int fd, struct stat *buf)
{
    STAT_BODY(fstat, fd, NULL, 0, real(fd, buf), SYS_fstat, fd, buf, 0, 0);
}

ASKEW_EXPORT int fstat64(int fd, struct stat64 *buf)
{
    STAT_BODY(fstat64, fd, NULL, 0, real(fd, buf), SYS_fstat, fd, buf, 0, 0);
}

ASKEW_EXPORT int fstatat(int dirfd, const char *restrict path,
                         struct stat *restrict buf, int flags)
{
    STAT_BODY(fstatat, dirfd, path, flags, real(dirfd, path, buf, flags),
              SYS_newfstatat, dirfd, path, buf, flags);
}

ASKEW_EXPORT int fstatat64(int dirfd, const char *restrict path,
                           struct stat64 *restrict buf, int flags)
{
    STAT_BODY(fstatat64, dirfd, path, flags, real(dirfd, path, buf, flags),
              SYS_newfstatat, dirfd, path, buf, flags);
}

ASKEW_EXPORT int statx(int dirfd, const char *restrict path, int flags,
                       unsigned int mask, struct statx *restrict buf)
{
    struct askew_disk_stat_out st;
    long rc;
    if (ASKEW_UNLIKELY(askew__t_hooks != NULL || askew__disk_fd(dirfd)) &&
        stat_call(dirfd, path, flags, &st, "statx", RET, &rc)) {
        if (rc == 0)
            fill_statx(buf, &st);
        return (int)rc;
    }
    FORWARD(statx, real(dirfd, path, flags, mask, buf), SYS_statx, dirfd, path, flags,
            mask, buf, 0);
}

/* ---- the other path calls ---------------------------------------------- */

/* A path call inside a run, asked of the disk: 1 when it answered. */
static int path_op(const struct askew_preload_hooks *h, struct askew_disk_call *c,
                   const char *name, void *ret, long *rc)
{
    return ASKEW_UNLIKELY(h != NULL) && askew__disk_path(h, c, name, ret, rc);
}

/* A simple path call's body: ask the disk inside a run, else libc, else
 * (while dlsym is re-entered) the system call nr with up to four
 * arguments. */
#define PATH_BODY(name, call_init, call_real, nr, a0, a1, a2, a3)                      \
    do {                                                                               \
        long rc;                                                                       \
        struct askew_disk_call c = call_init;                                          \
        if (path_op(askew__t_hooks, &c, #name, RET, &rc))                              \
            return (int)rc;                                                            \
        FORWARD(name, call_real, nr, a0, a1, a2, a3, 0, 0);                            \
    } while (0)

#define CALL(...) ((struct askew_disk_call){__VA_ARGS__})

ASKEW_EXPORT int access(const char *path, int mode)
{
    PATH_BODY(access,
              CALL(.op = ASKEW_DCALL_ACCESS, .fd = AT_FDCWD, .path = path,
                   .mode = (uint32_t)mode),
              real(path, mode), SYS_faccessat, AT_FDCWD, path, mode, 0);
}

ASKEW_EXPORT int faccessat(int dirfd, const char *path, int mode, int flags)
{
    PATH_BODY(faccessat,
              CALL(.op = ASKEW_DCALL_ACCESS, .fd = dirfd, .path = path,
                   .mode = (uint32_t)mode),
              real(dirfd, path, mode, flags), SYS_faccessat, dirfd, path, mode, 0);
}

ASKEW_EXPORT int unlink(const char *path)
{
    PATH_BODY(unlink, CALL(.op = ASKEW_DCALL_UNLINK, .fd = AT_FDCWD, .path = path),
              real(path), SYS_unlinkat, AT_FDCWD, path, 0, 0);
}

ASKEW_EXPORT int rmdir(const char *path)
{
    PATH_BODY(rmdir,
              CALL(.op = ASKEW_DCALL_UNLINK, .fd = AT_FDCWD, .path = path,
                   .flags = AT_REMOVEDIR),
              real(path), SYS_unlinkat, AT_FDCWD, path, AT_REMOVEDIR, 0);
}

ASKEW_EXPORT int unlinkat(int dirfd, const char *path, int flags)
{
    PATH_BODY(unlinkat,
              CALL(.op = ASKEW_DCALL_UNLINK, .fd = dirfd, .path = path, .flags = flags),
              real(dirfd, path, flags), SYS_unlinkat, dirfd, path, flags, 0);
}

ASKEW_EXPORT int mkdir(const char *path, mode_t mode)
{
    PATH_BODY(mkdir,
              CALL(.op = ASKEW_DCALL_MKDIR, .fd = AT_FDCWD, .path = path, .mode = mode),
              real(path, mode), SYS_mkdirat, AT_FDCWD, path, mode, 0);
}

ASKEW_EXPORT int mkdirat(int dirfd, const char *path, mode_t mode)
{
    PATH_BODY(mkdirat,
              CALL(.op = ASKEW_DCALL_MKDIR, .fd = dirfd, .path = path, .mode = mode),
              real(dirfd, path, mode), SYS_mkdirat, dirfd, path, mode, 0);
}

ASKEW_EXPORT int truncate(const char *path, off_t length)
{
    PATH_BODY(
        truncate,
        CALL(.op = ASKEW_DCALL_TRUNCATE, .fd = AT_FDCWD, .path = path, .off = length),
        real(path, length), SYS_truncate, path, length, 0, 0);
}

ASKEW_EXPORT int truncate64(const char *path, off64_t length)
{
    PATH_BODY(
        truncate64,
        CALL(.op = ASKEW_DCALL_TRUNCATE, .fd = AT_FDCWD, .path = path, .off = length),
        real(path, length), SYS_truncate, path, length, 0, 0);
}

/* A rename is on a disk when either name is (a name relative to a real
 * directory fd is not): the hook answers EXDEV for one that crosses from
 * a disk to the real file system. */
static int rename_op(int dirfd, const char *from, int dirfd2, const char *to,
                     unsigned int flags, const char *name, void *ret, long *rc)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_LIKELY(h == NULL))
        return 0;
    struct askew_disk_call c = {.op = ASKEW_DCALL_RENAME,
                                .fd = dirfd,
                                .path = from,
                                .dirfd2 = dirfd2,
                                .path2 = to,
                                .flags = (int32_t)flags};
    if (!may_be_ours(dirfd, from) && !may_be_ours(dirfd2, to))
        return 0;
    int64_t r = askew__hook_disk(h, &c);
    if (r == ASKEW_DISK_PASS)
        return 0;
    if (r == ASKEW_DISK_REFUSE)
        *rc = askew__refuse_errno(h, ASKEW_VIOLATION_DISK, name, c.op, 0, ret, EACCES);
    else
        *rc = as_libc(r);
    return 1;
}

ASKEW_EXPORT int rename(const char *from, const char *to)
{
    long rc;
    if (rename_op(AT_FDCWD, from, AT_FDCWD, to, 0, "rename", RET, &rc))
        return (int)rc;
    FORWARD(rename, real(from, to), SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, 0, 0);
}

ASKEW_EXPORT int renameat(int dirfd, const char *from, int dirfd2, const char *to)
{
    long rc;
    if (rename_op(dirfd, from, dirfd2, to, 0, "renameat", RET, &rc))
        return (int)rc;
    FORWARD(renameat, real(dirfd, from, dirfd2, to), SYS_renameat2, dirfd, from, dirfd2,
            to, 0, 0);
}

ASKEW_EXPORT int renameat2(int dirfd, const char *from, int dirfd2, const char *to,
                           unsigned int flags)
{
    long rc;
    if (rename_op(dirfd, from, dirfd2, to, flags, "renameat2", RET, &rc))
        return (int)rc;
    FORWARD(renameat2, real(dirfd, from, dirfd2, to, flags), SYS_renameat2, dirfd, from,
            dirfd2, to, flags, 0);
}

/* The disk has no symbolic links: readlink of a name on it is EINVAL, or
 * the error stat gives (sqlite resolves a database's path with lstat and
 * readlink). */
ASKEW_EXPORT ssize_t readlink(const char *restrict path, char *restrict buf, size_t len)
{
    struct askew_disk_stat_out st;
    long rc;
    struct askew_disk_call c = {
        .op = ASKEW_DCALL_STAT, .fd = AT_FDCWD, .path = path, .st = &st};
    if (path_op(askew__t_hooks, &c, "readlink", RET, &rc)) {
        if (rc == 0) {
            errno = EINVAL;
            return -1;
        }
        return rc;
    }
    FORWARD(readlink, real(path, buf, len), SYS_readlinkat, AT_FDCWD, path, buf, len, 0,
            0);
}

/* ---- calls on a simulated fd ------------------------------------------- */

/* One body for the fd calls that forward a real fd unchanged. */
#define FD_BODY(name, call_init, call_real, nr, a0, a1, a2, a3)                        \
    do {                                                                               \
        if (askew__disk_fd(fd)) {                                                      \
            struct askew_disk_call c = call_init;                                      \
            return askew__disk_fdcall(&c, #name, RET);                                 \
        }                                                                              \
        FORWARD(name, call_real, nr, a0, a1, a2, a3, 0, 0);                            \
    } while (0)

ASKEW_EXPORT int close(int fd)
{
    FD_BODY(close, ((struct askew_disk_call){.op = ASKEW_DCALL_CLOSE, .fd = fd}),
            real(fd), SYS_close, fd, 0, 0, 0);
}

ASKEW_EXPORT off_t lseek(int fd, off_t off, int whence)
{
    FD_BODY(lseek,
            ((struct askew_disk_call){
                .op = ASKEW_DCALL_SEEK, .fd = fd, .off = off, .flags = whence}),
            real(fd, off, whence), SYS_lseek, fd, off, whence, 0);
}

ASKEW_EXPORT off64_t lseek64(int fd, off64_t off, int whence)
{
    FD_BODY(lseek64,
            ((struct askew_disk_call){
                .op = ASKEW_DCALL_SEEK, .fd = fd, .off = off, .flags = whence}),
            real(fd, off, whence), SYS_lseek, fd, off, whence, 0);
}

/* A negative offset is EINVAL here, before it could mean "at the fd's
 * offset" to the hook. */
#define PRW_BODY(name, dcall, nr, buf_expr)                                            \
    do {                                                                               \
        if (askew__disk_fd(fd)) {                                                      \
            if (off < 0) {                                                             \
                errno = EINVAL;                                                        \
                return -1;                                                             \
            }                                                                          \
            struct askew_disk_call c = {                                               \
                .op = (dcall), .fd = fd, .buf = (buf_expr), .len = n, .off = off};     \
            return askew__disk_fdcall(&c, #name, RET);                                 \
        }                                                                              \
        FORWARD(name, real(fd, buf, n, off), nr, fd, buf, n, off, 0, 0);               \
    } while (0)

ASKEW_EXPORT ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
    PRW_BODY(pread, ASKEW_DCALL_READ, SYS_pread64, buf);
}

ASKEW_EXPORT ssize_t pread64(int fd, void *buf, size_t n, off64_t off)
{
    PRW_BODY(pread64, ASKEW_DCALL_READ, SYS_pread64, buf);
}

ASKEW_EXPORT ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    PRW_BODY(pwrite, ASKEW_DCALL_WRITE, SYS_pwrite64, (void *)buf);
}

ASKEW_EXPORT ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t off)
{
    PRW_BODY(pwrite64, ASKEW_DCALL_WRITE, SYS_pwrite64, (void *)buf);
}

ASKEW_EXPORT int fsync(int fd)
{
    FD_BODY(fsync, ((struct askew_disk_call){.op = ASKEW_DCALL_SYNC, .fd = fd}),
            real(fd), SYS_fsync, fd, 0, 0, 0);
}

ASKEW_EXPORT int fdatasync(int fd)
{
    FD_BODY(fdatasync,
            ((struct askew_disk_call){.op = ASKEW_DCALL_SYNC, .fd = fd, .flags = 1}),
            real(fd), SYS_fdatasync, fd, 0, 0, 0);
}

ASKEW_EXPORT int ftruncate(int fd, off_t length)
{
    FD_BODY(
        ftruncate,
        ((struct askew_disk_call){.op = ASKEW_DCALL_TRUNCATE, .fd = fd, .off = length}),
        real(fd, length), SYS_ftruncate, fd, length, 0, 0);
}

ASKEW_EXPORT int ftruncate64(int fd, off64_t length)
{
    FD_BODY(
        ftruncate64,
        ((struct askew_disk_call){.op = ASKEW_DCALL_TRUNCATE, .fd = fd, .off = length}),
        real(fd, length), SYS_ftruncate, fd, length, 0, 0);
}

/* The disk keeps no owners and enforces no permission bits: changing them
 * on a simulated fd succeeds when the fd is open (sqlite, run as root,
 * gives a new journal its database's owner). */
static long attr_change(int fd, const char *name, void *ret)
{
    struct askew_disk_stat_out st;
    struct askew_disk_call c = {.op = ASKEW_DCALL_STAT, .fd = fd, .st = &st};
    return askew__disk_fdcall(&c, name, ret);
}

ASKEW_EXPORT int fchmod(int fd, mode_t mode)
{
    if (askew__disk_fd(fd))
        return (int)attr_change(fd, "fchmod", RET);
    FORWARD(fchmod, real(fd, mode), SYS_fchmod, fd, mode, 0, 0, 0, 0);
}

ASKEW_EXPORT int fchown(int fd, uid_t owner, gid_t group)
{
    if (askew__disk_fd(fd))
        return (int)attr_change(fd, "fchown", RET);
    FORWARD(fchown, real(fd, owner, group), SYS_fchown, fd, owner, group, 0, 0, 0);
}

/* fcntl on a simulated fd: the int commands go to the hook as they are,
 * the lock commands with their struct flock made neutral and back. */
static int is_lock_cmd(int cmd)
{
    return cmd == F_GETLK || cmd == F_SETLK || cmd == F_SETLKW || cmd == F_OFD_GETLK ||
           cmd == F_OFD_SETLK || cmd == F_OFD_SETLKW;
}

static long fcntl_disk(int fd, int cmd, void *arg, const char *name, void *ret)
{
    struct askew_disk_call c = {
        .op = ASKEW_DCALL_FCNTL, .fd = fd, .flags = cmd, .off = (long)arg};
    if (!is_lock_cmd(cmd))
        return askew__disk_fdcall(&c, name, ret);
    struct flock *fl = arg;
    if (fl == NULL) {
        errno = EFAULT;
        return -1;
    }
    struct askew_disk_flock lock = {.type = fl->l_type,
                                    .whence = fl->l_whence,
                                    .start = fl->l_start,
                                    .len = fl->l_len};
    c.lock = &lock;
    long rc = askew__disk_fdcall(&c, name, ret);
    if (rc == 0 && (cmd == F_GETLK || cmd == F_OFD_GETLK)) {
        fl->l_type = (short)lock.type;
        fl->l_whence = (short)lock.whence;
        fl->l_start = lock.start;
        fl->l_len = lock.len;
        fl->l_pid = lock.pid;
    }
    return rc;
}

#define FCNTL_BODY(name)                                                               \
    do {                                                                               \
        va_list ap;                                                                    \
        va_start(ap, cmd);                                                             \
        void *arg = va_arg(ap, void *);                                                \
        va_end(ap);                                                                    \
        if (askew__disk_fd(fd))                                                        \
            return (int)fcntl_disk(fd, cmd, arg, #name, RET);                          \
        FORWARD(name, real(fd, cmd, arg), SYS_fcntl, fd, cmd, arg, 0, 0, 0);           \
    } while (0)

ASKEW_EXPORT int fcntl(int fd, int cmd, ...)
{
    FCNTL_BODY(fcntl);
}

ASKEW_EXPORT int fcntl64(int fd, int cmd, ...)
{
    FCNTL_BODY(fcntl64);
}

/* ---- what a simulated fd cannot do -------------------------------------- */

/* A mapping of a simulated file would read memory the disk never sees:
 * refused (ENODEV, as for a file that cannot be mapped). The system call's
 * -1 becomes (void *)-1, which is MAP_FAILED. */
#define MMAP_BODY(name)                                                                \
    do {                                                                               \
        if (askew__disk_fd(fd) && (flags & MAP_ANONYMOUS) == 0) {                      \
            (void)refuse_fd(#name, fd, RET, ENODEV);                                   \
            return MAP_FAILED;                                                         \
        }                                                                              \
        FORWARD(name, real(addr, len, prot, flags, fd, off), SYS_mmap, addr, len,      \
                prot, flags, fd, off);                                                 \
    } while (0)

ASKEW_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    MMAP_BODY(mmap);
}

ASKEW_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd,
                          off64_t off)
{
    MMAP_BODY(mmap64);
}

#define REFUSED_BODY(name, err, call_real, nr, a0, a1, a2, a3)                         \
    do {                                                                               \
        if (askew__disk_fd(fd))                                                        \
            return (int)refuse_fd(#name, fd, RET, (err));                              \
        FORWARD(name, call_real, nr, a0, a1, a2, a3, 0, 0);                            \
    } while (0)

ASKEW_EXPORT int dup(int fd)
{
    REFUSED_BODY(dup, EMFILE, real(fd), SYS_dup, fd, 0, 0, 0);
}

ASKEW_EXPORT int dup2(int fd, int fd2)
{
    REFUSED_BODY(dup2, EMFILE, real(fd, fd2), SYS_dup3, fd, fd2, 0, 0);
}

ASKEW_EXPORT int dup3(int fd, int fd2, int flags)
{
    REFUSED_BODY(dup3, EMFILE, real(fd, fd2, flags), SYS_dup3, fd, fd2, flags, 0);
}

ASKEW_EXPORT int flock(int fd, int op)
{
    REFUSED_BODY(flock, EINVAL, real(fd, op), SYS_flock, fd, op, 0, 0);
}

ASKEW_EXPORT int fallocate(int fd, int mode, off_t off, off_t len)
{
    REFUSED_BODY(fallocate, EOPNOTSUPP, real(fd, mode, off, len), SYS_fallocate, fd,
                 mode, off, len);
}

ASKEW_EXPORT int posix_fallocate(int fd, off_t off, off_t len)
{
    /* posix_fallocate returns its error, it does not set errno. */
    if (askew__disk_fd(fd)) {
        (void)refuse_fd("posix_fallocate", fd, RET, EOPNOTSUPP);
        return askew__t_hooks != NULL ? EOPNOTSUPP : EBADF;
    }
    __typeof__(&posix_fallocate) real = REAL(posix_fallocate);
    if (ASKEW_LIKELY(real != NULL))
        return real(fd, off, len);
    return ENOSYS;
}
