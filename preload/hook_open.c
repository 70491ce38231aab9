/* SPDX-License-Identifier: Apache-2.0 */
/* The open family: open, open64, openat, openat64, the _FORTIFY_SOURCE
 * entry points __open_2 and __open64_2, creat, creat64, fopen and fopen64.
 * Inside a run a path on the running node's simulated disk opens there and
 * gets a simulated fd (hook_disk.c), except through fopen, which is
 * refused; a path under /proc naming the running node's pid names this
 * process (the node's pid is not the host's: hook_identity.c). What is
 * opened is then asked of the kernel, so the answer holds however the path
 * was spelled (a symlink, "..", a relative path, a directory fd):
 * - the random devices open for real, and every read of them comes from
 *   the run's entropy stream (hook_sockio.c; a stream from fopen is served
 *   by a stream of our own), so C code that insists on /dev/urandom
 *   (abseil, older OpenSSL) runs instead of aborting;
 * - a file of /proc that reads a real clock (the kernel's uptime, a
 *   process's start and CPU times, the scheduler's statistics), the
 *   kernel's random uuid, a process's auxiliary vector (its AT_RANDOM
 *   bytes) or the host's identity (its hostname, its boot id) is closed
 *   again and refused with EACCES;
 * - a regular file the open created or truncated gets the node's wall
 *   clock as its mtime.
 * Every call outside a run goes to libc unchanged. */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hook_disk.h"
#include "hook_fds.h"
#include "hook_identity.h"
#include "hook_random.h"
#include "internal.h"

/* Declared by glibc only under _FORTIFY_SOURCE. */
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);

#define PROC_PATH_MAX 4096

/* "123" at p: its value, and where it ends; -1 when p holds no digits. */
static long digits(const char *p, const char **end)
{
    long v = 0;
    const char *q = p;
    while (*q >= '0' && *q <= '9' && v < 100000000)
        v = v * 10 + (*q++ - '0');
    *end = q;
    return q == p ? -1 : v;
}

static int one_of(const char *name, const char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(name, names[i]) == 0)
            return 1;
    return 0;
}

/* The refusal kind for a file of /proc, by the name the kernel gives it
 * ("/proc/1234/stat"), or 0 when it may be read. */
static int proc_refusal(const char *path)
{
    static const char *const top_clock[] = {"uptime", "stat", "schedstat", "timer_list",
                                            "driver/rtc"};
    static const char *const top_entropy[] = {"sys/kernel/random/uuid"};
    static const char *const top_identity[] = {
        "sys/kernel/random/boot_id", "sys/kernel/hostname", "sys/kernel/domainname"};
    static const char *const own_clock[] = {"stat", "schedstat", "sched", "timers"};
    if (strncmp(path, "/proc/", 6) != 0)
        return 0;
    const char *rest = path + 6;
    const char *end;
    if (digits(rest, &end) < 0) {
        if (one_of(rest, top_clock, sizeof(top_clock) / sizeof(top_clock[0])))
            return ASKEW_VIOLATION_CLOCK;
        if (one_of(rest, top_entropy, 1))
            return ASKEW_VIOLATION_DEVRANDOM;
        if (one_of(rest, top_identity, sizeof(top_identity) / sizeof(top_identity[0])))
            return ASKEW_VIOLATION_IDENTITY;
        return 0;
    }
    if (*end != '/')
        return 0;
    rest = end + 1;
    if (strncmp(rest, "task/", 5) == 0 && digits(rest + 5, &end) >= 0 && *end == '/')
        rest = end + 1; /* a thread's files are the process's */
    if (one_of(rest, own_clock, sizeof(own_clock) / sizeof(own_clock[0])))
        return ASKEW_VIOLATION_CLOCK;
    if (strcmp(rest, "auxv") == 0)
        return ASKEW_VIOLATION_DEVRANDOM;
    return 0;
}

/* procfs's device, read once: a file on it is looked at by name. */
static dev_t proc_dev;
static int proc_dev_known;

static int on_procfs(const struct stat *st)
{
    if (!proc_dev_known) {
        struct stat self;
        if (askew__raw_syscall(SYS_newfstatat, AT_FDCWD, (long)"/proc/self",
                               (long)&self, 0, 0, 0) != 0)
            return 0;
        proc_dev = self.st_dev;
        proc_dev_known = 1;
    }
    return st->st_dev == proc_dev;
}

/* "/proc/self/fd/<fd>" into buf. */
static const char *fd_link(int fd, char *buf, size_t size)
{
    static const char prefix[] = "/proc/self/fd/";
    char num[16];
    int n = 0;
    unsigned v = (unsigned)fd;
    do
        num[n++] = (char)('0' + v % 10);
    while ((v /= 10) != 0 && n < (int)sizeof(num));
    if (sizeof(prefix) + (size_t)n > size)
        return NULL;
    memcpy(buf, prefix, sizeof(prefix) - 1);
    for (int i = 0; i < n; i++)
        buf[sizeof(prefix) - 1 + (size_t)i] = num[n - 1 - i];
    buf[sizeof(prefix) - 1 + (size_t)n] = '\0';
    return buf;
}

/* What the kernel calls an open file of /proc; 0 when it may be read,
 * else the refusal kind. */
static int opened_refusal(int fd, const struct stat *st)
{
    char link[32], name[PROC_PATH_MAX];
    if (!on_procfs(st) || fd_link(fd, link, sizeof(link)) == NULL)
        return 0;
    long n = askew__raw_syscall(SYS_readlinkat, AT_FDCWD, (long)link, (long)name,
                                sizeof(name) - 1, 0, 0);
    if (n <= 0)
        return 0;
    name[n] = '\0';
    return proc_refusal(name);
}

/* After a real open inside a run succeeded: the fd, or -1 (the fd closed
 * again) when what it opened is refused. A file the open truncated, or
 * created (it is empty then), gets the node's wall clock as its mtime. */
static int sim_opened(const struct askew_preload_hooks *h, int fd, int flags,
                      const char *call, void *ret)
{
    struct stat st;
    const int saved = errno;
    const enum askew_fd_kind kind = askew__fd_stat(fd, &st);
    if (kind == ASKEW_FD_REGULAR &&
        ((flags & O_TRUNC) != 0 || ((flags & O_CREAT) != 0 && st.st_size == 0)))
        askew__sim_stamp_mtime(h, fd);
    const int refusal = kind == ASKEW_FD_BAD ? 0 : opened_refusal(fd, &st);
    errno = saved;
    if (refusal == 0)
        return fd;
    (void)askew__raw_syscall(SYS_close, fd, 0, 0, 0, 0, 0);
    return askew__refuse_errno(h, (enum askew_violation_kind)refusal, call, 0, 0, ret,
                               EACCES);
}

/* A path under /proc naming the running node's pid ("/proc/1234/status"
 * for the 1234 its getpid answers) names this process: the same path with
 * "/proc/self" in buf. Any other path comes back as it is. */
static const char *proc_self(const struct askew_preload_hooks *h, const char *path,
                             char *buf, size_t size)
{
    const char *end;
    if (path == NULL || strncmp(path, "/proc/", 6) != 0)
        return path;
    const long pid = digits(path + 6, &end);
    if (pid < 0 || (*end != '/' && *end != '\0') || pid != askew__sim_pid(h))
        return path;
    const size_t rest = strlen(end);
    if (sizeof("/proc/self") + rest > size)
        return path;
    memcpy(buf, "/proc/self", sizeof("/proc/self") - 1);
    memcpy(buf + sizeof("/proc/self") - 1, end, rest + 1);
    return buf;
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
    char proc_buf[PROC_PATH_MAX];                                                      \
    if (ASKEW_UNLIKELY(h != NULL)) {                                                   \
        long rc;                                                                       \
        path = proc_self(h, path, proc_buf, sizeof(proc_buf));                         \
        if (disk_open(h, (dirfd_expr), path, flags, mode, #name, RET, &rc))            \
            return (int)rc;                                                            \
    }                                                                                  \
    __typeof__(&name) real = REAL(name);                                               \
    int fd = ASKEW_LIKELY(real != NULL) ? (call_real)                                  \
                                        : raw_openat((dirfd_expr), path, flags, mode); \
    if (ASKEW_UNLIKELY(h != NULL) && fd >= 0)                                          \
        return sim_opened(h, fd, flags, #name, RET);                                   \
    return fd

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

/* A stream on a random device, inside a run: fread reads the stream's fd
 * from inside libc, where no interposer sees it, so the stream is one of
 * our own whose reads come from the run (and from the kernel once the run
 * has ended). Writes are taken and dropped, as the device mixes them in. */
static ssize_t entropy_stream_read(void *cookie, char *buf, size_t n)
{
    (void)cookie;
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (h != NULL)
        return askew__sim_getrandom(h, buf, n, 0);
    return askew__raw_syscall(SYS_getrandom, (long)buf, (long)n, 0, 0, 0, 0);
}

static ssize_t entropy_stream_write(void *cookie, const char *buf, size_t n)
{
    (void)cookie;
    (void)buf;
    return (ssize_t)n;
}

static int entropy_stream_close(void *cookie)
{
    (void)cookie;
    return 0;
}

/* fopen and fopen64 differ only in the function they pass through to. A
 * stream on the simulated disk is refused: glibc opens it with its own
 * open, which no interposer sees, so it would reach the real file system. */
static FILE *open_stream(const char *name, FILE *(*real)(const char *, const char *),
                         const char *path, const char *mode, void *caller)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    char proc_buf[PROC_PATH_MAX];
    if (ASKEW_UNLIKELY(h != NULL)) {
        path = proc_self(h, path, proc_buf, sizeof(proc_buf));
        struct askew_disk_call c = {
            .op = ASKEW_DCALL_ROUTE, .fd = AT_FDCWD, .path = path};
        long rc;
        if (askew__disk_path(h, &c, name, caller, &rc)) {
            if (rc == 0)
                (void)askew__refuse_errno(h, ASKEW_VIOLATION_DISK, name, 0, 0, caller,
                                          EACCES);
            return NULL;
        }
    }
    if (ASKEW_UNLIKELY(real == NULL)) {
        errno = EAGAIN;
        return NULL;
    }
    FILE *f = real(path, mode);
    if (ASKEW_LIKELY(h == NULL) || f == NULL)
        return f;
    struct stat st;
    const int saved = errno;
    const enum askew_fd_kind kind = askew__fd_stat(fileno(f), &st);
    if (kind == ASKEW_FD_ENTROPY) {
        static const cookie_io_functions_t entropy_io = {
            .read = entropy_stream_read,
            .write = entropy_stream_write,
            .close = entropy_stream_close,
        };
        FILE *served = fopencookie(NULL, mode, entropy_io);
        if (served != NULL) {
            fclose(f);
            errno = saved;
            return served;
        }
    }
    if (kind == ASKEW_FD_REGULAR && mode != NULL && (mode[0] == 'w' || mode[0] == 'a'))
        askew__sim_stamp_mtime(h, fileno(f));
    const int refusal = kind == ASKEW_FD_BAD ? 0 : opened_refusal(fileno(f), &st);
    errno = saved;
    /* A stream the interpreter opens itself is its bookkeeping: CPython
     * 3.12+ reads the thread count in /proc/self/stat after every fork,
     * refused or not, to warn about forking a threaded process. Code under
     * test cannot pass as it: Python's open() and os.open() reach open(),
     * never fopen. */
    if (refusal == 0 || askew__interp_caller(h, caller))
        return f;
    fclose(f);
    (void)askew__refuse_errno(h, (enum askew_violation_kind)refusal, name, 0, 0, caller,
                              EACCES);
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
