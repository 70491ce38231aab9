/* SPDX-License-Identifier: Apache-2.0 */
/* Time reads: clock_gettime, clock_getres, gettimeofday, time,
 * timespec_get, and the CPU-time reads clock, times and getrusage. Outside a simulation
 * each is one branch and a tail call to libc; on the simulation thread they answer from
 * hooks->now, so C code sees the same virtual clock as Python. They never read the host
 * clock on the simulation path, except for clocks the simulation does not model
 * (dynamic and unknown ids), which stay real. */
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/times.h>
#include <time.h>
#include <unistd.h>

#include "hook_ownrng.h"
#include "hook_time.h"
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
    ASKEW_OWN_RNG(h, "clock_gettime");
    return askew__sim_clock_gettime(h, id, ts);
}

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
    ASKEW_OWN_RNG(h, "gettimeofday");
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

ASKEW_EXPORT time_t time(time_t *tloc)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_LIKELY(h == NULL)) {
        time_t (*real)(time_t *) = REAL(time);
        if (ASKEW_LIKELY(real != NULL))
            return real(tloc);
        return (time_t)askew__raw_syscall(SYS_time, (long)tloc, 0, 0, 0, 0, 0);
    }
    ASKEW_OWN_RNG(h, "time");
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
    ASKEW_OWN_RNG(h, "timespec_get");
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

/* ---- CPU time: clock, times, getrusage ------------------------------------ */

/* CPU time in a run is askew's documented deterministic value (see
 * ASKEW_CLOCK_CPUTIME); 0, or -1 with errno set. */
static int sim_cpu(const struct askew_preload_hooks *h, int kind, struct timespec *ts)
{
    int rc = askew__hook_now(h, kind, ts);
    if (rc < 0) {
        errno = -rc;
        return -1;
    }
    return 0;
}

static clock_t to_ticks(const struct timespec *ts, long per_s)
{
    return (clock_t)((long long)ts->tv_sec * per_s +
                     (long long)ts->tv_nsec / (1000000000LL / per_s));
}

ASKEW_EXPORT clock_t clock(void)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    struct timespec ts;
    if (ASKEW_LIKELY(h == NULL)) {
        clock_t (*real)(void) = REAL(clock);
        if (ASKEW_LIKELY(real != NULL))
            return real();
        if (real_clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) < 0)
            return (clock_t)-1;
        return to_ticks(&ts, CLOCKS_PER_SEC);
    }
    if (sim_cpu(h, ASKEW_CLOCK_CPUTIME, &ts) < 0)
        return (clock_t)-1;
    return to_ticks(&ts, CLOCKS_PER_SEC);
}

ASKEW_EXPORT clock_t times(struct tms *buf)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_LIKELY(h == NULL)) {
        clock_t (*real)(struct tms *) = REAL(times);
        if (ASKEW_LIKELY(real != NULL))
            return real(buf);
        return (clock_t)askew__raw_syscall(SYS_times, (long)buf, 0, 0, 0, 0, 0);
    }
    const long hz = sysconf(_SC_CLK_TCK);
    struct timespec cpu, mono;
    if (hz <= 0 || sim_cpu(h, ASKEW_CLOCK_CPUTIME, &cpu) < 0 ||
        sim_cpu(h, ASKEW_CLOCK_MONOTONIC, &mono) < 0)
        return (clock_t)-1;
    if (ASKEW_LAUNDER(buf) != NULL) {
        /* All of it user time; no child ever ran. */
        buf->tms_utime = to_ticks(&cpu, hz);
        buf->tms_stime = buf->tms_cutime = buf->tms_cstime = 0;
    }
    return to_ticks(&mono, hz); /* elapsed: the node's monotonic clock */
}

ASKEW_EXPORT int getrusage(__rusage_who_t who, struct rusage *usage)
{
    int (*real)(__rusage_who_t, struct rusage *) = REAL(getrusage);
    int rc = ASKEW_LIKELY(real != NULL)
                 ? real(who, usage)
                 : (int)askew__raw_syscall(SYS_getrusage, who, (long)usage, 0, 0, 0, 0);
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_LIKELY(h == NULL) || rc != 0)
        return rc;
    /* The times become virtual; the other fields (memory, faults) stay the
     * host's: they order nothing askew schedules. */
    struct timespec cpu = {0, 0};
    if (who != RUSAGE_CHILDREN && sim_cpu(h, ASKEW_CLOCK_CPUTIME, &cpu) < 0)
        return -1;
    usage->ru_utime.tv_sec = cpu.tv_sec;
    usage->ru_utime.tv_usec = cpu.tv_nsec / 1000;
    usage->ru_stime.tv_sec = 0;
    usage->ru_stime.tv_usec = 0;
    return 0;
}
