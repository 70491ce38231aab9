/* SPDX-License-Identifier: Apache-2.0 */
/* The active simulation (see active.h): three process-wide values, set
 * together when a run starts and cleared together when it ends. Never
 * calls Python and never reads the loop it points to; the loop (loop_run.c,
 * loop_type.c) is the only writer. */
#include "active.h"

/* Process-wide, not module state: the preload reads them without the GIL,
 * and a process has one simulation thread. */
struct askew_loop_state *askew__active;
unsigned long askew__active_thread;
/* The active loop's module state; NULL exactly when askew__active is. */
static struct askew_state *active_state;

void askew__active_enter(struct askew_loop_state *loop, struct askew_state *st,
                         unsigned long thread)
{
    askew__active = loop;
    askew__active_thread = thread;
    active_state = st;
}

void askew__active_leave(const struct askew_loop_state *loop)
{
    if (askew__active != loop)
        return;
    askew__active = NULL;
    askew__active_thread = 0;
    active_state = NULL;
}

struct askew_state *askew__state_active(void)
{
    return active_state;
}
