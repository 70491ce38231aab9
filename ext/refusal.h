/* SPDX-License-Identifier: Apache-2.0 */
/* Refusals user code cannot swallow (refusal.c): the one-exception slot a
 * refusal is noted in before it is raised, its flag, and raising it at the
 * step's end. Every refusal site uses it: the loop (a call from another
 * thread), the patched time.sleep, the preload binding and, through
 * _note_refusal, askew's Python. Binding files only. */
#ifndef ASKEW_REFUSAL_H
#define ASKEW_REFUSAL_H

#include <stdatomic.h>

#include "core.h"

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

#endif
