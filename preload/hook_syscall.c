/* SPDX-License-Identifier: Apache-2.0 */
/* syscall(2), the door CPython's os.getrandom, OpenSSL and Rust crates use
 * past the libc wrappers. Inside a run the numbers askew models (time,
 * getrandom, sleeps, process and thread creation, socket, connect, bind,
 * I/O on sockets) go to the same policy as their wrappers; everything else,
 * and every call outside a run, is forwarded with six long arguments, which
 * is how every Linux syscall takes its arguments on the architectures we
 * build for. */
#include <stdarg.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "hook_net.h"
#include "hook_random.h"
#include "hook_sleep.h"
#include "hook_sockio.h"
#include "hook_time.h"
#include "internal.h"

static long sim_syscall(const struct askew_preload_hooks *h, long nr, const long *a,
                        void *ret)
{
    switch (nr) {
    case SYS_clock_gettime:
        return askew__sim_clock_gettime(h, (clockid_t)a[0], (struct timespec *)a[1]);
    case SYS_clock_getres:
        if (!askew__sim_clock_known((clockid_t)a[0]))
            break;
        return askew__sim_clock_getres((clockid_t)a[0], (struct timespec *)a[1]);
    case SYS_gettimeofday: {
        struct timespec ts;
        struct timeval *tv = (struct timeval *)a[0];
        if (tv != NULL) {
            if (askew__sim_clock_gettime(h, CLOCK_REALTIME, &ts) != 0)
                return -1;
            tv->tv_sec = ts.tv_sec;
            tv->tv_usec = ts.tv_nsec / 1000;
        }
        if (a[1] != 0) {
            struct timezone *tz = (struct timezone *)a[1];
            tz->tz_minuteswest = 0;
            tz->tz_dsttime = 0;
        }
        return 0;
    }
#ifdef SYS_time
    case SYS_time: {
        struct timespec ts;
        if (askew__sim_clock_gettime(h, CLOCK_REALTIME, &ts) != 0)
            return -1;
        if (a[0] != 0)
            *(time_t *)a[0] = ts.tv_sec;
        return ts.tv_sec;
    }
#endif
    case SYS_getrandom:
        return askew__sim_getrandom(h, (void *)a[0], (size_t)a[1], (unsigned int)a[2]);
    case SYS_nanosleep:
    case SYS_clock_nanosleep: {
        /* The kernel's arguments: (req, rem) or (clock, flags, req, rem). */
        const int clock_form = nr == SYS_clock_nanosleep;
        const int err = askew__sim_sleep(
            h, clock_form ? (clockid_t)a[0] : CLOCK_MONOTONIC,
            clock_form ? (int)a[1] : 0, (const struct timespec *)a[clock_form ? 2 : 0],
            clock_form ? "syscall(SYS_clock_nanosleep)" : "syscall(SYS_nanosleep)",
            ret);
        if (err != 0) {
            errno = err;
            return -1;
        }
        return 0;
    }
    case SYS_clone:
#ifdef SYS_clone3
    case SYS_clone3:
#endif
#ifdef SYS_fork
    case SYS_fork:
#endif
#ifdef SYS_vfork
    case SYS_vfork:
#endif
        return askew__refuse_errno(h, ASKEW_VIOLATION_PROCESS, "syscall(SYS_clone)", nr,
                                   0, ret, EAGAIN);
    case SYS_execve:
    case SYS_execveat:
        return askew__refuse_errno(h, ASKEW_VIOLATION_PROCESS, "syscall(SYS_execve)",
                                   nr, 0, ret, EAGAIN);
    case SYS_socket:
        if (!askew__sim_family_refused((int)a[0]))
            break;
        return askew__refuse_errno(h, ASKEW_VIOLATION_SOCKET, "syscall(SYS_socket)",
                                   a[0], a[1], ret, EACCES);
    case SYS_connect:
    case SYS_bind: {
        const struct sockaddr *sa = (const struct sockaddr *)a[1];
        if (sa != NULL && !askew__sim_family_refused(sa->sa_family))
            break;
        return askew__refuse_errno(h, ASKEW_VIOLATION_SOCKET,
                                   nr == SYS_connect ? "syscall(SYS_connect)"
                                                     : "syscall(SYS_bind)",
                                   a[0], sa != NULL ? sa->sa_family : -1, ret, EACCES);
    }
    case SYS_read:
    case SYS_write:
    case SYS_readv:
    case SYS_writev:
    case SYS_sendto:
    case SYS_recvfrom:
    case SYS_sendmsg:
    case SYS_recvmsg:
    case SYS_sendmmsg:
    case SYS_recvmmsg:
    case SYS_accept:
    case SYS_accept4:
        /* I/O on a socket made before the run: see hook_sockio.c. */
        if (!askew__sim_fd_refused((int)a[0]))
            break;
        return askew__refuse_errno(h, ASKEW_VIOLATION_SOCKET, "syscall(socket I/O)",
                                   a[0], nr, ret, EACCES);
    default:
        break;
    }
    long (*real)(long, ...) = REAL(syscall);
    if (ASKEW_LIKELY(real != NULL))
        return real(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
    return askew__raw_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

ASKEW_EXPORT long syscall(long nr, ...)
{
    long a[6];
    va_list ap;
    va_start(ap, nr);
    for (int i = 0; i < 6; i++)
        a[i] = va_arg(ap, long);
    va_end(ap);
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_LIKELY(h == NULL)) {
        long (*real)(long, ...) = REAL(syscall);
        if (ASKEW_LIKELY(real != NULL))
            return real(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
        return askew__raw_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
    }
    return sim_syscall(h, nr, a, __builtin_return_address(0));
}
