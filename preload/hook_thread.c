/* SPDX-License-Identifier: Apache-2.0 */
/* Threads: pthread_create, POSIX aio (whose calls start glibc's own worker
 * threads). Inside a run a thread C code starts is a C thread of the run
 * (hook_cthread.c) when the extension's thread hook takes it (ABI 1.5, a
 * run with executor="threads"); otherwise, and for the interpreter's own
 * pthread_create, it would run outside the seeded schedule, so it is
 * refused with EAGAIN (CPython raises "can't start new thread") and
 * recorded, and so are aio_read, aio_write, aio_fsync and lio_listio. One
 * caller is let off the record: SQLite, which does a worker's share itself
 * when pthread_create fails (PRAGMA threads), so its result is the same and
 * nothing left the run. Handing work to a thread that already exists
 * (sem_post, sem_wait) is hook_sync.c's. Threads started anywhere else, and
 * every call outside a run, go to libc untouched. */
#include <aio.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>

#include "hook_cthread.h"
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
    /* Since ABI 1.5 a thread of the run's, when the run takes C threads
     * (hook_cthread.c); the interpreter's own threads stay refused. */
    if (!askew__interp_caller(h, __builtin_return_address(0))) {
        const int err = askew__cthread_create(h, thread, attr, start, arg,
                                              __builtin_return_address(0));
        if (err >= 0)
            return err;
    }
    if (!falls_back(__builtin_return_address(0)))
        ASKEW_RECORD(h, ASKEW_VIOLATION_THREAD, "pthread_create",
                     (long)(uintptr_t)start, 0);
    return EAGAIN;
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
