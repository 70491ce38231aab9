/* SPDX-License-Identifier: Apache-2.0 */
/* I/O on sockets: send, recv, sendto, recvfrom, sendmsg, recvmsg, sendmmsg,
 * recvmmsg, read, write, readv, writev, accept, accept4 and the
 * _FORTIFY_SOURCE entry points __read_chk, __recv_chk, __recvfrom_chk. A
 * socket made before the run (a pool's connection, a UDP socket opened at
 * import) is not caught by socket() or connect(), so inside a run every one
 * of these asks the kernel what fd is: a socket of a family other than
 * AF_UNIX is refused with EACCES and recorded, like socket() itself.
 * Everything else (files, pipes, ttys, AF_UNIX pairs such as the loop's
 * self-pipe) and every call outside a run goes to libc unchanged; outside a
 * run the cost is the usual thread-local load and branch. */
#include <sys/socket.h>
#include <sys/syscall.h>
#include <limits.h>
#include <sys/uio.h>
#include <unistd.h>

#include "hook_disk.h"
#include "hook_net.h"
#include "hook_sockio.h"
#include "internal.h"

/* Declared by glibc only under _FORTIFY_SOURCE. */
ssize_t __read_chk(int fd, void *buf, size_t nbytes, size_t buflen);
ssize_t __recv_chk(int fd, void *buf, size_t len, size_t buflen, int flags);
ssize_t __recvfrom_chk(int fd, void *restrict buf, size_t len, size_t buflen, int flags,
                       struct sockaddr *restrict addr, socklen_t *restrict addrlen);

int askew__sim_fd_refused(int fd)
{
    /* One system call, straight to the kernel: SO_DOMAIN fails with
     * ENOTSOCK for anything but a socket. errno is the caller's to keep. */
    int saved = errno;
    int domain = 0;
    socklen_t len = sizeof(domain);
    long rc = askew__raw_syscall(SYS_getsockopt, fd, SOL_SOCKET, SO_DOMAIN,
                                 (long)&domain, (long)&len, 0);
    errno = saved;
    return rc == 0 && askew__sim_family_refused(domain);
}

/* The simulation's side, shared by every entry point: 1 when the call must
 * be refused (recorded, errno set to EACCES). */
static int refused(const char *call, int fd, void *ret)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_LIKELY(h == NULL) || !askew__sim_fd_refused(fd))
        return 0;
    (void)askew__refuse_errno(h, ASKEW_VIOLATION_SOCKET, call, fd, 0, ret, EACCES);
    return 1;
}

#define RET __builtin_return_address(0)

/* Each body: refuse, or forward to libc, or (while dlsym is re-entered)
 * make the system call ourselves. */
#define FORWARD(name, nr, call_real, a0, a1, a2, a3, a4, a5)                           \
    do {                                                                               \
        if (ASKEW_UNLIKELY(refused(#name, fd, RET)))                                   \
            return -1;                                                                 \
        __typeof__(&name) real = REAL(name);                                           \
        if (ASKEW_LIKELY(real != NULL))                                                \
            return call_real;                                                          \
        return askew__raw_syscall((nr), (long)(a0), (long)(a1), (long)(a2),            \
                                  (long)(a3), (long)(a4), (long)(a5));                 \
    } while (0)

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
    FORWARD(read, SYS_read, real(fd, buf, n), fd, buf, n, 0, 0, 0);
}

ASKEW_EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
    if (askew__disk_fd(fd))
        return disk_rw(ASKEW_DCALL_WRITE, fd, (void *)buf, n, "write", RET);
    FORWARD(write, SYS_write, real(fd, buf, n), fd, buf, n, 0, 0, 0);
}

ASKEW_EXPORT ssize_t readv(int fd, const struct iovec *iov, int iovcnt)
{
    if (askew__disk_fd(fd))
        return disk_rwv(ASKEW_DCALL_READ, fd, iov, iovcnt, "readv", RET);
    FORWARD(readv, SYS_readv, real(fd, iov, iovcnt), fd, iov, iovcnt, 0, 0, 0);
}

ASKEW_EXPORT ssize_t writev(int fd, const struct iovec *iov, int iovcnt)
{
    if (askew__disk_fd(fd))
        return disk_rwv(ASKEW_DCALL_WRITE, fd, iov, iovcnt, "writev", RET);
    FORWARD(writev, SYS_writev, real(fd, iov, iovcnt), fd, iov, iovcnt, 0, 0, 0);
}

ASKEW_EXPORT ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen)
{
    if (askew__disk_fd(fd))
        return disk_rw(ASKEW_DCALL_READ, fd, buf, n < buflen ? n : buflen, "__read_chk",
                       RET);
    FORWARD(__read_chk, SYS_read, real(fd, buf, n, buflen), fd, buf, n, 0, 0, 0);
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
    FORWARD(sendmsg, SYS_sendmsg, real(fd, msg, flags), fd, msg, flags, 0, 0, 0);
}

ASKEW_EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
    FORWARD(recvmsg, SYS_recvmsg, real(fd, msg, flags), fd, msg, flags, 0, 0, 0);
}

ASKEW_EXPORT int sendmmsg(int fd, struct mmsghdr *vec, unsigned int vlen, int flags)
{
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
