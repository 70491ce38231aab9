/* SPDX-License-Identifier: Apache-2.0 */
/* Timers and clocks the simulation does not model: interval timers
 * (setitimer, alarm, ualarm), POSIX timers (timer_create, timer_settime,
 * timer_gettime), timerfds, and the kernel's own views of time (sysinfo's
 * uptime, the NTP and adjtimex readings). A timer armed inside a run
 * would fire in real time, at a step that differs per process (and a
 * SIGEV_THREAD timer starts a glibc thread), so inside a run arming one,
 * making a POSIX timer or a timerfd, or reading how long one has left, is
 * refused with EACCES and recorded (alarm and ualarm, which cannot fail,
 * return 0 and are recorded); disarming passes. The readings are served:
 * sysinfo's uptime is the node's monotonic clock, the NTP and adjtimex
 * time fields its wall clock (the other fields stay the host's: they order
 * nothing), and an adjtimex or clock_adjtime that would set the clock is
 * refused. Outside a run every call is libc's. */
#include <signal.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <sys/timex.h>
#include <time.h>
#include <unistd.h>

#include "hook_time.h"
#include "internal.h"

#define RET __builtin_return_address(0)
#define REFUSE_CLOCK(h, call, a0, a1)                                                  \
    ASKEW_REFUSE((h), ASKEW_VIOLATION_CLOCK, (call), (a0), (a1), EACCES)

static int ts_armed(const struct timespec *ts)
{
    return ts != NULL && (ts->tv_sec != 0 || ts->tv_nsec != 0);
}

ASKEW_EXPORT int setitimer(__itimer_which_t which,
                           const struct itimerval *restrict value,
                           struct itimerval *restrict old)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_UNLIKELY(h != NULL) && value != NULL &&
        (value->it_value.tv_sec != 0 || value->it_value.tv_usec != 0))
        return REFUSE_CLOCK(h, "setitimer", which, value->it_value.tv_sec);
    int (*real)(__itimer_which_t, const struct itimerval *restrict,
                struct itimerval *restrict) = REAL(setitimer);
    if (ASKEW_LIKELY(real != NULL))
        return real(which, value, old);
    return (int)askew__raw_syscall(SYS_setitimer, which, (long)value, (long)old, 0, 0,
                                   0);
}

ASKEW_EXPORT unsigned int alarm(unsigned int seconds)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_UNLIKELY(h != NULL) && seconds != 0) {
        ASKEW_RECORD(h, ASKEW_VIOLATION_CLOCK, "alarm", seconds, 0);
        return 0;
    }
    unsigned int (*real)(unsigned int) = REAL(alarm);
    if (ASKEW_LIKELY(real != NULL))
        return real(seconds);
    struct itimerval v = {{0, 0}, {(time_t)seconds, 0}}, old = {{0, 0}, {0, 0}};
    (void)askew__raw_syscall(SYS_setitimer, ITIMER_REAL, (long)&v, (long)&old, 0, 0, 0);
    return (unsigned int)old.it_value.tv_sec;
}

ASKEW_EXPORT useconds_t ualarm(useconds_t usecs, useconds_t interval)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_UNLIKELY(h != NULL) && usecs != 0) {
        ASKEW_RECORD(h, ASKEW_VIOLATION_CLOCK, "ualarm", usecs, interval);
        return 0;
    }
    useconds_t (*real)(useconds_t, useconds_t) = REAL(ualarm);
    if (ASKEW_LIKELY(real != NULL))
        return real(usecs, interval);
    errno = EINVAL;
    return (useconds_t)-1;
}

ASKEW_EXPORT int timer_create(clockid_t clock, struct sigevent *restrict sevp,
                              timer_t *restrict id)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_UNLIKELY(h != NULL))
        return REFUSE_CLOCK(h, "timer_create", clock,
                            sevp != NULL ? sevp->sigev_notify : SIGEV_SIGNAL);
    int (*real)(clockid_t, struct sigevent *restrict, timer_t *restrict) =
        REAL(timer_create);
    if (ASKEW_LIKELY(real != NULL))
        return real(clock, sevp, id);
    errno = EAGAIN; /* glibc keeps SIGEV_THREAD's helper thread: no raw path */
    return -1;
}

ASKEW_EXPORT int timer_settime(timer_t id, int flags,
                               const struct itimerspec *restrict value,
                               struct itimerspec *restrict old)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_UNLIKELY(h != NULL) && value != NULL && ts_armed(&value->it_value))
        return REFUSE_CLOCK(h, "timer_settime", flags, value->it_value.tv_sec);
    int (*real)(timer_t, int, const struct itimerspec *restrict,
                struct itimerspec *restrict) = REAL(timer_settime);
    if (ASKEW_LIKELY(real != NULL))
        return real(id, flags, value, old);
    errno = EINVAL;
    return -1;
}

ASKEW_EXPORT int timer_gettime(timer_t id, struct itimerspec *value)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_UNLIKELY(h != NULL))
        return REFUSE_CLOCK(h, "timer_gettime", 0, 0);
    int (*real)(timer_t, struct itimerspec *) = REAL(timer_gettime);
    if (ASKEW_LIKELY(real != NULL))
        return real(id, value);
    errno = EINVAL;
    return -1;
}

ASKEW_EXPORT int timerfd_create(clockid_t clock, int flags)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_UNLIKELY(h != NULL))
        return REFUSE_CLOCK(h, "timerfd_create", clock, flags);
    int (*real)(clockid_t, int) = REAL(timerfd_create);
    if (ASKEW_LIKELY(real != NULL))
        return real(clock, flags);
    return (int)askew__raw_syscall(SYS_timerfd_create, clock, flags, 0, 0, 0, 0);
}

ASKEW_EXPORT int timerfd_settime(int fd, int flags, const struct itimerspec *value,
                                 struct itimerspec *old)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_UNLIKELY(h != NULL) && value != NULL && ts_armed(&value->it_value))
        return REFUSE_CLOCK(h, "timerfd_settime", fd, value->it_value.tv_sec);
    int (*real)(int, int, const struct itimerspec *, struct itimerspec *) =
        REAL(timerfd_settime);
    if (ASKEW_LIKELY(real != NULL))
        return real(fd, flags, value, old);
    return (int)askew__raw_syscall(SYS_timerfd_settime, fd, flags, (long)value,
                                   (long)old, 0, 0);
}

ASKEW_EXPORT int timerfd_gettime(int fd, struct itimerspec *value)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_UNLIKELY(h != NULL))
        return REFUSE_CLOCK(h, "timerfd_gettime", fd, 0);
    int (*real)(int, struct itimerspec *) = REAL(timerfd_gettime);
    if (ASKEW_LIKELY(real != NULL))
        return real(fd, value);
    return (int)askew__raw_syscall(SYS_timerfd_gettime, fd, (long)value, 0, 0, 0, 0);
}

/* ---- the kernel's readings ------------------------------------------------ */

static int sim_sysinfo(const struct askew_preload_hooks *h, struct sysinfo *info)
{
    struct timespec mono;
    if (info == NULL || askew__sim_clock_gettime(h, CLOCK_BOOTTIME, &mono) != 0)
        return 0;
    info->uptime = (long)mono.tv_sec;
    return 0;
}

ASKEW_EXPORT int sysinfo(struct sysinfo *info)
{
    int (*real)(struct sysinfo *) = REAL(sysinfo);
    int rc = ASKEW_LIKELY(real != NULL)
                 ? real(info)
                 : (int)askew__raw_syscall(SYS_sysinfo, (long)info, 0, 0, 0, 0, 0);
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_UNLIKELY(h != NULL) && rc == 0)
        return sim_sysinfo(h, info);
    return rc;
}

/* The time a struct timex carries: microseconds, or nanoseconds with
 * STA_NANO set. */
static int timex_served(const struct askew_preload_hooks *h, struct timex *tx, long rc)
{
    struct timespec wall;
    if (rc >= 0 && tx != NULL &&
        askew__sim_clock_gettime(h, CLOCK_REALTIME, &wall) == 0) {
        tx->time.tv_sec = wall.tv_sec;
        tx->time.tv_usec =
            (tx->status & STA_NANO) != 0 ? wall.tv_nsec : wall.tv_nsec / 1000;
    }
    return (int)rc;
}

/* 1 when an adjtimex request would set or steer the clock: refused. */
static int timex_sets(const struct timex *tx)
{
    return tx != NULL && tx->modes != 0;
}

ASKEW_EXPORT int adjtimex(struct timex *tx)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_UNLIKELY(h != NULL) && timex_sets(tx))
        return REFUSE_CLOCK(h, "adjtimex", tx->modes, 0);
    int (*real)(struct timex *) = REAL(adjtimex);
    long rc = ASKEW_LIKELY(real != NULL)
                  ? real(tx)
                  : askew__raw_syscall(SYS_adjtimex, (long)tx, 0, 0, 0, 0, 0);
    return ASKEW_UNLIKELY(h != NULL) ? timex_served(h, tx, rc) : (int)rc;
}

ASKEW_EXPORT int clock_adjtime(clockid_t clock, struct timex *tx)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_UNLIKELY(h != NULL) && timex_sets(tx))
        return REFUSE_CLOCK(h, "clock_adjtime", clock, tx->modes);
    int (*real)(clockid_t, struct timex *) = REAL(clock_adjtime);
    long rc = ASKEW_LIKELY(real != NULL)
                  ? real(clock, tx)
                  : askew__raw_syscall(SYS_clock_adjtime, clock, (long)tx, 0, 0, 0, 0);
    return ASKEW_UNLIKELY(h != NULL) ? timex_served(h, tx, rc) : (int)rc;
}

/* ntp_gettimex, and the ntp_gettime of binaries built before glibc made
 * the name an alias of it: both begin with the same struct timeval. */
static int ntp_served(struct ntptimeval *ntv, int rc)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    struct timespec wall;
    if (ASKEW_UNLIKELY(h != NULL) && rc >= 0 && ntv != NULL &&
        askew__sim_clock_gettime(h, CLOCK_REALTIME, &wall) == 0) {
        ntv->time.tv_sec = wall.tv_sec;
        ntv->time.tv_usec = wall.tv_nsec / 1000;
    }
    return rc;
}

ASKEW_EXPORT int ntp_gettimex(struct ntptimeval *ntv)
{
    int (*real)(struct ntptimeval *) = REAL(ntp_gettimex);
    if (ASKEW_UNLIKELY(real == NULL)) {
        errno = ENOSYS;
        return -1;
    }
    return ntp_served(ntv, real(ntv));
}

/* Under its own name: <sys/timex.h> renames ntp_gettime to ntp_gettimex. */
int askew_ntp_gettime(struct ntptimeval *ntv) __asm__("ntp_gettime");
ASKEW_EXPORT int askew_ntp_gettime(struct ntptimeval *ntv)
{
    int (*real)(struct ntptimeval *) =
        (int (*)(struct ntptimeval *))askew__real(FN_ntp_gettime);
    if (ASKEW_UNLIKELY(real == NULL)) {
        errno = ENOSYS;
        return -1;
    }
    return ntp_served(ntv, real(ntv));
}
