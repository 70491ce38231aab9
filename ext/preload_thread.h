/* SPDX-License-Identifier: Apache-2.0 */
/* C threads of a run (ABI 1.5's thread hook): the preload's switch points
 * of a thread C code started inside the run, handed to the run's threads
 * (askew/_loop/cthreads.py, over the same Baton as Python's threads).
 * preload.c puts askew__preload_thread in the hooks table. Binding files
 * only. */
#ifndef ASKEW_PRELOAD_THREAD_H
#define ASKEW_PRELOAD_THREAD_H

#include "core.h"

/* The thread hook: takes the GIL (the caller holds the baton, so no other
 * actor of the run runs Python meanwhile) and calls
 * askew._loop.cthreads.serve. Returns its answer: 0 or a negative errno. */
int askew__preload_thread(void *ctx, struct askew_thread_call *call);
/* Module init: the hook's operations and kinds (THREAD_*, SYNC_*) and
 * CTHREADS_MAX, which askew/_loop/cthreads.py reads rather than copies. */
int askew__preload_thread_setup(PyObject *module);

#endif
