/* SPDX-License-Identifier: Apache-2.0 */
/* What the binding files of askew._core share: module state, the exception
 * classes, and the seams between the loop and the preload binding. Only the
 * files directly under ext/ include this (and Python.h). */
#ifndef ASKEW_CORE_H
#define ASKEW_CORE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
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
/* After each step: -1 with NondeterminismError set when the preload refused
 * a call since the last check; 0 otherwise. One relaxed load when quiet. */
int askew__preload_check(void);

#endif
