/* SPDX-License-Identifier: Apache-2.0 */
/* Callback handles: what call_soon, call_later and call_at return and what
 * the scheduler queues. handle.c makes and runs them; the loop's units
 * (loop_sched.c, loop_run.c) and skew.c queue and hold them. A handle sits
 * below its loop: what it asks of the loop (a cancelled timer leaving the
 * heap, when() in the node's clock) comes through struct askew_handle_loop,
 * which the loop hands down at module init. Binding files only. */
#ifndef ASKEW_HANDLE_H
#define ASKEW_HANDLE_H

#include "core.h"

#define ASKEW_TIMER_KIND_HANDLE  1u
#define ASKEW_HANDLE_ARGS_INLINE 3

typedef struct askew_handle {
    PyObject_HEAD
        /* `timer` first after the header is not required: askew__handle_of
         * converts with offsetof, so the layout is free. */
        struct askew_timer timer;
    PyObject *callback; /* NULL once cancelled or run */
    PyObject *context;  /* a contextvars.Context */
    PyObject *loop;     /* strong: asyncio's handles keep their loop too */
    /* Its module's state (borrowed: the handle holds its type, the type its
     * module): the free list on dealloc without a lookup. */
    struct askew_state *state;
    PyObject *args_inline[ASKEW_HANDLE_ARGS_INLINE];
    PyObject *args_tuple; /* when there are more args than fit inline */
    Py_ssize_t nargs;
    uint64_t seq;
    int64_t node; /* the node its context runs as, -1 for the world */
    uint32_t incarnation;
    char cancelled;
    char is_timer;
    char queued; /* in the ready queue or the timer heap: holds a reference */
    PyObject *weakreflist;
} askew_handle;

/* What a handle asks of the loop that made it (`h->loop`), which sits above
 * handle.c: filled by the loop and kept in the module state
 * (askew_state.handle_loop) before the first handle is made. */
struct askew_handle_loop {
    /* A cancelled timer still in its loop's heap leaves it; the heap's
     * reference is dropped (the caller still holds one). */
    void (*timer_cancelled)(PyObject *loop, askew_handle *h);
    /* TimerHandle.when(): the deadline in the owning node's monotonic clock,
     * loop seconds; `loop` may be NULL (a cleared handle). */
    double (*when)(PyObject *loop, const askew_handle *h);
};

/* The scheduler's key for a handle's loop: 0 for the world, node + 1. */
static inline uint64_t askew__handle_loop_key(const askew_handle *h)
{
    return (uint64_t)(h->node + 1);
}

/* The handle a timer of kind ASKEW_TIMER_KIND_HANDLE lives in. */
static inline askew_handle *askew__handle_of(const struct askew_timer *timer)
{
    return (askew_handle *)((char *)timer - offsetof(askew_handle, timer));
}

/* Module init: Handle and TimerHandle into the module and its state. */
int askew__handle_types_init(PyObject *module);
/* A new Handle (TimerHandle) owning new references to its parts; args are
 * borrowed. */
askew_handle *askew__handle_new(struct askew_state *st, PyObject *loop,
                                PyObject *callback, PyObject *const *args,
                                Py_ssize_t nargs, PyObject *context);
askew_handle *askew__timer_handle_new(struct askew_state *st, PyObject *loop,
                                      PyObject *callback, PyObject *const *args,
                                      Py_ssize_t nargs, PyObject *context);
/* Run it in its context: 0, or -1 with the callback's exception set. */
int askew__handle_run(askew_handle *h);
/* handle.cancel() from C. */
void askew__handle_cancel(askew_handle *h);
/* Drop the callback and arguments (cancel, or after running). */
void askew__handle_clear_call(askew_handle *h);

#endif
