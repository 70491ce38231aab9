/* SPDX-License-Identifier: Apache-2.0 */
/* C threads of a run (hook_cthread.c): what the other families need of
 * them. A thread C code starts inside a run is an actor of the run's baton;
 * every switch point of such a thread, and of the simulation thread while
 * the run has one, goes to the extension's thread hook through the calls
 * below. Hidden; the pass-through path is one TLS load and a branch. */
#ifndef ASKEW_PRELOAD_HOOK_CTHREAD_H
#define ASKEW_PRELOAD_HOOK_CTHREAD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "internal.h"

/* This thread's actor: 0 on the simulation thread and on every thread that
 * is not a C thread of a run. */
extern __thread uint32_t askew__t_actor
    __attribute__((tls_model("initial-exec"), visibility("hidden")));
/* C threads of the run that have not exited. */
extern atomic_int askew__cthreads_live ASKEW_HIDDEN;

/* Whether `ret` (an interposer's return address) lies in the extension's
 * own code (hooks->own). */
static inline int askew__own_caller(const struct askew_preload_hooks *h,
                                    const void *ret)
{
    const uintptr_t pc = (uintptr_t)ret;
    return pc >= h->own.lo && pc < h->own.hi;
}

/* The hooks when a synchronisation call from `ret` is a switch point: on a
 * C thread of the run, or on the simulation thread while the run has C
 * threads, unless the interpreter or the extension made it (the GIL's and
 * the baton's own locks); NULL otherwise, and the call is libc's. */
static inline const struct askew_preload_hooks *askew__sync_hooks(const void *ret)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_LIKELY(h == NULL))
        return NULL;
    if (askew__t_actor == 0 &&
        atomic_load_explicit(&askew__cthreads_live, memory_order_relaxed) == 0)
        return NULL;
    if (!askew__hooks_have(h, ASKEW_HOOKS_END(own)) || h->thread == NULL ||
        askew__interp_caller(h, ret) || askew__own_caller(h, ret))
        return NULL;
    return h;
}

/* The switch points, each through the thread hook: 0, or a negative errno
 * (-ETIMEDOUT for a wait that timed out, ASKEW_THREAD_DEADLOCK on the
 * loop). A killed C thread never comes back from them: it ends there (see
 * hook_cthread.c). */
int askew__cthread_switch(const struct askew_preload_hooks *h, const char *call,
                          const void *ret) ASKEW_HIDDEN;
int askew__cthread_block(const struct askew_preload_hooks *h, uint32_t kind,
                         const void *key, const void *release, int64_t timeout_ns,
                         const char *call, const void *ret) ASKEW_HIDDEN;
int askew__cthread_wake(const struct askew_preload_hooks *h, uint32_t kind,
                        const void *key, uint32_t count, const char *call,
                        const void *ret) ASKEW_HIDDEN;
/* As askew__cthread_block, but a killed thread comes back with
 * ASKEW_THREAD_KILLED, for a caller that must put things right first (a
 * condvar wait takes its mutex back), then calls askew__cthread_die. */
int askew__cthread_block_raw(const struct askew_preload_hooks *h, uint32_t kind,
                             const void *key, const void *release, int64_t timeout_ns,
                             const char *call, const void *ret) ASKEW_HIDDEN;
_Noreturn void askew__cthread_die(const struct askew_preload_hooks *h) ASKEW_HIDDEN;
/* End the actor and park this thread for good where it is. */
_Noreturn void askew__cthread_abandon(const struct askew_preload_hooks *h) ASKEW_HIDDEN;
/* Whether this C thread is being ended: its switch points pass, and a
 * wait it cannot finish ends it where it is. */
int askew__cthread_unwinding(void) ASKEW_HIDDEN;

/* A sleep of `ns` on a C thread: a timed wait on nothing; 0. */
int askew__cthread_sleep(const struct askew_preload_hooks *h, int64_t ns,
                         const char *call, const void *ret) ASKEW_HIDDEN;

/* pthread_create inside a run: -1 when the run takes no C thread (the
 * caller refuses as before), else pthread_create's result. */
int askew__cthread_create(const struct askew_preload_hooks *h, pthread_t *thread,
                          const pthread_attr_t *attr, void *(*start)(void *), void *arg,
                          const void *ret) ASKEW_HIDDEN;

/* Whether `thread` is a C thread of the run that has not exited. */
int askew__cthread_of_run(pthread_t thread) ASKEW_HIDDEN;

/* The actor holding `mutex` (glibc's owner field), -1 when not known. */
int32_t askew__cthread_holder(const pthread_mutex_t *mutex) ASKEW_HIDDEN;

/* A run is entered (the simulation thread's id is noted) or begins (the
 * last run's threads are forgotten). */
void askew__cthread_enter(void) ASKEW_HIDDEN;
void askew__cthread_run_begins(void) ASKEW_HIDDEN;

#endif
