/* SPDX-License-Identifier: Apache-2.0 */
/* Thread creation: pthread_create. A thread started from the simulation
 * thread would run outside the seeded schedule, so inside a run it is
 * refused with EAGAIN (CPython raises "can't start new thread") and
 * recorded. Threads started anywhere else, and every call outside a run,
 * go to libc untouched. */
#include <pthread.h>

#include "internal.h"

ASKEW_EXPORT int pthread_create(pthread_t *restrict thread,
                                const pthread_attr_t *restrict attr,
                                void *(*start)(void *), void *restrict arg)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_LIKELY(h == NULL)) {
        int (*real)(pthread_t *restrict, const pthread_attr_t *restrict,
                    void *(*)(void *), void *restrict) = REAL(pthread_create);
        if (ASKEW_LIKELY(real != NULL))
            return real(thread, attr, start, arg);
        return EAGAIN; /* no raw syscall makes a pthread */
    }
    askew__refuse(h, ASKEW_VIOLATION_THREAD, "pthread_create", (long)(uintptr_t)start,
                  0, __builtin_return_address(0));
    return EAGAIN;
}
ASKEW_SELF(pthread_create);
