/* SPDX-License-Identifier: Apache-2.0 */
/* C threads of a run (since ABI 1.5). pthread_create inside a run, when the
 * extension's thread hook takes it, starts a real OS thread through a
 * trampoline that first waits for the run's baton (the engine's, which the
 * Python threads of the run share) and hands it on when the thread ends, so
 * the thread runs only while it holds the baton. Its switch points go to
 * the hook: its start, exit and join here, the mutex, condvar and
 * semaphore calls in hook_sync.c, the sleeps in hook_sleep.c (a sleep of a
 * C thread is a timed wait: the others run meanwhile). The thread inherits
 * the creator's activation, so its clock, entropy and refusals are the
 * run's. A killed thread (its node crashed, or the run ended while it
 * lived) ends at the switch point where it learns it: pthread_exit, so its
 * C++ destructors and cleanup handlers run while it holds the baton; one
 * that would wait again on the way out is abandoned, parked for good on a
 * word nobody changes. The table of threads is fixed (ASKEW_CTHREADS_MAX),
 * touched only by the baton's holder, never by malloc. */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hook_cthread.h"
#include "internal.h"

__thread uint32_t askew__t_actor;
atomic_int askew__cthreads_live;

static __thread int t_unwinding;

struct slot {
    pthread_t thread;
    const struct askew_preload_hooks *hooks;
    void *(*start)(void *);
    void *arg;
    uint32_t actor; /* 0: a free slot */
    int tid;        /* the kernel's id, written by the thread itself */
    int exited;     /* its EXIT went to the hook */
    int reaped;     /* joined or detached: the slot is free once exited */
};

static struct slot slots[ASKEW_CTHREADS_MAX];
static int sim_tid; /* the simulation thread's kernel id, at enter */

static int raw_tid(void)
{
    return (int)askew__raw_syscall(SYS_gettid, 0, 0, 0, 0, 0, 0);
}

void askew__cthread_enter(void)
{
    sim_tid = raw_tid();
}

void askew__cthread_run_begins(void)
{
    /* The last run ended every thread of its own (exited or abandoned);
     * what was never joined is forgotten with it. */
    memset(slots, 0, sizeof(slots));
    atomic_store(&askew__cthreads_live, 0);
}

int askew__cthread_unwinding(void)
{
    return t_unwinding;
}

static struct slot *slot_of(pthread_t thread)
{
    for (int i = 0; i < ASKEW_CTHREADS_MAX; i++)
        if (slots[i].actor != 0 && !slots[i].reaped &&
            pthread_equal(slots[i].thread, thread))
            return &slots[i];
    return NULL;
}

int askew__cthread_of_run(pthread_t thread)
{
    const struct slot *s = slot_of(thread);
    return s != NULL && !s->exited;
}

int32_t askew__cthread_holder(const pthread_mutex_t *mutex)
{
    /* glibc keeps the owner's kernel id in the mutex (the field robust and
     * error-checking mutexes rely on); 0 when it is free. */
    const int owner = __atomic_load_n(&mutex->__data.__owner, __ATOMIC_RELAXED);
    if (owner == 0)
        return -1;
    if (owner == sim_tid)
        return (int32_t)ASKEW_THREAD_LOOP;
    for (int i = 0; i < ASKEW_CTHREADS_MAX; i++)
        if (slots[i].actor != 0 && !slots[i].exited &&
            __atomic_load_n(&slots[i].tid, __ATOMIC_RELAXED) == owner)
            return (int32_t)slots[i].actor;
    return -1;
}

/* The thread hook with the caller's actor filled in. */
static int call(const struct askew_preload_hooks *h, struct askew_thread_call *c)
{
    c->actor = askew__t_actor;
    const int saved = errno;
    const int rc = askew__hook_thread(h, c);
    errno = saved;
    return rc;
}

/* This thread's end: the hook hands the baton on; from here on the thread
 * runs outside the run (glibc's teardown, thread-local destructors). The
 * table is updated first, while the thread still holds the baton: once it
 * is handed on, the run may end and the next one reuse the slot. */
static void finish(const struct askew_preload_hooks *h, struct slot *s)
{
    if (s != NULL) {
        if (s->exited)
            return;
        s->exited = 1;
        atomic_fetch_sub(&askew__cthreads_live, 1);
    }
    struct askew_thread_call c = {.op = ASKEW_THREAD_EXIT, .target = askew__t_actor};
    (void)call(h, &c); /* EXIT never fails: the actor is done */
    askew__t_hooks = NULL;
    askew__t_actor = 0;
}

static struct slot *self_slot(void)
{
    for (int i = 0; i < ASKEW_CTHREADS_MAX; i++)
        if (slots[i].actor == askew__t_actor && !slots[i].exited)
            return &slots[i];
    return NULL;
}

_Noreturn void askew__cthread_die(const struct askew_preload_hooks *h)
{
    (void)h;
    struct slot *s = self_slot();
    if (!t_unwinding && s != NULL) {
        /* Unwinds the thread's frames (C++ destructors, cleanup handlers)
         * and then the trampoline's handler ends the actor. */
        t_unwinding = 1;
        void (*real_exit)(void *) = REAL(pthread_exit);
        if (real_exit != NULL)
            real_exit(NULL);
    }
    askew__cthread_abandon(h);
}

_Noreturn void askew__cthread_abandon(const struct askew_preload_hooks *h)
{
    (void)h;
    struct slot *s = self_slot();
    /* A wait on the way out, or no way out: abandoned where it is. */
    if (s != NULL)
        s->reaped = 1; /* nobody joins a thread of an ended run */
    if (askew__t_actor != 0)
        finish(h, s);
    static const int never = 0;
    for (;;)
        (void)askew__raw_syscall(SYS_futex, (long)&never, /* FUTEX_WAIT_PRIVATE */ 128,
                                 0, 0, 0, 0);
}

/* A C thread told it was killed ends here; the loop is never killed (and
 * a stray answer for it only fails the call). */
static void end_if_killed(const struct askew_preload_hooks *h, int rc)
{
    if (rc == ASKEW_THREAD_KILLED && askew__t_actor != 0)
        askew__cthread_die(h);
}

int askew__cthread_block_raw(const struct askew_preload_hooks *h, uint32_t kind,
                             const void *key, const void *release, int64_t timeout_ns,
                             const char *what, const void *ret)
{
    struct askew_thread_call c = {
        .op = ASKEW_THREAD_BLOCK,
        .kind = kind,
        .key = (uintptr_t)key,
        .release = (uintptr_t)release,
        .timeout_ns = timeout_ns,
        .holder = kind == ASKEW_SYNC_MUTEX ? askew__cthread_holder(key) : -1,
        .call = what,
        .caller = ret,
    };
    return call(h, &c);
}

int askew__cthread_block(const struct askew_preload_hooks *h, uint32_t kind,
                         const void *key, const void *release, int64_t timeout_ns,
                         const char *what, const void *ret)
{
    const int rc =
        askew__cthread_block_raw(h, kind, key, release, timeout_ns, what, ret);
    end_if_killed(h, rc);
    return rc;
}

int askew__cthread_switch(const struct askew_preload_hooks *h, const char *what,
                          const void *ret)
{
    struct askew_thread_call c = {
        .op = ASKEW_THREAD_SWITCH, .call = what, .caller = ret};
    const int rc = call(h, &c);
    end_if_killed(h, rc);
    return rc;
}

int askew__cthread_wake(const struct askew_preload_hooks *h, uint32_t kind,
                        const void *key, uint32_t count, const char *what,
                        const void *ret)
{
    struct askew_thread_call c = {
        .op = ASKEW_THREAD_WAKE,
        .kind = kind,
        .key = (uintptr_t)key,
        .count = count,
        .call = what,
        .caller = ret,
    };
    const int rc = call(h, &c);
    end_if_killed(h, rc);
    return rc;
}

int askew__cthread_sleep(const struct askew_preload_hooks *h, int64_t ns,
                         const char *what, const void *ret)
{
    const int rc = askew__cthread_block(h, ASKEW_SYNC_SLEEP, NULL, NULL, ns, what, ret);
    return rc == -ETIMEDOUT ? 0 : rc;
}

/* pthread_cleanup_push's handler: the thread left through pthread_exit. */
static void exited(void *arg)
{
    struct slot *s = arg;
    finish(s->hooks, s);
}

static void *trampoline(void *arg)
{
    struct slot *s = arg;
    __atomic_store_n(&s->tid, raw_tid(), __ATOMIC_RELAXED);
    askew__t_hooks = s->hooks;
    askew__t_actor = s->actor;
    struct askew_thread_call c = {.op = ASKEW_THREAD_BEGIN, .target = s->actor};
    void *result = NULL;
    if (call(s->hooks, &c) == 0) {
        pthread_cleanup_push(exited, s);
        result = s->start(s->arg);
        pthread_cleanup_pop(0);
    }
    finish(s->hooks, s);
    return result;
}

int askew__cthread_create(const struct askew_preload_hooks *h, pthread_t *thread,
                          const pthread_attr_t *attr, void *(*start)(void *), void *arg,
                          const void *ret)
{
    if (!askew__hooks_have(h, ASKEW_HOOKS_END(own)) || h->thread == NULL || t_unwinding)
        return -1;
    struct slot *s = NULL;
    for (int i = 0; i < ASKEW_CTHREADS_MAX && s == NULL; i++)
        if (slots[i].actor == 0 || (slots[i].exited && slots[i].reaped))
            s = &slots[i];
    if (s == NULL) {
        askew__refuse(h, ASKEW_VIOLATION_THREAD,
                      "pthread_create (past the run's " ASKEW_STR(
                          ASKEW_CTHREADS_MAX) " C threads)",
                      0, 0, (void *)ret);
        return EAGAIN;
    }
    struct askew_thread_call c = {
        .op = ASKEW_THREAD_CREATE, .call = "pthread_create", .caller = ret};
    int rc = call(h, &c);
    end_if_killed(h, rc);
    if (rc < 0)
        return -1;
    int detached = 0;
    if (attr != NULL && pthread_attr_getdetachstate(attr, &detached) != 0)
        detached = PTHREAD_CREATE_JOINABLE;
    *s = (struct slot){.hooks = h, .start = start, .arg = arg, .actor = c.target};
    s->reaped = detached == PTHREAD_CREATE_DETACHED;
    atomic_fetch_add(&askew__cthreads_live, 1);
    int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *) =
        REAL(pthread_create);
    pthread_t made;
    const int err = real != NULL ? real(&made, attr, trampoline, s) : EAGAIN;
    struct askew_thread_call started = {.op = ASKEW_THREAD_START,
                                        .target = s->actor,
                                        .status = err,
                                        .call = "pthread_create",
                                        .caller = ret};
    if (err != 0) {
        atomic_fetch_sub(&askew__cthreads_live, 1);
        s->actor = 0;
    } else {
        s->thread = made;
        *thread = made;
    }
    rc = call(h, &started);
    end_if_killed(h, rc);
    return err;
}

ASKEW_EXPORT int pthread_join(pthread_t thread, void **result)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    int (*real)(pthread_t, void **) = REAL(pthread_join);
    if (ASKEW_UNLIKELY(real == NULL))
        return ENOSYS;
    if (ASKEW_LIKELY(h == NULL))
        return real(thread, result);
    struct slot *s = slot_of(thread);
    if (s == NULL)
        return real(thread, result); /* not a thread of the run's */
    /* Whoever joins it (the thread only ends with the baton). */
    if (askew__hooks_have(h, ASKEW_HOOKS_END(own)) && h->thread != NULL) {
        struct askew_thread_call c = {.op = ASKEW_THREAD_JOIN,
                                      .target = s->actor,
                                      .call = "pthread_join",
                                      .caller = __builtin_return_address(0)};
        const int rc = call(h, &c);
        end_if_killed(h, rc);
        if (rc == ASKEW_THREAD_DEADLOCK)
            return EDEADLK;
    }
    /* It has handed the baton on for good: what is left is glibc's
     * teardown, which the real join waits for. */
    const int err = real(thread, result);
    if (err == 0)
        s->reaped = 1;
    return err;
}

ASKEW_EXPORT int pthread_detach(pthread_t thread)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    int (*real)(pthread_t) = REAL(pthread_detach);
    if (ASKEW_UNLIKELY(real == NULL))
        return ENOSYS;
    if (ASKEW_UNLIKELY(h != NULL)) {
        struct slot *s = slot_of(thread);
        if (s != NULL)
            s->reaped = 1;
    }
    return real(thread);
}
