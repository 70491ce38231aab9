/* SPDX-License-Identifier: Apache-2.0 */
/* Time reads: clock_gettime, clock_getres, gettimeofday, time and
 * timespec_get. Outside a simulation each is one branch and a tail call to
 * libc; on the simulation thread they answer from hooks->now, so C code
 * sees the same virtual clock as Python. They never read the host clock on
 * the simulation path, except for clocks the simulation does not model
 * (dynamic and unknown ids), which stay real. */
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>

#include "internal.h"

/* glibc >= 2.38 knows these bases; older headers do not name them. */
#define BASE_MONOTONIC     2
#define BASE_ACTIVE        3
#define BASE_THREAD_ACTIVE 4
#define TAI_OFFSET_S       37

/* An ASKEW_CLOCK_* kind, or -1 for clocks that are not ours. */
static int clock_kind(clockid_t id)
{
    switch (id) {
    case CLOCK_REALTIME:
    case CLOCK_REALTIME_COARSE:
    case CLOCK_REALTIME_ALARM:
    case CLOCK_TAI:
        return ASKEW_CLOCK_REALTIME;
    case CLOCK_MONOTONIC:
    case CLOCK_MONOTONIC_RAW:
    case CLOCK_MONOTONIC_COARSE:
    case CLOCK_BOOTTIME:
    case CLOCK_BOOTTIME_ALARM:
        return ASKEW_CLOCK_MONOTONIC;
    case CLOCK_PROCESS_CPUTIME_ID:
    case CLOCK_THREAD_CPUTIME_ID:
        return ASKEW_CLOCK_CPUTIME;
    default:
        return -1; /* negative (per-process/thread/fd) and unknown ids */
    }
}

int askew__sim_clock_known(clockid_t id)
{
    return clock_kind(id) >= 0;
}

static int real_clock_gettime(clockid_t id, struct timespec *ts)
{
    int (*real)(clockid_t, struct timespec *) = REAL(clock_gettime);
    if (ASKEW_LIKELY(real != NULL))
        return real(id, ts);
    return (int)askew__raw_syscall(SYS_clock_gettime, id, (long)ts, 0, 0, 0, 0);
}

int askew__sim_clock_gettime(const struct askew_preload_hooks *h, clockid_t id,
                             struct timespec *ts)
{
    int kind = clock_kind(id);
    if (kind < 0)
        return real_clock_gettime(id, ts);
    if (ts == NULL) {
        errno = EFAULT;
        return -1;
    }
    int rc = askew__hook_now(h, kind, ts);
    if (rc < 0) {
        errno = -rc;
        return -1;
    }
    if (id == CLOCK_TAI)
        ts->tv_sec += TAI_OFFSET_S;
    return 0;
}

int askew__sim_clock_getres(clockid_t id, struct timespec *res)
{
    if (res != NULL) {
        res->tv_sec = 0;
        res->tv_nsec = 1; /* virtual time counts whole nanoseconds */
    }
    (void)id;
    return 0;
}

ASKEW_EXPORT int clock_gettime(clockid_t id, struct timespec *ts)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_LIKELY(h == NULL))
        return real_clock_gettime(id, ts);
    return askew__sim_clock_gettime(h, id, ts);
}
ASKEW_SELF(clock_gettime);

ASKEW_EXPORT int clock_getres(clockid_t id, struct timespec *res)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_LIKELY(h == NULL) || clock_kind(id) < 0) {
        int (*real)(clockid_t, struct timespec *) = REAL(clock_getres);
        if (ASKEW_LIKELY(real != NULL))
            return real(id, res);
        return (int)askew__raw_syscall(SYS_clock_getres, id, (long)res, 0, 0, 0, 0);
    }
    return askew__sim_clock_getres(id, res);
}

ASKEW_EXPORT int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_LIKELY(h == NULL)) {
        int (*real)(struct timeval *restrict, void *restrict) = REAL(gettimeofday);
        if (ASKEW_LIKELY(real != NULL))
            return real(tv, tz);
        return (int)askew__raw_syscall(SYS_gettimeofday, (long)tv, (long)tz, 0, 0, 0,
                                       0);
    }
    if (ASKEW_LAUNDER(tv) != NULL) {
        struct timespec ts;
        int rc = askew__hook_now(h, /* realtime */ 1, &ts);
        if (rc < 0) {
            errno = -rc;
            return -1;
        }
        tv->tv_sec = ts.tv_sec;
        tv->tv_usec = ts.tv_nsec / 1000;
    }
    if (tz != NULL) {
        /* The simulated world runs in UTC, whatever the host says. */
        struct timezone *z = tz;
        z->tz_minuteswest = 0;
        z->tz_dsttime = 0;
    }
    return 0;
}
ASKEW_SELF(gettimeofday);

ASKEW_EXPORT time_t time(time_t *tloc)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_LIKELY(h == NULL)) {
        time_t (*real)(time_t *) = REAL(time);
        if (ASKEW_LIKELY(real != NULL))
            return real(tloc);
        return (time_t)askew__raw_syscall(SYS_time, (long)tloc, 0, 0, 0, 0, 0);
    }
    struct timespec ts;
    int rc = askew__hook_now(h, /* realtime */ 1, &ts);
    if (rc < 0) {
        errno = -rc;
        return (time_t)-1;
    }
    if (tloc != NULL)
        *tloc = ts.tv_sec;
    return ts.tv_sec;
}
ASKEW_SELF(time);

ASKEW_EXPORT int timespec_get(struct timespec *ts, int base)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_LIKELY(h == NULL)) {
        int (*real)(struct timespec *, int) = REAL(timespec_get);
        if (ASKEW_LIKELY(real != NULL))
            return real(ts, base);
        if (base != TIME_UTC)
            return 0;
        return real_clock_gettime(CLOCK_REALTIME, ts) == 0 ? base : 0;
    }
    int realtime;
    switch (base) {
    case TIME_UTC:
        realtime = 1;
        break;
    case BASE_MONOTONIC:
        realtime = ASKEW_CLOCK_MONOTONIC;
        break;
    case BASE_ACTIVE:
    case BASE_THREAD_ACTIVE:
        realtime = ASKEW_CLOCK_CPUTIME;
        break;
    default:
        return 0; /* C11: an unsupported base fails with 0 */
    }
    if (ASKEW_LAUNDER(ts) == NULL || askew__hook_now(h, realtime, ts) < 0)
        return 0;
    return base;
}
