/* SPDX-License-Identifier: Apache-2.0 */
/* The simulation running in this process: which loop runs it, on which
 * thread, and that loop's module state. Process-wide, not module state: the
 * preload reads it without the GIL and a process has one simulation thread.
 * Set by the loop around a run (loop_run.c) and cleared when that loop goes
 * (loop_type.c); read by the patched time functions, the preload binding,
 * the refusal slot and the Future helpers. Binding files only. */
#ifndef ASKEW_ACTIVE_H
#define ASKEW_ACTIVE_H

#include "core.h"

struct askew_loop_state;

/* The loop running a simulation on this process's simulation thread, or
 * NULL; the thread it runs on (0 when none). Opaque here: a unit that reads
 * the loop includes loop.h. */
extern struct askew_loop_state *askew__active;
extern unsigned long askew__active_thread;

/* A run starts: `loop` (of module state `st`) runs it on `thread`. */
void askew__active_enter(struct askew_loop_state *loop, struct askew_state *st,
                         unsigned long thread);
/* `loop`'s run ends, or `loop` goes: nothing is active any more. A no-op
 * when another loop (or none) is the active one. */
void askew__active_leave(const struct askew_loop_state *loop);
/* The running simulation's state, NULL outside a run: for the few callers
 * that have no object of ours at hand (the network's future calls, the
 * preload binding's errors). */
struct askew_state *askew__state_active(void);

#endif
