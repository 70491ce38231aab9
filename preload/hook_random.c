/* SPDX-License-Identifier: Apache-2.0 */
/* Entropy: getrandom, getentropy, the arc4random family and
 * getauxval(AT_RANDOM). On the simulation thread every byte comes from
 * hooks->random, the run's entropy stream, and each call keeps libc's
 * contract (EINVAL for bad flags, EIO past 256 bytes for getentropy). A
 * zero-length request draws nothing, so a probe cannot shift later bytes,
 * and no path here ever reports ENOSYS or EPERM, which would make CPython
 * give up on getrandom for good. AT_RANDOM, the kernel's 16 random bytes
 * for the process, is inside a run the address of 16 bytes the run drew
 * at its first such call (the process's own are left as they are: glibc
 * took its stack guard from them at start-up). */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hook_ownrng.h"
#include "hook_random.h"
#include "internal.h"

#ifndef GRND_INSECURE
#define GRND_INSECURE 0x0004
#endif
#define GRND_KNOWN (GRND_NONBLOCK | GRND_RANDOM | GRND_INSECURE)
/* The kernel caps one read at MAX_RW_COUNT; so do we. */
#define MAX_READ ((size_t)INT_MAX & ~(size_t)4095)

/* glibc declares these from 2.36 on; older headers do not. */
uint32_t arc4random(void);
void arc4random_buf(void *buf, size_t n);
uint32_t arc4random_uniform(uint32_t upper_bound);

static int fill(const struct askew_preload_hooks *h, void *buf, size_t len)
{
    int rc = askew__hook_random(h, buf, len);
    if (rc >= 0)
        return 0;
    /* A failing stream must still look like a working getrandom. */
    return rc == -ENOSYS || rc == -EPERM ? -EIO : rc;
}

long askew__sim_getrandom(const struct askew_preload_hooks *h, void *buf, size_t len,
                          unsigned int flags)
{
    if ((flags & ~(unsigned int)GRND_KNOWN) != 0 ||
        (flags & (GRND_RANDOM | GRND_INSECURE)) == (GRND_RANDOM | GRND_INSECURE)) {
        errno = EINVAL;
        return -1;
    }
    if (len == 0)
        return 0;
    if (len > MAX_READ)
        len = MAX_READ;
    int rc = fill(h, buf, len);
    if (rc < 0) {
        errno = -rc;
        return -1;
    }
    return (long)len;
}

ASKEW_EXPORT ssize_t getrandom(void *buf, size_t len, unsigned int flags)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_LIKELY(h == NULL)) {
        ssize_t (*real)(void *, size_t, unsigned int) = REAL(getrandom);
        if (ASKEW_LIKELY(real != NULL))
            return real(buf, len, flags);
        return askew__raw_syscall(SYS_getrandom, (long)buf, (long)len, flags, 0, 0, 0);
    }
    return askew__sim_getrandom(h, buf, len, flags);
}

ASKEW_EXPORT int getentropy(void *buf, size_t len)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_LIKELY(h == NULL)) {
        int (*real)(void *, size_t) = REAL(getentropy);
        if (ASKEW_LIKELY(real != NULL))
            return real(buf, len);
        if (len > 256) {
            errno = EIO;
            return -1;
        }
        long n = askew__raw_syscall(SYS_getrandom, (long)buf, (long)len, 0, 0, 0, 0);
        return n == (long)len ? 0 : -1;
    }
    ASKEW_OWN_RNG(h, "getentropy");
    if (len > 256) {
        errno = EIO;
        return -1;
    }
    if (len == 0)
        return 0;
    int rc = fill(h, buf, len);
    if (rc < 0) {
        errno = -rc;
        return -1;
    }
    return 0;
}

/* arc4random cannot fail; glibc aborts if the kernel refuses. Here a
 * failing stream yields zeros: still deterministic, and the run's own
 * checks will have something to say about the stream. */
static void sim_buf(const struct askew_preload_hooks *h, void *buf, size_t n)
{
    if (n == 0)
        return;
    if (fill(h, buf, n) < 0) {
        unsigned char *p = buf;
        for (size_t i = 0; i < n; i++)
            p[i] = 0;
    }
}

/* Before glibc 2.36 there is no real arc4random; the kernel stands in. */
static void real_buf(void *buf, size_t n)
{
    unsigned char *p = buf;
    while (n > 0) {
        long got = askew__raw_syscall(SYS_getrandom, (long)p, (long)n, 0, 0, 0, 0);
        if (got < 0 && errno != EINTR)
            abort(); /* what glibc's arc4random does when the kernel refuses */
        if (got <= 0)
            continue;
        p += got;
        n -= (size_t)got;
    }
}

ASKEW_EXPORT uint32_t arc4random(void)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    uint32_t v;
    if (ASKEW_LIKELY(h == NULL)) {
        uint32_t (*real)(void) = REAL(arc4random);
        if (ASKEW_LIKELY(real != NULL))
            return real();
        int saved = errno;
        real_buf(&v, sizeof(v));
        errno = saved;
        return v;
    }
    sim_buf(h, &v, sizeof(v));
    return v;
}

ASKEW_EXPORT void arc4random_buf(void *buf, size_t n)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_LIKELY(h == NULL)) {
        void (*real)(void *, size_t) = REAL(arc4random_buf);
        if (ASKEW_LIKELY(real != NULL)) {
            real(buf, n);
            return;
        }
        int saved = errno;
        real_buf(buf, n);
        errno = saved;
        return;
    }
    sim_buf(h, buf, n);
}

ASKEW_EXPORT uint32_t arc4random_uniform(uint32_t upper_bound)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_LIKELY(h == NULL)) {
        uint32_t (*real)(uint32_t) = REAL(arc4random_uniform);
        if (ASKEW_LIKELY(real != NULL))
            return real(upper_bound);
    }
    if (upper_bound < 2)
        return 0;
    /* Rejection sampling: uniform, and the number of draws depends only on
     * the bytes drawn, so it replays. Not through arc4random(): a call to
     * an exported name would bind to whoever comes first. */
    uint32_t min = (uint32_t)-upper_bound % upper_bound;
    for (;;) {
        uint32_t r;
        if (h != NULL) {
            sim_buf(h, &r, sizeof(r));
        } else {
            int saved = errno;
            real_buf(&r, sizeof(r));
            errno = saved;
        }
        if (r >= min)
            return r % upper_bound;
    }
}

/* The run's AT_RANDOM: drawn at the run's first getauxval(AT_RANDOM). */
static unsigned char run_at_random[16];
static int run_at_random_drawn;

void askew__auxv_run_begins(void)
{
    run_at_random_drawn = 0;
}

ASKEW_EXPORT unsigned long getauxval(unsigned long type)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_UNLIKELY(h != NULL) && type == AT_RANDOM) {
        if (!run_at_random_drawn) {
            sim_buf(h, run_at_random, sizeof(run_at_random));
            run_at_random_drawn = 1;
        }
        return (unsigned long)(uintptr_t)run_at_random;
    }
    unsigned long (*real)(unsigned long) = REAL(getauxval);
    if (ASKEW_LIKELY(real != NULL))
        return real(type);
    errno = ENOENT;
    return 0;
}
