/* SPDX-License-Identifier: Apache-2.0 */
/* A loop's per-node clocks and pauses (skew.c): the table of each node's
 * clock (the engine's struct askew_node_clock) and pause count, and the
 * callbacks a paused node holds until it resumes. The loop embeds one
 * struct askew_skews and reads its clocks through it; skew.c sits below
 * the loop and takes the scheduler it works on as an argument. Binding
 * files only. */
#ifndef ASKEW_SKEW_H
#define ASKEW_SKEW_H

#include "core.h"

struct askew_handle;

struct askew_skew {
    struct askew_node_clock clock; /* the engine's: ext/engine/skew.c */
    uint32_t paused;               /* pauses open on the node; > 0 runs nothing */
    char active;                   /* skewed at least once this run */
};

struct askew_skews {
    struct askew_skew *nodes; /* index: the node id; zeroed until used */
    size_t cap;               /* entries */
    /* Callbacks of paused nodes, in the order they came up; each holds the
     * reference the ready queue held. */
    struct askew_handle **held;
    size_t held_len;
    size_t held_cap;
};

void askew__skew_init(struct askew_skews *t);
void askew__skew_free(struct askew_skews *t);
/* A new run: every node's clock the identity again, no pause open. */
void askew__skew_reset(struct askew_skews *t);
/* A node's monotonic reading at world time now_ns (loop.time, monotonic). */
int64_t askew__skew_local(const struct askew_skews *t, int64_t node, int64_t now_ns);
/* A node's wall reading, ns after the wall epoch (time.time, REALTIME). */
int64_t askew__skew_wall(const struct askew_skews *t, int64_t node, int64_t now_ns);
/* The world time at which node's monotonic clock reads local_ns, now being
 * now_ns: where a deadline set on that clock falls. */
int64_t askew__skew_global(const struct askew_skews *t, int64_t node, int64_t local_ns,
                           int64_t now_ns);
/* Loop._set_skew(node, offset_ns, drift_ppb) on `sched`, whose timers of
 * that node move with its clock. None, or NULL with an exception. */
PyObject *askew__skew_set(struct askew_skews *t, struct askew_sched *sched,
                          PyObject *args);
/* Open (delta +1) or close (-1) one pause of node, or close them all (0: a
 * crash); the last close puts its held callbacks back on `sched`'s ready
 * queue. 0, or -1 with an exception. */
int askew__skew_pause(struct askew_skews *t, struct askew_sched *sched, long long node,
                      long long delta);
/* Whether node is paused: its callbacks are held, not run. */
static inline int askew__skew_paused(const struct askew_skews *t, int64_t node)
{
    return node >= 0 && (size_t)node < t->cap && t->nodes[node].paused;
}
/* Hold a callback of a paused node; its queue reference moves to the held
 * list. 0, or -1 with an exception (the reference is then still the
 * caller's). */
int askew__skew_hold(struct askew_skews *t, struct askew_handle *h);
/* Drop every held callback (run teardown). */
void askew__skew_drop_held(struct askew_skews *t);
int askew__skew_traverse(const struct askew_skews *t, visitproc visit, void *arg);

#endif
