/* SPDX-License-Identifier: Apache-2.0 */
/* The extension's side of libaskew-preload.so (preload.c): finding it at
 * module init, entering and leaving it around a run, the entropy both
 * os.urandom and the preload serve, and turning what it refused into the
 * step's refusal. The run loop (loop_run.c) drives it; it sits above the
 * loop's clocks (loop.h), which it hands the preload. Binding files only. */
#ifndef ASKEW_PRELOAD_BINDING_H
#define ASKEW_PRELOAD_BINDING_H

#include "core.h"

struct askew_loop_state;

/* Module init: find the preload (dlsym RTLD_DEFAULT), self-test it, and add
 * its functions to the module. A missing preload is not an error. */
int askew__preload_setup(PyObject *module);
/* Around a run, on the simulation thread; `loop` is the loop whose clock,
 * entropy and sleep the preload's hooks reach. 0 or -1 with an
 * exception. */
int askew__preload_enter(struct askew_loop_state *loop);
void askew__preload_leave(void);
/* Entropy for the run, from Python (os.urandom) or C (the preload): the
 * import stream while a module is being imported, so that a module imported
 * in only the first iteration of a sweep does not shift the rest; the run's
 * entropy stream otherwise (ctx is the loop). May take the GIL. */
int askew__entropy_serve(void *ctx, void *buf, size_t len);
/* After each step: -1 with the step's refusal raised (the first one noted
 * by askew__refusal_note, or one the preload recorded since the last
 * check); 0 otherwise. One relaxed load when quiet. */
int askew__preload_check(void);

#endif
