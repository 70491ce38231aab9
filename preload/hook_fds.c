/* SPDX-License-Identifier: Apache-2.0 */
/* What a real fd is, seen from inside a run, and what the run made. A
 * socket, pipe or terminal is a channel to something outside the run
 * unless the run made both ends: I/O on a socket that reaches another
 * process is refused (hook_sockio.c), and so is waiting for one of these to
 * become ready (hook_sleep.c's poll family), since it would become ready in
 * real time. The random devices are told by their device numbers, however
 * they were named or opened (before the run, through a symlink, a relative
 * path): reads of them come from the run's entropy stream. The run's own
 * AF_UNIX addresses and pipes are remembered in fixed tables, on the
 * simulation thread only, and forgotten when the next run begins. Every
 * question is one or two system calls straight to the kernel. */
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include "hook_fds.h"
#include "hook_net.h"
#include "hook_time.h"
#include "internal.h"

/* Sockets bound inside the run: a path by the inode bind made (any
 * spelling of it then matches), an abstract name by its bytes. */
#define UNIX_MAX 16
static struct {
    int abstract;
    dev_t dev;
    ino_t ino;
    socklen_t len;
    char name[sizeof(((struct sockaddr_un *)0)->sun_path)];
} unix_bound[UNIX_MAX];
static int unix_used;

/* Pipes made inside the run, by inode (both ends share one). */
#define PIPES_MAX 64
static ino_t pipes[PIPES_MAX];
static int pipes_used;

void askew__fds_run_begins(void)
{
    unix_used = 0;
    pipes_used = 0;
}

static int fstat_raw(int fd, struct stat *st)
{
    return (int)askew__raw_syscall(SYS_fstat, fd, (long)st, 0, 0, 0, 0);
}

static int stat_raw(const char *path, struct stat *st)
{
    return (int)askew__raw_syscall(SYS_newfstatat, AT_FDCWD, (long)path, (long)st, 0, 0,
                                   0);
}

/* The path or abstract name of an AF_UNIX address; 0 for an unnamed one. */
static size_t unix_name(const struct sockaddr *addr, socklen_t len, int *abstract,
                        const char **name)
{
    const size_t off = offsetof(struct sockaddr_un, sun_path);
    if (addr == NULL || addr->sa_family != AF_UNIX || len <= off)
        return 0;
    const struct sockaddr_un *un = (const struct sockaddr_un *)addr;
    size_t n = len - off;
    if (n > sizeof(un->sun_path))
        n = sizeof(un->sun_path);
    *abstract = un->sun_path[0] == '\0';
    *name = un->sun_path;
    return n;
}

/* A pathname address as a NUL-terminated string in buf (sun_path need not
 * be terminated); NULL when it does not fit. */
static const char *unix_path(const char *name, size_t n, char *buf, size_t size)
{
    size_t k = strnlen(name, n);
    if (k == 0 || k >= size)
        return NULL;
    memcpy(buf, name, k);
    buf[k] = '\0';
    return buf;
}

void askew__sim_unix_bound(const struct sockaddr *addr, socklen_t len)
{
    int abstract = 0;
    const char *name = NULL;
    const size_t n = unix_name(addr, len, &abstract, &name);
    if (n == 0 || unix_used == UNIX_MAX)
        return; /* past the table, a later connect to it is refused: safe */
    int saved = errno;
    char path[sizeof(unix_bound[0].name) + 1];
    struct stat st;
    if (abstract) {
        unix_bound[unix_used].abstract = 1;
        unix_bound[unix_used].len = (socklen_t)n;
        memcpy(unix_bound[unix_used].name, name, n);
        unix_used++;
    } else if (unix_path(name, n, path, sizeof(path)) != NULL &&
               stat_raw(path, &st) == 0) {
        unix_bound[unix_used].abstract = 0;
        unix_bound[unix_used].dev = st.st_dev;
        unix_bound[unix_used].ino = st.st_ino;
        unix_used++;
    }
    errno = saved;
}

int askew__sim_unix_ours(const struct sockaddr *addr, socklen_t len)
{
    int abstract = 0;
    const char *name = NULL;
    const size_t n = unix_name(addr, len, &abstract, &name);
    if (n == 0)
        return 0;
    int saved = errno;
    char path[sizeof(unix_bound[0].name) + 1];
    struct stat st;
    int have_st = !abstract && unix_path(name, n, path, sizeof(path)) != NULL &&
                  stat_raw(path, &st) == 0;
    errno = saved;
    for (int i = 0; i < unix_used; i++) {
        if (abstract && unix_bound[i].abstract && unix_bound[i].len == n &&
            memcmp(unix_bound[i].name, name, n) == 0)
            return 1;
        if (have_st && !unix_bound[i].abstract && unix_bound[i].dev == st.st_dev &&
            unix_bound[i].ino == st.st_ino)
            return 1;
    }
    return 0;
}

void askew__sim_pipe_made(const int fds[2])
{
    struct stat st;
    int saved = errno;
    if (pipes_used < PIPES_MAX && fstat_raw(fds[0], &st) == 0)
        pipes[pipes_used++] = st.st_ino;
    errno = saved;
}

static int pipe_ours(ino_t ino)
{
    for (int i = 0; i < pipes_used; i++)
        if (pipes[i] == ino)
            return 1;
    return 0;
}

/* A socket of a refused family, or an AF_UNIX one whose peer is another
 * process (a server started before the run: its replies carry its time). */
static int socket_outside(int fd)
{
    int domain = 0;
    socklen_t len = sizeof(domain);
    if (askew__raw_syscall(SYS_getsockopt, fd, SOL_SOCKET, SO_DOMAIN, (long)&domain,
                           (long)&len, 0) != 0)
        return 0;
    if (askew__sim_family_refused(domain))
        return 1;
    struct ucred peer = {0, 0, 0};
    len = sizeof(peer);
    if (askew__raw_syscall(SYS_getsockopt, fd, SOL_SOCKET, SO_PEERCRED, (long)&peer,
                           (long)&len, 0) != 0)
        return 0;
    /* pid 0: not connected (a datagram socket: its sends are checked by
     * address). The real pid, not the node's: getpid is interposed. */
    return peer.pid != 0 &&
           peer.pid != (pid_t)askew__raw_syscall(SYS_getpid, 0, 0, 0, 0, 0, 0);
}

enum askew_fd_kind askew__fd_stat(int fd, struct stat *st)
{
    int saved = errno;
    enum askew_fd_kind kind = ASKEW_FD_OTHER;
    if (fstat_raw(fd, st) != 0)
        kind = ASKEW_FD_BAD;
    else if (S_ISREG(st->st_mode))
        kind = ASKEW_FD_REGULAR;
    else if (S_ISCHR(st->st_mode))
        /* Major 1 is the memory devices: null, zero, full, random, urandom. */
        kind = major(st->st_rdev) != 1                              ? ASKEW_FD_TTY
               : minor(st->st_rdev) == 8 || minor(st->st_rdev) == 9 ? ASKEW_FD_ENTROPY
                                                                    : ASKEW_FD_OTHER;
    else if (S_ISFIFO(st->st_mode))
        kind = pipe_ours(st->st_ino) ? ASKEW_FD_OTHER : ASKEW_FD_PIPE_BEFORE;
    else if (S_ISSOCK(st->st_mode))
        kind = socket_outside(fd) ? ASKEW_FD_OUTSIDE : ASKEW_FD_OTHER;
    errno = saved;
    return kind;
}

enum askew_fd_kind askew__fd_kind(int fd)
{
    struct stat st;
    return askew__fd_stat(fd, &st);
}

int askew__fd_waits_outside(int fd)
{
    const enum askew_fd_kind kind = askew__fd_kind(fd);
    return kind == ASKEW_FD_OUTSIDE || kind == ASKEW_FD_PIPE_BEFORE ||
           kind == ASKEW_FD_TTY;
}

void askew__sim_stamp_mtime(const struct askew_preload_hooks *h, int fd)
{
    int saved = errno;
    struct timespec times[2] = {{0, UTIME_OMIT}, {0, 0}};
    if (askew__sim_clock_gettime(h, CLOCK_REALTIME, &times[1]) == 0)
        (void)askew__raw_syscall(SYS_utimensat, fd, 0, (long)times, 0, 0, 0);
    errno = saved;
}

/* pipe and pipe2: a pipe made inside a run is the run's own (both ends in
 * this process), so the poll family may wait on it. */
ASKEW_EXPORT int pipe(int fds[2])
{
    int (*real)(int[2]) = REAL(pipe);
    int rc = ASKEW_LIKELY(real != NULL)
                 ? real(fds)
                 : (int)askew__raw_syscall(SYS_pipe2, (long)fds, 0, 0, 0, 0, 0);
    if (ASKEW_UNLIKELY(askew__t_hooks != NULL) && rc == 0)
        askew__sim_pipe_made(fds);
    return rc;
}

ASKEW_EXPORT int pipe2(int fds[2], int flags)
{
    int (*real)(int[2], int) = REAL(pipe2);
    int rc = ASKEW_LIKELY(real != NULL)
                 ? real(fds, flags)
                 : (int)askew__raw_syscall(SYS_pipe2, (long)fds, flags, 0, 0, 0, 0);
    if (ASKEW_UNLIKELY(askew__t_hooks != NULL) && rc == 0)
        askew__sim_pipe_made(fds);
    return rc;
}
