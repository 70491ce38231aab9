/* SPDX-License-Identifier: Apache-2.0 */
/* Per-node clocks and pauses, the binding half: world.faults.skew(node,
 * offset=..., drift=...) sets a node's clock, and this file answers
 * loop.time(), time.*, the preload and TimerHandle.when() in the node's
 * clocks; world.faults.pause holds a node's callbacks here until it
 * resumes. The arithmetic, and moving a node's timers when its clock
 * changes, are the engine's (ext/engine/skew.c); this file parses the
 * arguments, keeps the per-node table and the held callbacks (struct
 * askew_skews, which the loop embeds), and raises. It sits below the loop:
 * the loop's units call it with the scheduler to work on, and it calls
 * none of theirs. Never reads the host clock. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "handle.h"
#include "skew.h"

void askew__skew_init(struct askew_skews *t)
{
    memset(t, 0, sizeof *t);
}

void askew__skew_free(struct askew_skews *t)
{
    free(t->nodes);
    t->nodes = NULL;
    t->cap = 0;
}

void askew__skew_reset(struct askew_skews *t)
{
    if (t->cap)
        memset(t->nodes, 0, t->cap * sizeof *t->nodes);
}

static inline const struct askew_node_clock *clock_of(const struct askew_skews *t,
                                                      int64_t node)
{
    if (node < 0 || (size_t)node >= t->cap || !t->nodes[node].active)
        return NULL;
    return &t->nodes[node].clock;
}

int64_t askew__skew_local(const struct askew_skews *t, int64_t node, int64_t now_ns)
{
    const struct askew_node_clock *c = clock_of(t, node);
    return c == NULL ? now_ns : askew_node_clock_mono_sat(c, now_ns);
}

int64_t askew__skew_wall(const struct askew_skews *t, int64_t node, int64_t now_ns)
{
    const struct askew_node_clock *c = clock_of(t, node);
    return c == NULL ? now_ns : askew_node_clock_wall_sat(c, now_ns);
}

int64_t askew__skew_global(const struct askew_skews *t, int64_t node, int64_t local_ns,
                           int64_t now_ns)
{
    const struct askew_node_clock *c = clock_of(t, node);
    return c == NULL ? local_ns : askew_node_clock_due(c, local_ns, now_ns);
}

/* Room in the per-node table for `node`; new entries are zeroed (an
 * identity clock, no pause). */
static int grow(struct askew_skews *t, long long node)
{
    const int rc =
        askew__grow((void **)&t->nodes, &t->cap, (size_t)node + 1, sizeof *t->nodes);
    if (rc < 0) {
        askew__raise_engine(rc, "growing the per-node clocks");
        return -1;
    }
    return 0;
}

/* Whether a timer is a handle of the node `ctx` points to: the timers set
 * on that node's clock. */
static int node_timer(const struct askew_timer *t, void *ctx)
{
    return t->kind == ASKEW_TIMER_KIND_HANDLE &&
           askew__handle_of(t)->node == *(long long *)ctx;
}

/* _set_skew(node, offset_ns, drift_ppb): checked in Python first; the
 * engine's refusal is reported here with the values it refused. */
PyObject *askew__skew_set(struct askew_skews *t, struct askew_sched *sched,
                          PyObject *args)
{
    long long node, offset_ns, drift_ppb;
    if (!PyArg_ParseTuple(args, "LLL", &node, &offset_ns, &drift_ppb))
        return NULL;
    if (node < 0) {
        PyErr_Format(PyExc_ValueError, "node id must be >= 0, not %lld", node);
        return NULL;
    }
    if (grow(t, node) < 0)
        return NULL;
    struct askew_skew *s = &t->nodes[node];
    struct askew_node_clock next = s->clock;
    const int rc = askew_node_clock_set(&next, sched->now_ns, offset_ns, drift_ppb);
    if (rc == -EINVAL) {
        PyErr_Format(PyExc_ValueError,
                     "drift must lie in (-1, 1): %lld ppb is not in (-1e9, 1e9)",
                     drift_ppb);
        return NULL;
    }
    if (rc < 0) {
        PyErr_Format(PyExc_OverflowError,
                     "offset %lld ns at t=%lld ns puts node %lld's clock past the "
                     "int64 nanosecond range; offsets must keep it within +-292 years",
                     offset_ns, (long long)sched->now_ns, node);
        return NULL;
    }
    /* The node's pending timers were set on its monotonic clock: they move
     * with it. An identity clock (never skewed this run) is all zeros. */
    const int moved = askew_sched_rekey(sched, &s->clock, &next, node_timer, &node);
    if (moved < 0)
        return askew__raise_engine(moved, "moving the node's timers");
    s->clock = next;
    s->active = 1;
    Py_RETURN_NONE;
}

/* ---- pauses --------------------------------------------------------------- */

int askew__skew_hold(struct askew_skews *t, askew_handle *h)
{
    const int rc =
        askew__grow((void **)&t->held, &t->held_cap, t->held_len + 1, sizeof *t->held);
    if (rc < 0) {
        askew__raise_engine(rc, "holding a paused node's callback");
        return -1;
    }
    t->held[t->held_len++] = h;
    h->queued = 1;
    return 0;
}

void askew__skew_drop_held(struct askew_skews *t)
{
    /* Take the list first: a decref may run a finalizer that reaches here. */
    askew_handle **held = t->held;
    const size_t len = t->held_len;
    t->held = NULL;
    t->held_len = t->held_cap = 0;
    for (size_t i = 0; i < len; i++) {
        held[i]->queued = 0;
        Py_DECREF(held[i]);
    }
    free(held);
}

int askew__skew_traverse(const struct askew_skews *t, visitproc visit, void *arg)
{
    for (size_t i = 0; i < t->held_len; i++)
        Py_VISIT((PyObject *)t->held[i]);
    return 0;
}

/* The node's held callbacks go back to the ready queue in the order they
 * came up: what was ready first, then its timers in deadline order. */
static int release(struct askew_skews *t, struct askew_sched *sched, long long node)
{
    size_t kept = 0;
    for (size_t i = 0; i < t->held_len; i++) {
        askew_handle *h = t->held[i];
        if (h->node != node) {
            t->held[kept++] = h;
            continue;
        }
        const int rc = askew_sched_push(sched, h, h->seq, askew__handle_loop_key(h));
        if (rc < 0) {
            /* Keep the rest held so that teardown releases them. */
            for (size_t j = i; j < t->held_len; j++)
                t->held[kept++] = t->held[j];
            t->held_len = kept;
            askew__raise_engine(rc, "resuming a paused node");
            return -1;
        }
    }
    t->held_len = kept;
    return 0;
}

int askew__skew_pause(struct askew_skews *t, struct askew_sched *sched, long long node,
                      long long delta)
{
    if (node < 0 || delta < -1 || delta > 1) {
        PyErr_Format(
            PyExc_ValueError,
            "_pause(node=%lld, delta=%lld): node must be >= 0 and delta one of "
            "-1, 0, 1",
            node, delta);
        return -1;
    }
    if (grow(t, node) < 0)
        return -1;
    struct askew_skew *s = &t->nodes[node];
    if (delta > 0) {
        s->paused++;
    } else if (s->paused > 0) {
        s->paused = delta < 0 ? s->paused - 1 : 0;
        if (s->paused == 0 && release(t, sched, node) < 0)
            return -1;
    }
    return 0;
}
