/* SPDX-License-Identifier: Apache-2.0 */
/* Threads: pthread_create, and handing work to a thread that already
 * exists. A thread started from the simulation thread would run outside
 * the seeded schedule, so inside a run it is refused with EAGAIN (CPython
 * raises "can't start new thread") and recorded. A pool started before the
 * run is woken by a lock release instead, and its result waited for with a
 * lock acquire: every CPython lock is a semaphore, so on the simulation
 * thread every sem_post (a put to an empty work queue releases its lock),
 * and a sem_wait that would block (only another thread can let it
 * through), are put to the extension's handoff hook, which says whether that is work
 * handed to another thread (askew's: an executor's submit or result). If so it is
 * recorded; the call itself still completes, or the lock would stay taken
 * for good (and CPython retries an interrupted sem_wait forever), and the
 * run fails right after it. Threads started anywhere else, and every call
 * outside a run, go to libc untouched. */
#include <pthread.h>
#include <semaphore.h>

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
    ASKEW_RECORD(h, ASKEW_VIOLATION_THREAD, "pthread_create", (long)(uintptr_t)start,
                 0);
    return EAGAIN;
}

ASKEW_EXPORT int sem_post(sem_t *sem)
{
    int (*real)(sem_t *) = REAL(sem_post);
    int rc = -1;
    if (ASKEW_LIKELY(real != NULL))
        rc = real(sem);
    else
        errno = ENOSYS;
    /* After the post, so the hook never runs while the semaphore is held. */
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_UNLIKELY(h != NULL) && askew__hook_handoff(h, /* waiting */ 0))
        ASKEW_RECORD(h, ASKEW_VIOLATION_HANDOFF, "sem_post", 0, 0);
    return rc;
}

ASKEW_EXPORT int sem_wait(sem_t *sem)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_UNLIKELY(h != NULL)) {
        int (*trywait)(sem_t *) = REAL(sem_trywait);
        int saved = errno;
        if (trywait != NULL && trywait(sem) == 0)
            return 0;
        errno = saved;
        if (askew__hook_handoff(h, /* waiting */ 1))
            ASKEW_RECORD(h, ASKEW_VIOLATION_HANDOFF, "sem_wait", 0, 0);
    }
    int (*real)(sem_t *) = REAL(sem_wait);
    if (ASKEW_LIKELY(real != NULL))
        return real(sem);
    errno = ENOSYS;
    return -1;
}
