/* SPDX-License-Identifier: Apache-2.0 */
/* Threads: pthread_create, POSIX aio (whose calls start glibc's own worker
 * threads), and handing work to a thread that already exists. A thread
 * started from the simulation thread would run outside the seeded
 * schedule, so inside a run it is refused with EAGAIN (CPython raises
 * "can't start new thread") and recorded, and so are aio_read, aio_write,
 * aio_fsync and lio_listio. One caller is let off the record: SQLite, which
 * does a worker's share itself when pthread_create fails (PRAGMA threads),
 * so its result is the same and nothing left the run. A pool started
 * before the run is woken by a lock release instead, and its result waited
 * for with a lock acquire: every CPython lock is a semaphore, so on the
 * simulation thread every sem_post (saying whether a thread waits on it:
 * a post nobody waits for can hand work to a busy worker, never a result
 * to anyone), and a sem_wait that would block (only another thread can let
 * it through), are put to the extension's handoff hook, which says whether
 * that is work handed to another thread (askew's: an executor's submit, or
 * a result a thread waits for). If so it is recorded; the call itself still completes,
 * or the lock would stay taken for good (and CPython retries an interrupted sem_wait
 * forever), and the run fails right after it. Threads started anywhere else, and every
 * call outside a run, go to libc untouched. */
#include <aio.h>
#include <dlfcn.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>

#include "internal.h"

/* Whether the object at `caller` is SQLite (it exports
 * sqlite3_threadsafe), whose sqlite3ThreadCreate runs the task itself when
 * pthread_create fails. Remembered per object; simulation thread only. */
#define FALLBACK_CACHE 8
static struct {
    uintptr_t base;
    int sqlite;
} fallback_cache[FALLBACK_CACHE];
static int fallback_next;

static int falls_back(void *caller)
{
    Dl_info info;
    const int saved = errno;
    int sqlite = 0;
    if (dladdr(caller, &info) != 0 && info.dli_fname != NULL) {
        const uintptr_t base = (uintptr_t)info.dli_fbase;
        for (int i = 0; i < FALLBACK_CACHE; i++)
            if (fallback_cache[i].base == base) {
                errno = saved;
                return fallback_cache[i].sqlite;
            }
        void *handle = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
        if (handle != NULL) {
            sqlite = dlsym(handle, "sqlite3_threadsafe") != NULL;
            dlclose(handle);
        }
        fallback_cache[fallback_next].base = base;
        fallback_cache[fallback_next].sqlite = sqlite;
        fallback_next = (fallback_next + 1) % FALLBACK_CACHE;
    }
    errno = saved;
    return sqlite;
}

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
    if (!falls_back(__builtin_return_address(0)))
        ASKEW_RECORD(h, ASKEW_VIOLATION_THREAD, "pthread_create",
                     (long)(uintptr_t)start, 0);
    return EAGAIN;
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

/* POSIX aio: glibc runs each request in threads it starts itself. */
#define AIO_BODY(name, call_real)                                                      \
    const struct askew_preload_hooks *h = askew__t_hooks;                              \
    if (ASKEW_UNLIKELY(h != NULL))                                                     \
        return ASKEW_REFUSE(h, ASKEW_VIOLATION_THREAD, #name, 0, 0, EAGAIN);           \
    __typeof__(&name) real = REAL(name);                                               \
    if (ASKEW_LIKELY(real != NULL))                                                    \
        return call_real;                                                              \
    errno = ENOSYS;                                                                    \
    return -1

ASKEW_EXPORT int aio_read(struct aiocb *cb)
{
    AIO_BODY(aio_read, real(cb));
}

ASKEW_EXPORT int aio_write(struct aiocb *cb)
{
    AIO_BODY(aio_write, real(cb));
}

ASKEW_EXPORT int aio_fsync(int op, struct aiocb *cb)
{
    AIO_BODY(aio_fsync, real(op, cb));
}

ASKEW_EXPORT int lio_listio(int mode, struct aiocb *const list[restrict], int n,
                            struct sigevent *restrict sevp)
{
    AIO_BODY(lio_listio, real(mode, list, n, sevp));
}

/* The names C code built with _FILE_OFFSET_BITS=64 calls (Python.h sets
 * it): on 64-bit targets the same functions, so they forward to the same. */
int askew_aio_read64(struct aiocb *cb) __asm__("aio_read64");
int askew_aio_write64(struct aiocb *cb) __asm__("aio_write64");
int askew_aio_fsync64(int op, struct aiocb *cb) __asm__("aio_fsync64");
int askew_lio_listio64(int mode, struct aiocb *const list[restrict], int n,
                       struct sigevent *restrict sevp) __asm__("lio_listio64");

ASKEW_EXPORT int askew_aio_read64(struct aiocb *cb)
{
    return aio_read(cb);
}

ASKEW_EXPORT int askew_aio_write64(struct aiocb *cb)
{
    return aio_write(cb);
}

ASKEW_EXPORT int askew_aio_fsync64(int op, struct aiocb *cb)
{
    return aio_fsync(op, cb);
}

ASKEW_EXPORT int askew_lio_listio64(int mode, struct aiocb *const list[restrict], int n,
                                    struct sigevent *restrict sevp)
{
    return lio_listio(mode, list, n, sevp);
}
