/* SPDX-License-Identifier: Apache-2.0 */
/* syscall(2), the door CPython's os.getrandom, OpenSSL and Rust crates use
 * past the libc wrappers. Inside a run the numbers askew models (time and
 * the kernel's other clocks, getrandom, sleeps and sigtimedwait, process
 * and thread creation, timers, the identity calls and signals by pid,
 * socket, connect, bind, I/O on sockets and the random devices) go to the
 * same policy as their wrappers; everything else, and every call outside a
 * run, is forwarded with six long arguments, which is how every Linux
 * syscall takes its arguments on the architectures we build for. */
#include <signal.h>
#include <stdarg.h>
#include <sys/resource.h>
#include <sys/sysinfo.h>
#include <sys/timerfd.h>
#include <sys/times.h>
#include <sys/timex.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "hook_fds.h"
#include "hook_identity.h"
#include "hook_net.h"
#include "hook_random.h"
#include "hook_sleep.h"
#include "hook_sockio.h"
#include "hook_time.h"
#include "internal.h"

static long sim_syscall(const struct askew_preload_hooks *h, long nr, long *a,
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
    case SYS_connect: {
        const struct sockaddr *sa = (const struct sockaddr *)a[1];
        if (!askew__sim_connect_refused(sa, (socklen_t)a[2]))
            break;
        return askew__refuse_errno(h, ASKEW_VIOLATION_SOCKET, "syscall(SYS_connect)",
                                   a[0], sa != NULL ? sa->sa_family : -1, ret, EACCES);
    }
    case SYS_bind:
        return bind((int)a[0], (const struct sockaddr *)a[1], (socklen_t)a[2]);
    /* The kernel's clocks and timers: their wrappers' policy. */
    case SYS_times:
        return (long)times((struct tms *)a[0]);
    case SYS_getrusage:
        return getrusage((int)a[0], (struct rusage *)a[1]);
    case SYS_sysinfo:
        return sysinfo((struct sysinfo *)a[0]);
    case SYS_adjtimex:
        return adjtimex((struct timex *)a[0]);
    case SYS_clock_adjtime:
        return clock_adjtime((clockid_t)a[0], (struct timex *)a[1]);
    case SYS_setitimer:
        return setitimer((int)a[0], (const struct itimerval *)a[1],
                         (struct itimerval *)a[2]);
#ifdef SYS_alarm
    case SYS_alarm:
        return (long)alarm((unsigned int)a[0]);
#endif
    case SYS_timer_create:
    case SYS_timer_gettime:
    case SYS_timerfd_create:
    case SYS_timerfd_gettime:
        return askew__refuse_errno(h, ASKEW_VIOLATION_CLOCK, "syscall(timer)", nr, 0,
                                   ret, EACCES);
    case SYS_timer_settime:
    case SYS_timerfd_settime: {
        const struct itimerspec *v = (const struct itimerspec *)a[2];
        if (v == NULL || (v->it_value.tv_sec == 0 && v->it_value.tv_nsec == 0))
            break;
        return askew__refuse_errno(h, ASKEW_VIOLATION_CLOCK, "syscall(timer)", nr, 0,
                                   ret, EACCES);
    }
    case SYS_rt_sigtimedwait:
        if (a[2] == 0)
            break;
        return askew__sim_sigtimedwait(h, (const sigset_t *)a[0], (siginfo_t *)a[1],
                                       (const struct timespec *)a[2], ret);
    /* Who the process is, and signals by pid. */
    case SYS_getpid:
        return askew__sim_getpid(h, ret);
    case SYS_gettid:
        return askew__sim_gettid(h, ret);
    case SYS_getppid:
        return askew__sim_getppid(h);
    case SYS_uname:
        return uname((struct utsname *)a[0]);
    case SYS_kill:
    case SYS_rt_sigqueueinfo: {
        const long to = askew__sim_signal_target(h, a[0], "syscall(SYS_kill)", ret);
        if (to < 0)
            return -1;
        a[0] = to;
        break;
    }
    case SYS_tgkill: {
        const long to = askew__sim_signal_target(h, a[0], "syscall(SYS_tgkill)", ret);
        if (to < 0)
            return -1;
        a[0] = to;
        a[1] = askew__sim_thread_target(h, a[1]);
        break;
    }
    case SYS_tkill:
        a[0] = askew__sim_thread_target(h, a[0]);
        break;
    case SYS_pipe2:
        return pipe2((int *)a[0], (int)a[1]);
    case SYS_read:
    case SYS_readv: {
        /* I/O on a socket made before the run (hook_sockio.c), or a read of
         * a random device, which the run serves. */
        const enum askew_fd_kind kind = askew__fd_kind((int)a[0]);
        if (kind == ASKEW_FD_ENTROPY && nr == SYS_read)
            return askew__sim_getrandom(h, (void *)a[1], (size_t)a[2], 0);
        if (kind == ASKEW_FD_ENTROPY)
            return readv((int)a[0], (const struct iovec *)a[1], (int)a[2]);
        if (kind != ASKEW_FD_OUTSIDE)
            break;
        return askew__refuse_errno(h, ASKEW_VIOLATION_SOCKET, "syscall(socket I/O)",
                                   a[0], nr, ret, EACCES);
    }
    case SYS_write:
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
