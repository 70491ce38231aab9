/* SPDX-License-Identifier: Apache-2.0 */
/* What the binding files of askew._core share: module state, the exception
 * classes, and the seams between the loop and the preload binding. Only the
 * files directly under ext/ include this (and Python.h). */
#ifndef ASKEW_CORE_H
#define ASKEW_CORE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdatomic.h>
#include <time.h>

#include "askew_preload.h"
#include "engine.h"

/* ---- module.c: module state ------------------------------------------- */

/* What one askew._core module object owns (PyModule_GetState): its types,
 * the asyncio objects it calls, its interned strings and the handle free
 * list. Binding code reaches it through a loop (`loop->state`), a type of
 * ours (askew__state_of_type), or the module. What is process-wide by
 * nature stays static and says why: the active loop (askew__active, read by
 * the preload without the GIL), the preload's API table, the refusal slot
 * and its atomic flag. docs/design.md §1 has the decision. */
#define ASKEW_HANDLE_FREELIST_MAX 256
struct askew_handle;
struct askew_state {
    PyTypeObject *handle_type;
    PyTypeObject *timer_handle_type;
    PyTypeObject *task_type;
    PyTypeObject *network_type;
    PyTypeObject *message_type; /* askew.Message, a struct sequence */
    PyObject *recv_expire_fn;   /* the callback of a recv()'s timeout */
    PyObject *future_type;      /* _asyncio.Future itself */
    /* Future's methods through their descriptors: no attribute lookup per
     * call on the hot paths (a message delivered, a sleep's timer firing). */
    PyObject *future_done;
    PyObject *future_cancelled;
    PyObject *future_set_result;
    /* asyncio.futures._set_result_unless_cancelled, what asyncio.sleep's
     * timer calls: run in C when its future is an exact Future. */
    PyObject *set_result_unless_cancelled;
    /* asyncio.Handle and asyncio.TimerHandle: what our handles' __class__
     * reports. */
    PyObject *asyncio_handle_classes[2];
    /* askew.errors.NondeterminismError, handed over by askew/_loop.py
     * through _core._configure_errors() at import. */
    PyObject *nondeterminism_error;
    PyObject *str_context; /* interned "context" */
    /* The first other string object equal to "context" seen as a keyword
     * (asyncio's C Task passes its own on every step), so that its address
     * stays its own. */
    PyObject *str_context_seen;
    PyObject *str_name;
    PyObject *str_loop;
    PyObject *empty_tuple;
    /* Handles come and go once per step: a few dead ones of the exact types
     * skip the allocator. The GIL guards the list. */
    struct askew_handle *freelist[ASKEW_HANDLE_FREELIST_MAX];
    int freelist_len;
};

extern struct PyModuleDef askew__module_def;
/* The state of the askew._core module that defined `type` or its base;
 * never NULL for our types and their subclasses. Borrowed. */
static inline struct askew_state *askew__state_of_type(PyTypeObject *type)
{
    return PyModule_GetState(PyType_GetModuleByDef(type, &askew__module_def));
}
/* The running simulation's state, NULL outside a run: for the few callers
 * that have no object of ours at hand (the network's future calls, the
 * preload binding's errors). */
struct askew_state *askew__state_active(void);
/* NondeterminismError of the module whose state is `st`, or RuntimeError
 * when none is known (st NULL, or askew not imported). Borrowed. */
static inline PyObject *askew__nondeterminism_error(const struct askew_state *st)
{
    return st != NULL && st->nondeterminism_error != NULL ? st->nondeterminism_error
                                                          : PyExc_RuntimeError;
}

/* Map an engine code (a negative errno) to an exception; returns NULL. The
 * one place that does so. */
PyObject *askew__raise_engine(int rc, const char *what);

/* ---- loop.c, for the preload binding and the patched time functions ---- */

/* The loop currently running a simulation on this process's simulation
 * thread, or NULL. Set by the loop around a run. Process-wide, not module
 * state: the preload reads it without the GIL and there is one simulation
 * thread per process. */
struct askew_loop_state;
extern struct askew_loop_state *askew__active;
extern unsigned long askew__active_thread;

/* Virtual time for the node running now (skew included). Plain C: safe
 * without the GIL, never calls Python. Returns 0 or -errno. */
int askew__clock_read(void *ctx, int realtime, struct timespec *out);
/* Bytes from the run's entropy stream. Plain C, as above. */
int askew__entropy_fill(void *ctx, void *buf, size_t len);

/* ---- preload.c: the preload binding ---------------------------------- */

/* Module init: find the preload (dlsym RTLD_DEFAULT), self-test it, and add
 * its functions to the module. A missing preload is not an error. */
int askew__preload_setup(PyObject *module);
/* Around a run, on the simulation thread; ctx is the loop state passed back
 * to askew__clock_read and askew__entropy_fill. 0 or -1 with an exception. */
int askew__preload_enter(void *ctx);
void askew__preload_leave(void);
/* Entropy for the run, from Python (os.urandom) or C (the preload): the
 * import stream while a module is being imported, so that a module imported
 * in only the first iteration of a sweep does not shift the rest; the run's
 * entropy stream otherwise. May take the GIL. */
int askew__entropy_serve(void *ctx, void *buf, size_t len);
/* After each step: -1 with the step's refusal raised (the first one noted
 * by askew__refusal_note, or one the preload recorded since the last
 * check); 0 otherwise. One relaxed load when quiet. */
int askew__preload_check(void);

/* ---- refusal.c: refusals user code cannot swallow ---------------------- */

/* Note a refusal made inside a run, before it is raised: `exc` is the
 * exception instance (borrowed), or NULL for the exception set now, which
 * stays set. Adds the task and the user's line to its message and keeps
 * it, so that the end of the step raises it again if user code catches it
 * (the same object: a refusal that also failed its task fails the run
 * once). The first refusal of a step is kept, later ones are counted. Any
 * thread, with the GIL; a no-op outside a run. 0, or -1 with TypeError when
 * exc is not an exception. */
int askew__refusal_note(PyObject *exc);
/* As askew__refusal_note(exc); where_known is 0 when no Python frame ran
 * since the refused call, so the frames on the stack are not its caller's. */
int askew__refusal_note_at(PyObject *exc, int where_known);
/* where_known for a refusal noted from inside the refused C call (preload.c):
 * the innermost frames are the caller's unless askew's own come first. */
#define ASKEW_WHERE_C_CALL 2
/* Set by every note, and by the preload's on_violation without the GIL:
 * what askew__preload_check loads after each step. */
extern atomic_int askew__refusal_flag;
/* Raise the noted refusal and forget it: -1 with it set, 0 when none. */
int askew__refusal_raise(void);
/* Forget any noted refusal: a run starts and ends with none. */
void askew__refusal_reset(void);
/* Module init: adds _note_refusal(exc), for askew's Python refusal sites. */
int askew__refusal_setup(PyObject *module);

/* ---- patch.c: virtual time that blocking calls consume ------------------ */

/* Let `ns` nanoseconds of the running node's clock pass on the loop `ctx`
 * (an askew_loop_state): what a blocking sleep does to a real loop. Logged
 * in the trace hash. Plain C, safe without the GIL (only the simulation
 * thread moves the clock); the preload's sleep hook. 0; -EINVAL for ns < 0;
 * -EOVERFLOW past the end of virtual time (2**62 ns); -ETIME past the run's
 * time budget (max_time). The clock does not move on an error. */
int askew__loop_consume_ns(void *ctx, int64_t ns);

#endif
