/* SPDX-License-Identifier: Apache-2.0 */
/* Mutexes, condition variables and semaphores. While a run has C threads
 * (hook_cthread.c), each of these calls made by the code under test on one
 * of the run's threads is a switch point of the run's baton, and no thread
 * ever waits in the kernel: a lock is taken with trylock, and one that is
 * held makes the caller wait on the baton (the thread hook's BLOCK) until
 * an unlock wakes it and the seed gives it the baton again; a condvar wait
 * releases its mutex and waits on the baton the same way, and a timed one
 * for that long on the node's clock; a post wakes every thread waiting on
 * the semaphore and the seed draws which takes it. The objects themselves
 * stay glibc's (their state is the real one; only the waiting moves), so a
 * lock taken before the run's first C thread is held as it was. The
 * interpreter's and the extension's own calls (the GIL, the baton) are
 * never switch points. Outside that, the calls are libc's, but for the
 * simulation thread's semaphores: CPython's locks are semaphores, so a
 * sem_post, and a sem_wait that would block, is put to the extension's
 * handoff hook, which says whether that is work handed to a thread that
 * already exists (an executor's submit, or a result a thread waits for); if
 * so it is recorded; the call itself still completes, or the lock would
 * stay taken for good (and CPython retries an interrupted sem_wait
 * forever), and the run fails right after it. */
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>

#include "hook_cthread.h"
#include "hook_sleep.h"
#include "internal.h"

#define ALL ASKEW_THREAD_WAKE_ALL

/* ---- mutexes ------------------------------------------------------------ */

/* glibc's type bits in __kind: an error-checking mutex says EDEADLK to its
 * owner's second lock; any other kind waits (for good, if it is the owner:
 * the run's deadlock report says so). */
static int relock_is_error(const pthread_mutex_t *m)
{
    return (m->__data.__kind & 3) == PTHREAD_MUTEX_ERRORCHECK_NP &&
           askew__cthread_holder(m) >= 0 &&
           (uint32_t)askew__cthread_holder(m) == askew__t_actor;
}

/* Take `m` without a switch point first: trylock, and wait on the baton
 * while another actor holds it. 0, an error of trylock's, ETIMEDOUT, or
 * EDEADLK (the loop can never get it). */
static int take(const struct askew_preload_hooks *h, pthread_mutex_t *m,
                int64_t timeout_ns, const char *call, const void *ret)
{
    int (*trylock)(pthread_mutex_t *) = REAL(pthread_mutex_trylock);
    if (ASKEW_UNLIKELY(trylock == NULL))
        return EINVAL;
    for (;;) {
        const int err = trylock(m);
        if (err != EBUSY)
            return err; /* 0, EOWNERDEAD, EAGAIN (a recursive count), EINVAL */
        if (relock_is_error(m))
            return EDEADLK;
        const int rc =
            askew__cthread_block(h, ASKEW_SYNC_MUTEX, m, NULL, timeout_ns, call, ret);
        if (rc == -ETIMEDOUT)
            return ETIMEDOUT;
        if (rc < 0)
            return -rc;
    }
}

static int lock(const struct askew_preload_hooks *h, pthread_mutex_t *m,
                int64_t timeout_ns, const char *call, const void *ret)
{
    const int rc = askew__cthread_switch(h, call, ret);
    if (rc < 0)
        return -rc;
    return take(h, m, timeout_ns, call, ret);
}

ASKEW_EXPORT int pthread_mutex_lock(pthread_mutex_t *m)
{
    const struct askew_preload_hooks *h =
        askew__sync_hooks(__builtin_return_address(0));
    if (ASKEW_UNLIKELY(h != NULL))
        return lock(h, m, -1, "pthread_mutex_lock", __builtin_return_address(0));
    int (*real)(pthread_mutex_t *) = REAL(pthread_mutex_lock);
    return ASKEW_LIKELY(real != NULL) ? real(m) : EINVAL;
}

ASKEW_EXPORT int pthread_mutex_trylock(pthread_mutex_t *m)
{
    const struct askew_preload_hooks *h =
        askew__sync_hooks(__builtin_return_address(0));
    int (*real)(pthread_mutex_t *) = REAL(pthread_mutex_trylock);
    if (ASKEW_UNLIKELY(real == NULL))
        return EINVAL;
    if (ASKEW_UNLIKELY(h != NULL)) {
        const int rc = askew__cthread_switch(h, "pthread_mutex_trylock",
                                             __builtin_return_address(0));
        if (rc < 0)
            return -rc;
    }
    return real(m);
}

ASKEW_EXPORT int pthread_mutex_unlock(pthread_mutex_t *m)
{
    const struct askew_preload_hooks *h =
        askew__sync_hooks(__builtin_return_address(0));
    int (*real)(pthread_mutex_t *) = REAL(pthread_mutex_unlock);
    if (ASKEW_UNLIKELY(real == NULL))
        return EINVAL;
    const int err = real(m);
    if (ASKEW_UNLIKELY(h != NULL) && err == 0 && !askew__cthread_unwinding()) {
        const int rc =
            askew__cthread_wake(h, ASKEW_SYNC_MUTEX, m, ALL, "pthread_mutex_unlock",
                                __builtin_return_address(0));
        if (rc < 0)
            return -rc;
    }
    return err;
}

/* ---- condition variables ------------------------------------------------- */

/* A condvar wait of the run's: let the mutex go and wait on the baton (at
 * most timeout_ns), then take the mutex back. A killed thread takes it back
 * before it ends, as a cancelled wait does; if it cannot, it is abandoned. */
static int cond_wait(const struct askew_preload_hooks *h, pthread_cond_t *c,
                     pthread_mutex_t *m, int64_t timeout_ns, const char *call,
                     const void *ret)
{
    int (*unlock)(pthread_mutex_t *) = REAL(pthread_mutex_unlock);
    if (ASKEW_UNLIKELY(unlock == NULL))
        return EINVAL;
    const int err = unlock(m);
    if (err != 0)
        return err; /* EPERM: not the owner */
    const int rc =
        askew__cthread_block_raw(h, ASKEW_SYNC_COND, c, m, timeout_ns, call, ret);
    if (rc == ASKEW_THREAD_KILLED && askew__t_actor != 0) {
        int (*trylock)(pthread_mutex_t *) = REAL(pthread_mutex_trylock);
        if (trylock != NULL && trylock(m) == 0)
            askew__cthread_die(h);
        askew__cthread_abandon(h); /* the mutex is another's */
    }
    if (rc == ASKEW_THREAD_DEADLOCK)
        return EDEADLK;
    const int again = take(h, m, -1, call, ret);
    if (again != 0)
        return again;
    return rc == -ETIMEDOUT ? ETIMEDOUT : 0;
}

ASKEW_EXPORT int pthread_cond_wait(pthread_cond_t *restrict c,
                                   pthread_mutex_t *restrict m)
{
    const struct askew_preload_hooks *h =
        askew__sync_hooks(__builtin_return_address(0));
    if (ASKEW_UNLIKELY(h != NULL))
        return cond_wait(h, c, m, -1, "pthread_cond_wait", __builtin_return_address(0));
    int (*real)(pthread_cond_t *, pthread_mutex_t *) = REAL(pthread_cond_wait);
    return ASKEW_LIKELY(real != NULL) ? real(c, m) : EINVAL;
}

/* pthread_cond_timedwait and pthread_cond_clockwait of the run's
 * (hook_sleep.c sends them here): the deadline on the node's clock. */
int askew__sync_cond_timedwait(const struct askew_preload_hooks *h, pthread_cond_t *c,
                               pthread_mutex_t *m, clockid_t clock,
                               const struct timespec *abs, const char *call,
                               const void *ret)
{
    const int64_t ns = askew__virtual_wait_ns(h, clock, abs);
    if (ns == -EINVAL)
        return EINVAL;
    return cond_wait(h, c, m, ns < 0 ? 0 : ns, call, ret);
}

static int cond_wake(pthread_cond_t *c, uint32_t count, const char *call,
                     const void *ret, int (*real)(pthread_cond_t *))
{
    if (ASKEW_UNLIKELY(real == NULL))
        return EINVAL;
    /* The real call too: a thread outside the run may wait on it. */
    const int err = real(c);
    const struct askew_preload_hooks *h = askew__sync_hooks(ret);
    if (ASKEW_UNLIKELY(h != NULL) && err == 0 && !askew__cthread_unwinding()) {
        const int rc = askew__cthread_wake(h, ASKEW_SYNC_COND, c, count, call, ret);
        if (rc < 0)
            return -rc;
    }
    return err;
}

ASKEW_EXPORT int pthread_cond_signal(pthread_cond_t *c)
{
    return cond_wake(c, 1, "pthread_cond_signal", __builtin_return_address(0),
                     REAL(pthread_cond_signal));
}

ASKEW_EXPORT int pthread_cond_broadcast(pthread_cond_t *c)
{
    return cond_wake(c, ALL, "pthread_cond_broadcast", __builtin_return_address(0),
                     REAL(pthread_cond_broadcast));
}

/* ---- semaphores ------------------------------------------------------------ */

/* A semaphore wait of the run's: take it when it is free, else wait on the
 * baton (at most timeout_ns) until a post; -1 with errno, as sem_wait. */
static int sem_take(const struct askew_preload_hooks *h, sem_t *sem, int64_t timeout_ns,
                    const char *call, const void *ret)
{
    int (*trywait)(sem_t *) = REAL(sem_trywait);
    if (ASKEW_UNLIKELY(trywait == NULL)) {
        errno = ENOSYS;
        return -1;
    }
    int rc = askew__cthread_switch(h, call, ret);
    for (;;) {
        if (rc < 0) {
            errno = rc == -ETIMEDOUT ? ETIMEDOUT : -rc;
            return -1;
        }
        const int saved = errno;
        if (trywait(sem) == 0) {
            errno = saved;
            return 0;
        }
        if (errno != EAGAIN)
            return -1; /* EINVAL */
        errno = saved;
        rc = askew__cthread_block(h, ASKEW_SYNC_SEM, sem, NULL, timeout_ns, call, ret);
    }
}

int askew__sync_sem_timedwait(const struct askew_preload_hooks *h, sem_t *sem,
                              clockid_t clock, const struct timespec *abs,
                              const char *call, const void *ret)
{
    const int64_t ns = askew__virtual_wait_ns(h, clock, abs);
    if (ns == -EINVAL) {
        errno = EINVAL;
        return -1;
    }
    return sem_take(h, sem, ns < 0 ? 0 : ns, call, ret);
}

ASKEW_EXPORT int sem_trywait(sem_t *sem)
{
    const struct askew_preload_hooks *h =
        askew__sync_hooks(__builtin_return_address(0));
    if (ASKEW_UNLIKELY(h != NULL)) {
        const int rc =
            askew__cthread_switch(h, "sem_trywait", __builtin_return_address(0));
        if (rc < 0) {
            errno = -rc;
            return -1;
        }
    }
    int (*real)(sem_t *) = REAL(sem_trywait);
    if (ASKEW_LIKELY(real != NULL))
        return real(sem);
    errno = ENOSYS;
    return -1;
}
/* Whether a thread waits on the semaphore, so a post wakes it. glibc's
 * sem_t on 64-bit targets begins with one 64-bit word: the value in the low
 * half, the number of waiters in the high half (its SEM_NWAITERS_SHIFT);
 * elsewhere every post counts as a possible wake-up. */
static int has_waiters(sem_t *sem)
{
#if (defined(__x86_64__) || defined(__aarch64__)) && __SIZEOF_POINTER__ == 8
    const uint64_t word = __atomic_load_n((uint64_t *)(void *)sem, __ATOMIC_RELAXED);
    return (word >> 32) != 0;
#else
    (void)sem;
    return 1;
#endif
}

ASKEW_EXPORT int sem_post(sem_t *sem)
{
    const struct askew_preload_hooks *hs =
        askew__sync_hooks(__builtin_return_address(0));
    if (ASKEW_UNLIKELY(hs != NULL)) {
        int (*post)(sem_t *) = REAL(sem_post);
        if (ASKEW_UNLIKELY(post == NULL)) {
            errno = ENOSYS;
            return -1;
        }
        if (post(sem) != 0)
            return -1;
        if (!askew__cthread_unwinding()) {
            const int rc = askew__cthread_wake(hs, ASKEW_SYNC_SEM, sem, ALL, "sem_post",
                                               __builtin_return_address(0));
            if (rc < 0) {
                errno = -rc;
                return -1;
            }
        }
        return 0;
    }
    const struct askew_preload_hooks *h = askew__t_hooks;
    /* Read before the post: whether it wakes a thread (an extension from
     * before ABI 1.4 is asked as it was, with 0). */
    const int idle = ASKEW_UNLIKELY(h != NULL) &&
                     askew__hooks_have(h, ASKEW_HOOKS_END(interp)) &&
                     !has_waiters(ASKEW_LAUNDER(sem));
    int (*real)(sem_t *) = REAL(sem_post);
    int rc = -1;
    if (ASKEW_LIKELY(real != NULL))
        rc = real(sem);
    else
        errno = ENOSYS;
    /* After the post, so the hook never runs while the semaphore is held. */
    if (ASKEW_UNLIKELY(h != NULL) &&
        askew__hook_handoff(h, idle ? ASKEW_HANDOFF_POST_IDLE : /* waiting */ 0))
        ASKEW_RECORD(h, ASKEW_VIOLATION_HANDOFF, "sem_post", 0, 0);
    return rc;
}

ASKEW_EXPORT int sem_wait(sem_t *sem)
{
    const struct askew_preload_hooks *hs =
        askew__sync_hooks(__builtin_return_address(0));
    if (ASKEW_UNLIKELY(hs != NULL))
        return sem_take(hs, sem, -1, "sem_wait", __builtin_return_address(0));
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

/* ---- what a C thread of the run cannot wait on ----------------------------------- */

/* Read-write locks, barriers and cancellation are not switch points: a
 * thread that waited on one in the kernel would hold the baton while it
 * waited, and a cancelled one would act while another holds it. While the
 * run has C threads, an rwlock that is free is taken as libc takes it, and
 * one that would wait, every barrier wait and a cancel of a thread of the
 * run are refused by name: the call fails (EDEADLK, EINVAL, ESRCH), and so
 * does the run. */
#define REFUSE_WAIT(h, call, err)                                                      \
    (ASKEW_RECORD((h), ASKEW_VIOLATION_THREAD, (call), 0, 0), (err))

ASKEW_EXPORT int pthread_rwlock_rdlock(pthread_rwlock_t *l)
{
    const struct askew_preload_hooks *h =
        askew__sync_hooks(__builtin_return_address(0));
    if (ASKEW_UNLIKELY(h != NULL)) {
        int (*tryrd)(pthread_rwlock_t *) = REAL(pthread_rwlock_tryrdlock);
        const int err = tryrd != NULL ? tryrd(l) : EINVAL;
        return err != EBUSY ? err
                            : REFUSE_WAIT(h,
                                          "pthread_rwlock_rdlock (a wait on another "
                                          "thread of the run)",
                                          EDEADLK);
    }
    int (*real)(pthread_rwlock_t *) = REAL(pthread_rwlock_rdlock);
    return ASKEW_LIKELY(real != NULL) ? real(l) : EINVAL;
}

ASKEW_EXPORT int pthread_rwlock_wrlock(pthread_rwlock_t *l)
{
    const struct askew_preload_hooks *h =
        askew__sync_hooks(__builtin_return_address(0));
    if (ASKEW_UNLIKELY(h != NULL)) {
        int (*trywr)(pthread_rwlock_t *) = REAL(pthread_rwlock_trywrlock);
        const int err = trywr != NULL ? trywr(l) : EINVAL;
        return err != EBUSY ? err
                            : REFUSE_WAIT(h,
                                          "pthread_rwlock_wrlock (a wait on another "
                                          "thread of the run)",
                                          EDEADLK);
    }
    int (*real)(pthread_rwlock_t *) = REAL(pthread_rwlock_wrlock);
    return ASKEW_LIKELY(real != NULL) ? real(l) : EINVAL;
}

ASKEW_EXPORT int pthread_barrier_wait(pthread_barrier_t *b)
{
    const struct askew_preload_hooks *h =
        askew__sync_hooks(__builtin_return_address(0));
    if (ASKEW_UNLIKELY(h != NULL))
        return REFUSE_WAIT(h, "pthread_barrier_wait", EINVAL);
    int (*real)(pthread_barrier_t *) = REAL(pthread_barrier_wait);
    return ASKEW_LIKELY(real != NULL) ? real(b) : EINVAL;
}

ASKEW_EXPORT int pthread_cancel(pthread_t thread)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_UNLIKELY(h != NULL) && askew__cthread_of_run(thread))
        return REFUSE_WAIT(h, "pthread_cancel", ESRCH);
    int (*real)(pthread_t) = REAL(pthread_cancel);
    return ASKEW_LIKELY(real != NULL) ? real(thread) : ESRCH;
}
