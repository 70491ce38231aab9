/* SPDX-License-Identifier: Apache-2.0 */
/* Blocking with a timeout: the sleeps, timed semaphore waits, timed
 * condvar waits, sigtimedwait and the poll family. On the simulation
 * thread a sleep costs virtual time, as a blocking sleep costs a real loop
 * its time: the extension's sleep hook moves the node's clock on by the
 * interval, and the call returns at once. A timed condvar wait and a
 * sigtimedwait with nothing pending cost their time the same way and then
 * time out (no other simulated thread exists to end them), except the
 * interpreter's own condvar waits, translated to real time (see below).
 * The semaphore waits and the poll family return at once with the call's
 * own timeout result and are recorded as refusals. Waits that can complete
 * without blocking (a free semaphore, a ready fd, a pending signal) still
 * complete. Nothing here sleeps for real on the simulation thread for
 * longer than the caller asked, and nothing passes a virtual deadline to
 * the kernel. */
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "hook_cthread.h"
#include "hook_fds.h"
#include "hook_sleep.h"
#include "hook_time.h"
#include "internal.h"

#define RECORD(h, call, a0, a1)                                                        \
    ASKEW_RECORD((h), ASKEW_VIOLATION_SLEEP, (call), (a0), (a1))

static int ts_zero(const struct timespec *ts)
{
    return ts != NULL && ts->tv_sec == 0 && ts->tv_nsec == 0;
}

/* a - b in nanoseconds; 0 when a is not after b, -1 when it does not fit. */
static int64_t ns_after(const struct timespec *a, const struct timespec *b)
{
    int64_t sec, ns;
    if (__builtin_sub_overflow((int64_t)a->tv_sec, (int64_t)b->tv_sec, &sec) ||
        __builtin_mul_overflow(sec, (int64_t)1000000000, &ns) ||
        __builtin_add_overflow(ns, (int64_t)(a->tv_nsec - b->tv_nsec), &ns))
        return -1;
    return ns > 0 ? ns : 0;
}

int askew__sim_sleep(const struct askew_preload_hooks *h, clockid_t clock, int flags,
                     const struct timespec *req, const char *call, void *ret)
{
    /* The kernel's checks, in its order: the request, then the clock. */
    if (req == NULL)
        return EFAULT;
    if (req->tv_sec < 0 || req->tv_nsec < 0 || req->tv_nsec >= 1000000000L)
        return EINVAL;
    if (clock == CLOCK_THREAD_CPUTIME_ID)
        return EINVAL;
    int saved = errno;
    int64_t ns = -1;
    if (!askew__sim_clock_known(clock)) {
        /* A clock the simulation does not model: nothing to move on. */
    } else if (flags & TIMER_ABSTIME) {
        struct timespec now;
        if (askew__sim_clock_gettime(h, clock, &now) == 0)
            ns = ns_after(req, &now); /* a deadline on the virtual clock */
    } else {
        struct timespec zero = {0, 0};
        ns = ns_after(req, &zero);
    }
    /* A C thread's sleep lets the others run (a timed wait on the baton);
     * the simulation thread's stalls its loop, as it would a real one. */
    if (ns > 0 && askew__t_actor != 0) {
        errno = saved;
        return askew__cthread_sleep(h, ns, call, ret);
    }
    if (ns == 0 || (ns > 0 && askew__hook_sleep(h, ns) == 0)) {
        errno = saved;
        return 0;
    }
    /* No hook (an ABI 1.0 extension), or more time than the run can
     * let pass: return at once as if slept, and let the record fail the run. */
    askew__refuse(h, ASKEW_VIOLATION_SLEEP, call, req->tv_sec, req->tv_nsec, ret);
    errno = saved;
    return 0;
}

ASKEW_EXPORT int nanosleep(const struct timespec *req, struct timespec *rem)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_LIKELY(h == NULL)) {
        int (*real)(const struct timespec *, struct timespec *) = REAL(nanosleep);
        if (ASKEW_LIKELY(real != NULL))
            return real(req, rem);
        return (int)askew__raw_syscall(SYS_nanosleep, (long)req, (long)rem, 0, 0, 0, 0);
    }
    /* Linux measures nanosleep on CLOCK_MONOTONIC. */
    int err = askew__sim_sleep(h, CLOCK_MONOTONIC, 0, req, "nanosleep",
                               __builtin_return_address(0));
    if (err != 0) {
        errno = err;
        return -1;
    }
    return 0;
}

ASKEW_EXPORT int clock_nanosleep(clockid_t clock, int flags, const struct timespec *req,
                                 struct timespec *rem)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_LIKELY(h == NULL)) {
        int (*real)(clockid_t, int, const struct timespec *, struct timespec *) =
            REAL(clock_nanosleep);
        if (ASKEW_LIKELY(real != NULL))
            return real(clock, flags, req, rem);
        /* clock_nanosleep returns the error; it does not set errno. */
        int saved = errno;
        long rc = askew__raw_syscall(SYS_clock_nanosleep, clock, flags, (long)req,
                                     (long)rem, 0, 0);
        int err = rc < 0 ? errno : 0;
        errno = saved;
        return err;
    }
    return askew__sim_sleep(h, clock, flags, req, "clock_nanosleep",
                            __builtin_return_address(0));
}

ASKEW_EXPORT int usleep(useconds_t usec)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_LIKELY(h == NULL)) {
        int (*real)(useconds_t) = REAL(usleep);
        if (ASKEW_LIKELY(real != NULL))
            return real(usec);
        struct timespec ts = {(time_t)(usec / 1000000), (long)(usec % 1000000) * 1000};
        return (int)askew__raw_syscall(SYS_nanosleep, (long)&ts, 0, 0, 0, 0, 0);
    }
    struct timespec ts = {(time_t)(usec / 1000000), (long)(usec % 1000000) * 1000};
    /* Cannot fail: the interval is valid by construction. */
    (void)askew__sim_sleep(h, CLOCK_MONOTONIC, 0, &ts, "usleep",
                           __builtin_return_address(0));
    return 0;
}

ASKEW_EXPORT unsigned int sleep(unsigned int seconds)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_LIKELY(h == NULL)) {
        unsigned int (*real)(unsigned int) = REAL(sleep);
        if (ASKEW_LIKELY(real != NULL))
            return real(seconds);
        struct timespec ts = {(time_t)seconds, 0};
        askew__raw_syscall(SYS_nanosleep, (long)&ts, 0, 0, 0, 0, 0);
        return 0;
    }
    struct timespec ts = {(time_t)seconds, 0};
    /* As above; sleep returns the seconds left unslept: none. */
    (void)askew__sim_sleep(h, CLOCK_MONOTONIC, 0, &ts, "sleep",
                           __builtin_return_address(0));
    return 0;
}

/* A semaphore that is free is taken without waiting, as the kernel would;
 * otherwise the wait could only time out. */
static int sem_timeout(const struct askew_preload_hooks *h, sem_t *sem,
                       const char *call, long a0, void *ret)
{
    int saved = errno;
    int (*trywait)(sem_t *) = REAL(sem_trywait);
    if (trywait != NULL && trywait(sem) == 0) {
        errno = saved;
        return 0;
    }
    if (errno != EAGAIN)
        return -1; /* EINVAL and friends: the call's own error */
    return askew__refuse_errno(h, ASKEW_VIOLATION_SLEEP, call, a0, 0, ret, ETIMEDOUT);
}

ASKEW_EXPORT int sem_timedwait(sem_t *restrict sem, const struct timespec *restrict abs)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_LIKELY(h == NULL)) {
        int (*real)(sem_t *restrict, const struct timespec *restrict) =
            REAL(sem_timedwait);
        if (ASKEW_LIKELY(real != NULL))
            return real(sem, abs);
        errno = EINTR;
        return -1;
    }
    if (askew__sync_hooks(__builtin_return_address(0)) != NULL)
        return askew__sync_sem_timedwait(h, sem, CLOCK_REALTIME, abs, "sem_timedwait",
                                         __builtin_return_address(0));
    return sem_timeout(h, sem, "sem_timedwait", CLOCK_REALTIME,
                       __builtin_return_address(0));
}

ASKEW_EXPORT int sem_clockwait(sem_t *restrict sem, clockid_t clock,
                               const struct timespec *restrict abs)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_LIKELY(h == NULL)) {
        int (*real)(sem_t *restrict, clockid_t, const struct timespec *restrict) =
            REAL(sem_clockwait);
        if (ASKEW_LIKELY(real != NULL))
            return real(sem, clock, abs);
        errno = EINTR;
        return -1;
    }
    if (askew__sync_hooks(__builtin_return_address(0)) != NULL &&
        askew__sim_clock_known(clock))
        return askew__sync_sem_timedwait(h, sem, clock, abs, "sem_clockwait",
                                         __builtin_return_address(0));
    return sem_timeout(h, sem, "sem_clockwait", clock, __builtin_return_address(0));
}

/* Condvar waits. On the simulation thread no other simulated thread can
 * signal one, so a timed wait can only time out, and what it costs is its
 * time: it moves the node's clock on to its deadline (the sleep hook) and
 * returns ETIMEDOUT at once, with the mutex held as after a real timeout.
 * So code that waits for a predicate until a deadline
 * (std::condition_variable::wait_for) sees the deadline pass and returns,
 * where a wait that cost nothing would have it wait forever. The
 * interpreter's own waits (hooks->interp; every wait under a table from
 * before ABI 1.4) are translated instead: CPython's GIL hand-off waits on a
 * timed condvar on the simulation thread whenever any other thread exists
 * (a pytest-timeout watchdog, say), with a deadline computed from the clock
 * we virtualize; the virtual deadline becomes the same interval on the
 * real clock, so the wait lasts as long as the caller asked and the other
 * thread can hand the GIL back, and virtual time, which must not depend on
 * how long another thread held the GIL, does not move. The condvar's clock
 * is not visible through the API; pthread_cond_timedwait's deadline is
 * taken to be on whichever virtual clock (wall or monotonic) it is nearer. */
static void ts_sub(struct timespec *out, const struct timespec *a,
                   const struct timespec *b)
{
    out->tv_sec = a->tv_sec - b->tv_sec;
    out->tv_nsec = a->tv_nsec - b->tv_nsec;
    if (out->tv_nsec < 0) {
        out->tv_nsec += 1000000000L;
        out->tv_sec -= 1;
    }
    if (out->tv_sec < 0)
        out->tv_sec = out->tv_nsec = 0;
}

static int real_now(clockid_t clock, struct timespec *ts)
{
    int (*real)(clockid_t, struct timespec *) = REAL(clock_gettime);
    if (ASKEW_LIKELY(real != NULL))
        return real(clock, ts);
    return (int)askew__raw_syscall(SYS_clock_gettime, clock, (long)ts, 0, 0, 0, 0);
}

/* The virtual reading of the clock the deadline `abs` is on: `*clock`, or
 * for clock < 0 the nearer of the wall and monotonic clocks (returned
 * through *clock). */
static int virtual_now(const struct askew_preload_hooks *h, clockid_t *clock,
                       const struct timespec *abs, struct timespec *vnow)
{
    struct timespec vwall, vmono;
    if (askew__hook_now(h, ASKEW_CLOCK_REALTIME, &vwall) < 0 ||
        askew__hook_now(h, ASKEW_CLOCK_MONOTONIC, &vmono) < 0)
        return -1;
    int realtime;
    if (*clock < 0) {
        long long dw = (long long)abs->tv_sec - vwall.tv_sec;
        long long dm = (long long)abs->tv_sec - vmono.tv_sec;
        realtime = (dw < 0 ? -dw : dw) < (dm < 0 ? -dm : dm);
        *clock = realtime ? CLOCK_REALTIME : CLOCK_MONOTONIC;
    } else {
        realtime = *clock == CLOCK_REALTIME || *clock == CLOCK_REALTIME_COARSE ||
                   *clock == CLOCK_TAI;
    }
    *vnow = realtime ? vwall : vmono;
    if (*clock == CLOCK_TAI)
        vnow->tv_sec += 37; /* hook_time.c's TAI offset */
    return 0;
}

/* The real deadline on `clock` for a virtual deadline `abs`. */
static int translate(const struct askew_preload_hooks *h, clockid_t *clock,
                     const struct timespec *abs, struct timespec *out)
{
    struct timespec vnow, left, now;
    if (virtual_now(h, clock, abs, &vnow) != 0)
        return -1;
    ts_sub(&left, abs, &vnow);
    if (real_now(*clock, &now) != 0)
        return -1;
    out->tv_sec = now.tv_sec + left.tv_sec;
    out->tv_nsec = now.tv_nsec + left.tv_nsec;
    if (out->tv_nsec >= 1000000000L) {
        out->tv_nsec -= 1000000000L;
        out->tv_sec += 1;
    }
    return 0;
}

int64_t askew__virtual_wait_ns(const struct askew_preload_hooks *h, clockid_t clock,
                               const struct timespec *abs)
{
    if (abs == NULL || abs->tv_nsec < 0 || abs->tv_nsec >= 1000000000L)
        return -EINVAL;
    struct timespec vnow;
    if (virtual_now(h, &clock, abs, &vnow) != 0)
        return -1;
    return ns_after(abs, &vnow);
}

/* A timed wait of the code under test: its time passes, then ETIMEDOUT. */
static int cond_costs_time(const struct askew_preload_hooks *h, clockid_t clock,
                           const struct timespec *abs, const char *call, void *ret)
{
    if (abs == NULL || abs->tv_nsec < 0 || abs->tv_nsec >= 1000000000L)
        return EINVAL;
    const int saved = errno;
    struct timespec vnow;
    int64_t ns = -1;
    if (virtual_now(h, &clock, abs, &vnow) == 0)
        ns = ns_after(abs, &vnow);
    if (ns != 0 && (ns < 0 || askew__hook_sleep(h, ns) != 0))
        askew__refuse(h, ASKEW_VIOLATION_SLEEP, call, abs->tv_sec, abs->tv_nsec, ret);
    errno = saved;
    return ETIMEDOUT;
}

/* 1 when this wait is the interpreter's (or the table predates virtual
 * condvar waits): translated to real time. */
static int cond_translated(const struct askew_preload_hooks *h, void *ret)
{
    return !askew__hooks_have(h, ASKEW_HOOKS_END(interp)) ||
           askew__interp_caller(h, ret);
}

ASKEW_EXPORT int pthread_cond_timedwait(pthread_cond_t *restrict cond,
                                        pthread_mutex_t *restrict mutex,
                                        const struct timespec *restrict abs)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    int (*real)(pthread_cond_t *restrict, pthread_mutex_t *restrict,
                const struct timespec *restrict) = REAL(pthread_cond_timedwait);
    if (ASKEW_UNLIKELY(real == NULL))
        return EINVAL;
    if (ASKEW_LIKELY(h == NULL))
        return real(cond, mutex, abs);
    if (askew__sync_hooks(__builtin_return_address(0)) != NULL)
        return askew__sync_cond_timedwait(h, cond, mutex, -1, abs,
                                          "pthread_cond_timedwait",
                                          __builtin_return_address(0));
    if (!cond_translated(h, __builtin_return_address(0)))
        return cond_costs_time(h, -1, abs, "pthread_cond_timedwait",
                               __builtin_return_address(0));
    int saved = errno;
    clockid_t clock = -1;
    struct timespec deadline;
    if (translate(h, &clock, abs, &deadline) != 0)
        deadline = *abs;
    errno = saved;
    return real(cond, mutex, &deadline);
}

ASKEW_EXPORT int pthread_cond_clockwait(pthread_cond_t *restrict cond,
                                        pthread_mutex_t *restrict mutex,
                                        clockid_t clock,
                                        const struct timespec *restrict abs)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    int (*real)(pthread_cond_t *restrict, pthread_mutex_t *restrict, clockid_t,
                const struct timespec *restrict) = REAL(pthread_cond_clockwait);
    if (ASKEW_UNLIKELY(real == NULL))
        return EINVAL;
    if (ASKEW_LIKELY(h == NULL) || !askew__sim_clock_known(clock))
        return real(cond, mutex, clock, abs);
    if (askew__sync_hooks(__builtin_return_address(0)) != NULL)
        return askew__sync_cond_timedwait(h, cond, mutex, clock, abs,
                                          "pthread_cond_clockwait",
                                          __builtin_return_address(0));
    if (!cond_translated(h, __builtin_return_address(0)))
        return cond_costs_time(h, clock, abs, "pthread_cond_clockwait",
                               __builtin_return_address(0));
    int saved = errno;
    struct timespec deadline;
    if (translate(h, &clock, abs, &deadline) != 0)
        deadline = *abs;
    errno = saved;
    return real(cond, mutex, clock, &deadline);
}

/* sigtimedwait with a timeout: a signal already pending is taken; else no
 * simulated thread can send one, and the wait lasts its timeout on the
 * node's clock (the sleep hook), then EAGAIN, as the kernel times out. */
int askew__sim_sigtimedwait(const struct askew_preload_hooks *h, const sigset_t *set,
                            siginfo_t *info, const struct timespec *tmo, void *ret)
{
    const struct timespec zero = {0, 0};
    int (*real)(const sigset_t *, siginfo_t *, const struct timespec *) =
        REAL(sigtimedwait);
    int sig = real != NULL ? real(set, info, &zero)
                           : (int)askew__raw_syscall(SYS_rt_sigtimedwait, (long)set,
                                                     (long)info, (long)&zero, 8, 0, 0);
    if (sig >= 0 || errno != EAGAIN || tmo == NULL)
        return sig;
    if (tmo->tv_sec < 0 || tmo->tv_nsec < 0 || tmo->tv_nsec >= 1000000000L) {
        errno = EINVAL;
        return -1;
    }
    const int64_t ns = ns_after(tmo, &zero);
    if (ns > 0 && askew__t_actor != 0)
        (void)askew__cthread_sleep(h, ns, "sigtimedwait", ret);
    else if (ns != 0 && (ns < 0 || askew__hook_sleep(h, ns) != 0))
        askew__refuse(h, ASKEW_VIOLATION_SLEEP, "sigtimedwait", tmo->tv_sec,
                      tmo->tv_nsec, ret);
    errno = EAGAIN;
    return -1;
}

ASKEW_EXPORT int sigtimedwait(const sigset_t *restrict set, siginfo_t *restrict info,
                              const struct timespec *restrict tmo)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_UNLIKELY(h != NULL) && tmo != NULL)
        return askew__sim_sigtimedwait(h, set, info, tmo, __builtin_return_address(0));
    int (*real)(const sigset_t *, siginfo_t *, const struct timespec *) =
        REAL(sigtimedwait);
    if (ASKEW_LIKELY(real != NULL))
        return real(set, info, tmo);
    return (int)askew__raw_syscall(SYS_rt_sigtimedwait, (long)set, (long)info,
                                   (long)tmo, 8, 0, 0);
}

/* The poll family: ask the kernel without waiting. Ready fds are still
 * reported; a wait that would have slept is recorded and times out. The
 * decision comes first and is the same whether libc's function was found;
 * each *_now below only forwards, to libc's function or (when dlsym found
 * nothing) to the system call, with the timeout the decision left.
 * Whether an fd fed from outside the run is ready (a pipe from a process
 * started before it, a socket to another process, a terminal) depends on
 * when that outside wrote, in real time: a call that asks about one is
 * refused (EACCES), whatever its timeout (hook_fds.c tells them). */
#define REFUSE_OUTSIDE(h, call, fd)                                                    \
    ASKEW_REFUSE((h), ASKEW_VIOLATION_CLOCK, (call), (fd), 0, EACCES)

/* The first fd of the set fed from outside the run, or -1. */
static int pollfds_outside(const struct pollfd *fds, nfds_t n)
{
    for (nfds_t i = 0; fds != NULL && i < n; i++)
        if (fds[i].fd >= 0 && askew__fd_waits_outside(fds[i].fd))
            return fds[i].fd;
    return -1;
}

static int fdsets_outside(int n, const fd_set *r, const fd_set *w, const fd_set *e)
{
    for (int fd = 0; fd < n && fd < FD_SETSIZE; fd++)
        if (((r != NULL && FD_ISSET(fd, r)) || (w != NULL && FD_ISSET(fd, w)) ||
             (e != NULL && FD_ISSET(fd, e))) &&
            askew__fd_waits_outside(fd))
            return fd;
    return -1;
}
static int poll_now(struct pollfd *fds, nfds_t n, int timeout)
{
    int (*real)(struct pollfd *, nfds_t, int) = REAL(poll);
    if (ASKEW_LIKELY(real != NULL))
        return real(fds, n, timeout);
    struct timespec ts = {timeout / 1000, (long)(timeout % 1000) * 1000000};
    return (int)askew__raw_syscall(SYS_ppoll, (long)fds, (long)n,
                                   timeout < 0 ? 0 : (long)&ts, 0, 8, 0);
}

/* glibc declares poll's and ppoll's fds write_only (the kernel writes each
 * revents), yet a poll reads each events field: GCC's uninitialised-read
 * check, which trusts that declaration, does not apply to these two. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
ASKEW_EXPORT int poll(struct pollfd *fds, nfds_t n, int timeout)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    int outside;
    if (ASKEW_UNLIKELY(h != NULL) && (outside = pollfds_outside(fds, n)) >= 0)
        return REFUSE_OUTSIDE(h, "poll", outside);
    if (ASKEW_LIKELY(h == NULL) || timeout == 0)
        return poll_now(fds, n, timeout);
    int rc = poll_now(fds, n, 0);
    if (rc == 0)
        RECORD(h, "poll", timeout, (long)n);
    return rc;
}

static int ppoll_now(struct pollfd *fds, nfds_t n, const struct timespec *tmo,
                     const sigset_t *mask)
{
    int (*real)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *) =
        REAL(ppoll);
    if (ASKEW_LIKELY(real != NULL))
        return real(fds, n, tmo, mask);
    /* The kernel writes the time left back: give it a copy, as glibc does. */
    struct timespec left = tmo != NULL ? *tmo : (struct timespec){0, 0};
    return (int)askew__raw_syscall(SYS_ppoll, (long)fds, (long)n,
                                   tmo != NULL ? (long)&left : 0, (long)mask, 8, 0);
}

ASKEW_EXPORT int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *tmo,
                       const sigset_t *mask)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    int outside;
    if (ASKEW_UNLIKELY(h != NULL) && (outside = pollfds_outside(fds, n)) >= 0)
        return REFUSE_OUTSIDE(h, "ppoll", outside);
    if (ASKEW_LIKELY(h == NULL) || ts_zero(tmo))
        return ppoll_now(fds, n, tmo, mask);
    struct timespec zero = {0, 0};
    int rc = ppoll_now(fds, n, &zero, mask);
    if (rc == 0)
        RECORD(h, "ppoll", tmo != NULL ? tmo->tv_sec : -1, (long)n);
    return rc;
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

/* select and pselect both reach the kernel's pselect6, which takes the
 * signal mask as a {mask, size} pair and a timespec it writes back. */
static int pselect_raw(int n, fd_set *r, fd_set *w, fd_set *e, struct timespec *tmo,
                       const sigset_t *mask)
{
    const struct {
        const sigset_t *mask;
        size_t size;
    } data = {mask, 8};
    return (int)askew__raw_syscall(SYS_pselect6, n, (long)r, (long)w, (long)e,
                                   (long)tmo, mask != NULL ? (long)&data : 0);
}

static int select_now(int n, fd_set *restrict r, fd_set *restrict w, fd_set *restrict e,
                      struct timeval *restrict tmo)
{
    int (*real)(int, fd_set *restrict, fd_set *restrict, fd_set *restrict,
                struct timeval *restrict) = REAL(select);
    if (ASKEW_LIKELY(real != NULL))
        return real(n, r, w, e, tmo);
    struct timespec ts = {0, 0};
    if (tmo != NULL)
        ts = (struct timespec){tmo->tv_sec, (long)tmo->tv_usec * 1000};
    int rc = pselect_raw(n, r, w, e, tmo != NULL ? &ts : NULL, NULL);
    if (tmo != NULL) {
        tmo->tv_sec = ts.tv_sec;
        tmo->tv_usec = ts.tv_nsec / 1000;
    }
    return rc;
}

ASKEW_EXPORT int select(int n, fd_set *restrict r, fd_set *restrict w,
                        fd_set *restrict e, struct timeval *restrict tmo)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    int outside;
    if (ASKEW_UNLIKELY(h != NULL) && (outside = fdsets_outside(n, r, w, e)) >= 0)
        return REFUSE_OUTSIDE(h, "select", outside);
    if (ASKEW_LIKELY(h == NULL) ||
        (tmo != NULL && tmo->tv_sec == 0 && tmo->tv_usec == 0))
        return select_now(n, r, w, e, tmo);
    struct timeval zero = {0, 0};
    int rc = select_now(n, r, w, e, &zero);
    if (rc == 0) {
        RECORD(h, "select", tmo != NULL ? (long)tmo->tv_sec : -1, n);
        if (tmo != NULL)
            *tmo = zero; /* Linux reports the time left: none */
    }
    return rc;
}

static int pselect_now(int n, fd_set *restrict r, fd_set *restrict w,
                       fd_set *restrict e, const struct timespec *restrict tmo,
                       const sigset_t *restrict mask)
{
    int (*real)(int, fd_set *restrict, fd_set *restrict, fd_set *restrict,
                const struct timespec *restrict, const sigset_t *restrict) =
        REAL(pselect);
    if (ASKEW_LIKELY(real != NULL))
        return real(n, r, w, e, tmo, mask);
    struct timespec left = tmo != NULL ? *tmo : (struct timespec){0, 0};
    return pselect_raw(n, r, w, e, tmo != NULL ? &left : NULL, mask);
}

ASKEW_EXPORT int pselect(int n, fd_set *restrict r, fd_set *restrict w,
                         fd_set *restrict e, const struct timespec *restrict tmo,
                         const sigset_t *restrict mask)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    int outside;
    if (ASKEW_UNLIKELY(h != NULL) && (outside = fdsets_outside(n, r, w, e)) >= 0)
        return REFUSE_OUTSIDE(h, "pselect", outside);
    if (ASKEW_LIKELY(h == NULL) || ts_zero(tmo))
        return pselect_now(n, r, w, e, tmo, mask);
    struct timespec zero = {0, 0};
    int rc = pselect_now(n, r, w, e, &zero, mask);
    if (rc == 0)
        RECORD(h, "pselect", tmo != NULL ? (long)tmo->tv_sec : -1, n);
    return rc;
}

static int epoll_now(int epfd, struct epoll_event *events, int max, int timeout,
                     const sigset_t *mask, int with_mask)
{
    if (with_mask) {
        int (*real)(int, struct epoll_event *, int, int, const sigset_t *) =
            REAL(epoll_pwait);
        if (ASKEW_LIKELY(real != NULL))
            return real(epfd, events, max, timeout, mask);
    } else {
        int (*real)(int, struct epoll_event *, int, int) = REAL(epoll_wait);
        if (ASKEW_LIKELY(real != NULL))
            return real(epfd, events, max, timeout);
    }
    return (int)askew__raw_syscall(SYS_epoll_pwait, epfd, (long)events, max, timeout,
                                   (long)mask, 8);
}

/* epoll_wait is epoll_pwait without a mask; `call` names the interposer. */
static int epoll_sim(int epfd, struct epoll_event *events, int max, int timeout,
                     const sigset_t *mask, int with_mask, const char *call, void *ret)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_LIKELY(h == NULL) || timeout == 0)
        return epoll_now(epfd, events, max, timeout, mask, with_mask);
    int rc = epoll_now(epfd, events, max, 0, mask, with_mask);
    if (rc == 0)
        askew__refuse(h, ASKEW_VIOLATION_SLEEP, call, timeout, epfd, ret);
    return rc;
}

ASKEW_EXPORT int epoll_wait(int epfd, struct epoll_event *events, int max, int timeout)
{
    return epoll_sim(epfd, events, max, timeout, NULL, 0, "epoll_wait",
                     __builtin_return_address(0));
}

ASKEW_EXPORT int epoll_pwait(int epfd, struct epoll_event *events, int max, int timeout,
                             const sigset_t *mask)
{
    return epoll_sim(epfd, events, max, timeout, mask, 1, "epoll_pwait",
                     __builtin_return_address(0));
}
