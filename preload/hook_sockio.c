/* SPDX-License-Identifier: Apache-2.0 */
/* I/O on real fds: send, recv, sendto, recvfrom, sendmsg, recvmsg, sendmmsg,
 * recvmmsg, read, write, readv, writev, accept, accept4 and the
 * _FORTIFY_SOURCE entry points __read_chk, __recv_chk, __recvfrom_chk. A
 * socket made before the run (a pool's connection, a UDP socket opened at
 * import, a connection to a local server) is not caught by socket() or
 * connect(), so inside a run every one of these asks the kernel what fd is
 * (hook_fds.c): a socket that reaches outside the process (any family but
 * AF_UNIX, or AF_UNIX connected to another process) is refused with EACCES
 * and recorded, like socket() itself, and so is a datagram sent to an
 * AF_UNIX address the run did not bind. A read of the random devices
 * (/dev/urandom, /dev/random, however opened) comes from the run's entropy
 * stream, and a write to a regular file leaves the node's wall clock as
 * its mtime. Everything else (files, pipes, ttys, the loop's self-pipe) and
 * every call outside a run goes to libc unchanged; outside a run the cost
 * is the usual thread-local load and branch. */
#include <sys/socket.h>
#include <sys/syscall.h>
#include <limits.h>
#include <sys/uio.h>
#include <unistd.h>

#include "hook_disk.h"
#include "hook_fds.h"
#include "hook_random.h"
#include "hook_sockio.h"
#include "internal.h"

/* Declared by glibc only under _FORTIFY_SOURCE. */
ssize_t __read_chk(int fd, void *buf, size_t nbytes, size_t buflen);
ssize_t __recv_chk(int fd, void *buf, size_t len, size_t buflen, int flags);
ssize_t __recvfrom_chk(int fd, void *restrict buf, size_t len, size_t buflen, int flags,
                       struct sockaddr *restrict addr, socklen_t *restrict addrlen);

int askew__sim_fd_refused(int fd)
{
    return askew__fd_kind(fd) == ASKEW_FD_OUTSIDE;
}

#define RET __builtin_return_address(0)

/* The simulation's side, first in every body: `kind` is what fd is (inside
 * a run; ASKEW_FD_OTHER outside one), and a socket that reaches outside is
 * refused (recorded, -1 with EACCES). */
#define SIM_KIND(name, fd)                                                             \
    const struct askew_preload_hooks *h = askew__t_hooks;                              \
    enum askew_fd_kind kind = ASKEW_FD_OTHER;                                          \
    if (ASKEW_UNLIKELY(h != NULL) && (kind = askew__fd_kind(fd)) == ASKEW_FD_OUTSIDE)  \
    return askew__refuse_errno(h, ASKEW_VIOLATION_SOCKET, #name, (fd), 0, RET, EACCES)

/* libc's call, or (while dlsym is re-entered) the system call itself. */
#define CALL(name, nr, call_real, a0, a1, a2, a3, a4, a5)                              \
    __extension__({                                                                    \
        __typeof__(&name) real = REAL(name);                                           \
        ASKEW_LIKELY(real != NULL)                                                     \
        ? (long)(call_real)                                                            \
        : askew__raw_syscall((nr), (long)(a0), (long)(a1), (long)(a2), (long)(a3),     \
                             (long)(a4), (long)(a5));                                  \
    })

/* Each body: refuse, or forward to libc (or make the system call). */
#define FORWARD(name, nr, call_real, a0, a1, a2, a3, a4, a5)                           \
    do {                                                                               \
        SIM_KIND(name, fd);                                                            \
        (void)kind;                                                                    \
        return CALL(name, nr, call_real, a0, a1, a2, a3, a4, a5);                      \
    } while (0)

/* A datagram to an AF_UNIX address the run did not bind reaches another
 * process (syslog's /dev/log, a local daemon): 1 when refused. */
static int send_refused(const struct askew_preload_hooks *h, const char *call, int fd,
                        const struct sockaddr *addr, socklen_t len, void *ret)
{
    if (ASKEW_LIKELY(h == NULL) || addr == NULL ||
        len < (socklen_t)sizeof(sa_family_t) || addr->sa_family != AF_UNIX ||
        askew__sim_unix_ours(addr, len))
        return 0;
    (void)askew__refuse_errno(h, ASKEW_VIOLATION_SOCKET, call, fd, AF_UNIX, ret,
                              EACCES);
    return 1;
}

/* A read of a random device inside a run, over an iovec: every buffer
 * filled from the run's entropy stream, as the device would fill them. */
static ssize_t entropy_readv(const struct askew_preload_hooks *h,
                             const struct iovec *iov, int iovcnt)
{
    if (iovcnt < 0 || iovcnt > IOV_MAX) {
        errno = EINVAL;
        return -1;
    }
    ssize_t total = 0;
    for (int i = 0; i < iovcnt; i++) {
        long got = askew__sim_getrandom(h, iov[i].iov_base, iov[i].iov_len, 0);
        if (got < 0)
            return total > 0 ? total : -1;
        total += got;
    }
    return total;
}

/* read and write on a simulated fd (hook_disk.c): at the fd's offset. */
static ssize_t disk_rw(uint32_t op, int fd, void *buf, size_t n, const char *name,
                       void *ret)
{
    struct askew_disk_call c = {.op = op, .fd = fd, .buf = buf, .len = n, .off = -1};
    return askew__disk_fdcall(&c, name, ret);
}

/* readv and writev on a simulated fd: one buffer after another, stopping
 * at a short transfer as the kernel would report it. */
static ssize_t disk_rwv(uint32_t op, int fd, const struct iovec *iov, int iovcnt,
                        const char *name, void *ret)
{
    if (iovcnt < 0 || iovcnt > IOV_MAX) {
        errno = EINVAL;
        return -1;
    }
    ssize_t total = 0;
    for (int i = 0; i < iovcnt; i++) {
        ssize_t got = disk_rw(op, fd, iov[i].iov_base, iov[i].iov_len, name, ret);
        if (got < 0)
            return total > 0 ? total : -1;
        total += got;
        if ((size_t)got < iov[i].iov_len)
            break;
    }
    return total;
}

ASKEW_EXPORT ssize_t read(int fd, void *buf, size_t n)
{
    if (askew__disk_fd(fd))
        return disk_rw(ASKEW_DCALL_READ, fd, buf, n, "read", RET);
    SIM_KIND(read, fd);
    if (ASKEW_UNLIKELY(kind == ASKEW_FD_ENTROPY))
        return askew__sim_getrandom(h, buf, n, 0);
    return CALL(read, SYS_read, real(fd, buf, n), fd, buf, n, 0, 0, 0);
}

ASKEW_EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
    if (askew__disk_fd(fd))
        return disk_rw(ASKEW_DCALL_WRITE, fd, (void *)buf, n, "write", RET);
    SIM_KIND(write, fd);
    const ssize_t rc = CALL(write, SYS_write, real(fd, buf, n), fd, buf, n, 0, 0, 0);
    if (ASKEW_UNLIKELY(kind == ASKEW_FD_REGULAR) && rc > 0)
        askew__sim_stamp_mtime(h, fd);
    return rc;
}

ASKEW_EXPORT ssize_t readv(int fd, const struct iovec *iov, int iovcnt)
{
    if (askew__disk_fd(fd))
        return disk_rwv(ASKEW_DCALL_READ, fd, iov, iovcnt, "readv", RET);
    SIM_KIND(readv, fd);
    if (ASKEW_UNLIKELY(kind == ASKEW_FD_ENTROPY))
        return entropy_readv(h, iov, iovcnt);
    return CALL(readv, SYS_readv, real(fd, iov, iovcnt), fd, iov, iovcnt, 0, 0, 0);
}

ASKEW_EXPORT ssize_t writev(int fd, const struct iovec *iov, int iovcnt)
{
    if (askew__disk_fd(fd))
        return disk_rwv(ASKEW_DCALL_WRITE, fd, iov, iovcnt, "writev", RET);
    SIM_KIND(writev, fd);
    const ssize_t rc =
        CALL(writev, SYS_writev, real(fd, iov, iovcnt), fd, iov, iovcnt, 0, 0, 0);
    if (ASKEW_UNLIKELY(kind == ASKEW_FD_REGULAR) && rc > 0)
        askew__sim_stamp_mtime(h, fd);
    return rc;
}

ASKEW_EXPORT ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen)
{
    if (askew__disk_fd(fd))
        return disk_rw(ASKEW_DCALL_READ, fd, buf, n < buflen ? n : buflen, "__read_chk",
                       RET);
    SIM_KIND(__read_chk, fd);
    if (ASKEW_UNLIKELY(kind == ASKEW_FD_ENTROPY))
        return askew__sim_getrandom(h, buf, n < buflen ? n : buflen, 0);
    return CALL(__read_chk, SYS_read, real(fd, buf, n, buflen), fd, buf, n, 0, 0, 0);
}

ASKEW_EXPORT ssize_t send(int fd, const void *buf, size_t n, int flags)
{
    FORWARD(send, SYS_sendto, real(fd, buf, n, flags), fd, buf, n, flags, 0, 0);
}

ASKEW_EXPORT ssize_t recv(int fd, void *buf, size_t n, int flags)
{
    FORWARD(recv, SYS_recvfrom, real(fd, buf, n, flags), fd, buf, n, flags, 0, 0);
}

ASKEW_EXPORT ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags)
{
    FORWARD(__recv_chk, SYS_recvfrom, real(fd, buf, n, buflen, flags), fd, buf, n,
            flags, 0, 0);
}

ASKEW_EXPORT ssize_t sendto(int fd, const void *buf, size_t n, int flags,
                            const struct sockaddr *addr, socklen_t addrlen)
{
    if (send_refused(askew__t_hooks, "sendto", fd, addr, addrlen, RET))
        return -1;
    FORWARD(sendto, SYS_sendto, real(fd, buf, n, flags, addr, addrlen), fd, buf, n,
            flags, addr, addrlen);
}

ASKEW_EXPORT ssize_t recvfrom(int fd, void *restrict buf, size_t n, int flags,
                              struct sockaddr *restrict addr,
                              socklen_t *restrict addrlen)
{
    FORWARD(recvfrom, SYS_recvfrom, real(fd, buf, n, flags, addr, addrlen), fd, buf, n,
            flags, addr, addrlen);
}

ASKEW_EXPORT ssize_t __recvfrom_chk(int fd, void *restrict buf, size_t n, size_t buflen,
                                    int flags, struct sockaddr *restrict addr,
                                    socklen_t *restrict addrlen)
{
    FORWARD(__recvfrom_chk, SYS_recvfrom,
            real(fd, buf, n, buflen, flags, addr, addrlen), fd, buf, n, flags, addr,
            addrlen);
}

ASKEW_EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
    if (msg != NULL && send_refused(askew__t_hooks, "sendmsg", fd, msg->msg_name,
                                    msg->msg_namelen, RET))
        return -1;
    FORWARD(sendmsg, SYS_sendmsg, real(fd, msg, flags), fd, msg, flags, 0, 0, 0);
}

ASKEW_EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
    FORWARD(recvmsg, SYS_recvmsg, real(fd, msg, flags), fd, msg, flags, 0, 0, 0);
}

ASKEW_EXPORT int sendmmsg(int fd, struct mmsghdr *vec, unsigned int vlen, int flags)
{
    for (unsigned int i = 0; vec != NULL && i < vlen; i++)
        if (send_refused(askew__t_hooks, "sendmmsg", fd, vec[i].msg_hdr.msg_name,
                         vec[i].msg_hdr.msg_namelen, RET))
            return -1;
    FORWARD(sendmmsg, SYS_sendmmsg, real(fd, vec, vlen, flags), fd, vec, vlen, flags, 0,
            0);
}

ASKEW_EXPORT int recvmmsg(int fd, struct mmsghdr *vec, unsigned int vlen, int flags,
                          struct timespec *timeout)
{
    FORWARD(recvmmsg, SYS_recvmmsg, real(fd, vec, vlen, flags, timeout), fd, vec, vlen,
            flags, timeout, 0);
}

ASKEW_EXPORT int accept(int fd, struct sockaddr *restrict addr, socklen_t *restrict len)
{
    FORWARD(accept, SYS_accept4, real(fd, addr, len), fd, addr, len, 0, 0, 0);
}

ASKEW_EXPORT int accept4(int fd, struct sockaddr *restrict addr,
                         socklen_t *restrict len, int flags)
{
    FORWARD(accept4, SYS_accept4, real(fd, addr, len, flags), fd, addr, len, flags, 0,
            0);
}
