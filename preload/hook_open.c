/* SPDX-License-Identifier: Apache-2.0 */
/* The open family: open, open64, openat, openat64, the _FORTIFY_SOURCE
 * entry points __open_2 and __open64_2, creat, creat64, fopen and fopen64.
 * Inside a run, opening /dev/urandom or /dev/random is refused with EACCES
 * and recorded, because those bytes would bypass the run's entropy stream
 * (only the literal paths are recognised: a symlink or a relative path to
 * the device is not); a path on the running node's simulated disk opens
 * there and gets a simulated fd (hook_disk.c), except through fopen, which
 * is refused. Every other path, and every call outside a run, goes to libc
 * unchanged. */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>

#include "hook_disk.h"
#include "internal.h"

/* Declared by glibc only under _FORTIFY_SOURCE. */
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);

static int is_random_device(const char *path)
{
    return path != NULL && path[0] == '/' &&
           (strcmp(path, "/dev/urandom") == 0 || strcmp(path, "/dev/random") == 0);
}

/* The mode argument exists only when the flags say a file may be made. */
static int wants_mode(int flags)
{
    return (flags & O_CREAT) != 0 || (flags & O_TMPFILE) == O_TMPFILE;
}

static int raw_openat(int dirfd, const char *path, int flags, mode_t mode)
{
    return (int)askew__raw_syscall(SYS_openat, dirfd, (long)path, flags, mode, 0, 0);
}

#define RET __builtin_return_address(0)

/* An open of a path on the running node's simulated disk: 1 when the disk
 * answered (*rc is a simulated fd, or -1 with errno). */
static int disk_open(const struct askew_preload_hooks *h, int dirfd, const char *path,
                     int flags, mode_t mode, const char *name, void *ret, long *rc)
{
    struct askew_disk_call c = {.op = ASKEW_DCALL_OPEN,
                                .fd = dirfd,
                                .path = path,
                                .flags = flags,
                                .mode = mode};
    return askew__disk_path(h, &c, name, ret, rc);
}

/* The open family's optional mode argument, read only when flags say it is
 * there (reading it otherwise is undefined). Expands inside the variadic
 * function, whose last named parameter is `flags`. */
#define READ_MODE(flags, mode)                                                         \
    do {                                                                               \
        if (wants_mode(flags)) {                                                       \
            va_list ap;                                                                \
            va_start(ap, flags);                                                       \
            (mode) = (mode_t)va_arg(ap, int);                                          \
            va_end(ap);                                                                \
        }                                                                              \
    } while (0)

#define OPEN_BODY(name, dirfd_expr, call_real)                                         \
    const struct askew_preload_hooks *h = askew__t_hooks;                              \
    if (ASKEW_UNLIKELY(h != NULL)) {                                                   \
        long rc;                                                                       \
        if (is_random_device(path))                                                    \
            return ASKEW_REFUSE(h, ASKEW_VIOLATION_DEVRANDOM, #name, 0, 0, EACCES);    \
        if (disk_open(h, (dirfd_expr), path, flags, mode, #name, RET, &rc))            \
            return (int)rc;                                                            \
    }                                                                                  \
    __typeof__(&name) real = REAL(name);                                               \
    if (ASKEW_LIKELY(real != NULL))                                                    \
        return call_real;                                                              \
    return raw_openat((dirfd_expr), path, flags, mode)

ASKEW_EXPORT int open(const char *path, int flags, ...)
{
    mode_t mode = 0;
    READ_MODE(flags, mode);
    OPEN_BODY(open, AT_FDCWD, real(path, flags, mode));
}

ASKEW_EXPORT int open64(const char *path, int flags, ...)
{
    mode_t mode = 0;
    READ_MODE(flags, mode);
    OPEN_BODY(open64, AT_FDCWD, real(path, flags, mode));
}

ASKEW_EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
    mode_t mode = 0;
    READ_MODE(flags, mode);
    OPEN_BODY(openat, dirfd, real(dirfd, path, flags, mode));
}

ASKEW_EXPORT int openat64(int dirfd, const char *path, int flags, ...)
{
    mode_t mode = 0;
    READ_MODE(flags, mode);
    OPEN_BODY(openat64, dirfd, real(dirfd, path, flags, mode));
}

ASKEW_EXPORT int __open_2(const char *path, int flags)
{
    mode_t mode = 0;
    OPEN_BODY(__open_2, AT_FDCWD, real(path, flags));
}

ASKEW_EXPORT int __open64_2(const char *path, int flags)
{
    mode_t mode = 0;
    OPEN_BODY(__open64_2, AT_FDCWD, real(path, flags));
}

ASKEW_EXPORT int creat(const char *path, mode_t mode)
{
    int flags = O_CREAT | O_WRONLY | O_TRUNC;
    OPEN_BODY(creat, AT_FDCWD, real(path, mode));
}

ASKEW_EXPORT int creat64(const char *path, mode_t mode)
{
    int flags = O_CREAT | O_WRONLY | O_TRUNC;
    OPEN_BODY(creat64, AT_FDCWD, real(path, mode));
}

/* fopen and fopen64 differ only in the function they pass through to. A
 * stream on the simulated disk is refused: glibc opens it with its own
 * open, which no interposer sees, so it would reach the real file system. */
static FILE *open_stream(const char *name, FILE *(*real)(const char *, const char *),
                         const char *path, const char *mode, void *caller)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_UNLIKELY(h != NULL) && is_random_device(path)) {
        (void)askew__refuse_errno(h, ASKEW_VIOLATION_DEVRANDOM, name, 0, 0, caller,
                                  EACCES);
        return NULL;
    }
    struct askew_disk_call c = {.op = ASKEW_DCALL_ROUTE, .fd = AT_FDCWD, .path = path};
    long rc;
    if (ASKEW_UNLIKELY(h != NULL) && askew__disk_path(h, &c, name, caller, &rc)) {
        if (rc == 0)
            (void)askew__refuse_errno(h, ASKEW_VIOLATION_DISK, name, 0, 0, caller,
                                      EACCES);
        return NULL;
    }
    if (ASKEW_LIKELY(real != NULL))
        return real(path, mode);
    errno = EAGAIN;
    return NULL;
}

ASKEW_EXPORT FILE *fopen(const char *restrict path, const char *restrict mode)
{
    return open_stream("fopen", REAL(fopen), path, mode, __builtin_return_address(0));
}

ASKEW_EXPORT FILE *fopen64(const char *restrict path, const char *restrict mode)
{
    return open_stream("fopen64", REAL(fopen64), path, mode,
                       __builtin_return_address(0));
}
