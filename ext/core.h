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

/* askew.errors.NondeterminismError, handed over by askew/_loop.py through
 * _core._configure_errors() at import; never NULL once askew is imported. */
extern PyObject *askew__NondeterminismError;

/* Map an engine code (a negative errno) to an exception; returns NULL. The
 * one place that does so. */
PyObject *askew__raise_engine(int rc, const char *what);

/* ---- loop.c, for the preload binding and the patched time functions ---- */

/* The loop currently running a simulation on this process's simulation
 * thread, or NULL. Set by the loop around a run. */
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
