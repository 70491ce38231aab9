/* SPDX-License-Identifier: Apache-2.0 */
/* Per-node clocks and pauses, the binding half: world.faults.skew(node,
 * offset=..., drift=...) sets a node's clock, and this file answers
 * loop.time(), time.*, the preload and TimerHandle.when() in the node's
 * clocks; world.faults.pause holds a node's callbacks here until it
 * resumes. The arithmetic, and moving a node's timers when its clock
 * changes, are the engine's (ext/engine/skew.c); this file parses the
 * arguments, keeps the per-node table and the held callbacks, and raises.
 * Never reads the host clock. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "handle.h"
#include "loop.h"

int askew__skew_init(struct askew_loop_state *self)
{
    self->skews = NULL;
    self->skews_cap = 0;
    return 0;
}

void askew__skew_free(struct askew_loop_state *self)
{
    free(self->skews);
    self->skews = NULL;
    self->skews_cap = 0;
}

void askew__skew_reset(struct askew_loop_state *self)
{
    if (self->skews_cap)
        memset(self->skews, 0, self->skews_cap * sizeof *self->skews);
}

static inline const struct askew_node_clock *clock_of(struct askew_loop_state *self,
                                                      int64_t node)
{
    if (node < 0 || (size_t)node >= self->skews_cap || !self->skews[node].active)
        return NULL;
    return &self->skews[node].clock;
}

int64_t askew__skew_local(struct askew_loop_state *self, int64_t node, int64_t now_ns)
{
    const struct askew_node_clock *c = clock_of(self, node);
    return c == NULL ? now_ns : askew_node_clock_mono_sat(c, now_ns);
}

int64_t askew__skew_wall(struct askew_loop_state *self, int64_t node, int64_t now_ns)
{
    const struct askew_node_clock *c = clock_of(self, node);
    return c == NULL ? now_ns : askew_node_clock_wall_sat(c, now_ns);
}

int64_t askew__skew_global(struct askew_loop_state *self, int64_t node,
                           int64_t local_ns)
{
    const struct askew_node_clock *c = clock_of(self, node);
    return c == NULL ? local_ns : askew_node_clock_due(c, local_ns, self->sched.now_ns);
}

double askew__skew_handle_when(PyObject *loop, askew_handle *h)
{
    struct askew_loop_state *self = (struct askew_loop_state *)loop;
    const int64_t d = h->timer.deadline_ns;
    /* A deadline is a world time; asyncio code compares when() with
     * loop.time(), which reads the owning node's monotonic clock. */
    if (self == NULL || d == INT64_MAX || d == INT64_MIN / 2)
        return (double)d / 1e9;
    return (double)askew__skew_local(self, h->node, d) / 1e9;
}

/* Room in the per-node table for `node`; new entries are zeroed (an
 * identity clock, no pause). */
static int grow(struct askew_loop_state *self, long long node)
{
    const int rc = askew__grow((void **)&self->skews, &self->skews_cap,
                               (size_t)node + 1, sizeof *self->skews);
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
PyObject *askew__skew_set(struct askew_loop_state *self, PyObject *args)
{
    long long node, offset_ns, drift_ppb;
    if (!PyArg_ParseTuple(args, "LLL", &node, &offset_ns, &drift_ppb))
        return NULL;
    if (node < 0) {
        PyErr_Format(PyExc_ValueError, "node id must be >= 0, not %lld", node);
        return NULL;
    }
    if (grow(self, node) < 0)
        return NULL;
    struct askew_skew *s = &self->skews[node];
    struct askew_node_clock next = s->clock;
    const int rc =
        askew_node_clock_set(&next, self->sched.now_ns, offset_ns, drift_ppb);
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
                     offset_ns, (long long)self->sched.now_ns, node);
        return NULL;
    }
    /* The node's pending timers were set on its monotonic clock: they move
     * with it. An identity clock (never skewed this run) is all zeros. */
    const int moved =
        askew_sched_rekey(&self->sched, &s->clock, &next, node_timer, &node);
    if (moved < 0)
        return askew__raise_engine(moved, "moving the node's timers");
    s->clock = next;
    s->active = 1;
    Py_RETURN_NONE;
}

/* ---- pauses --------------------------------------------------------------- */

int askew__skew_hold(struct askew_loop_state *self, askew_handle *h)
{
    const int rc = askew__grow((void **)&self->held, &self->held_cap,
                               self->held_len + 1, sizeof *self->held);
    if (rc < 0) {
        askew__raise_engine(rc, "holding a paused node's callback");
        return -1;
    }
    self->held[self->held_len++] = h;
    h->queued = 1;
    return 0;
}

void askew__skew_drop_held(struct askew_loop_state *self)
{
    /* Take the list first: a decref may run a finalizer that reaches here. */
    askew_handle **held = self->held;
    const size_t len = self->held_len;
    self->held = NULL;
    self->held_len = self->held_cap = 0;
    for (size_t i = 0; i < len; i++) {
        held[i]->queued = 0;
        Py_DECREF(held[i]);
    }
    free(held);
}

int askew__skew_traverse(struct askew_loop_state *self, visitproc visit, void *arg)
{
    for (size_t i = 0; i < self->held_len; i++)
        Py_VISIT((PyObject *)self->held[i]);
    return 0;
}

/* The node's held callbacks go back to the ready queue in the order they
 * came up: what was ready first, then its timers in deadline order. */
static int release(struct askew_loop_state *self, long long node)
{
    size_t kept = 0;
    for (size_t i = 0; i < self->held_len; i++) {
        askew_handle *h = self->held[i];
        if (h->node != node) {
            self->held[kept++] = h;
            continue;
        }
        const int rc =
            askew_sched_push(&self->sched, h, h->seq, (uint64_t)(h->node + 1));
        if (rc < 0) {
            /* Keep the rest held so that teardown releases them. */
            for (size_t j = i; j < self->held_len; j++)
                self->held[kept++] = self->held[j];
            self->held_len = kept;
            askew__raise_engine(rc, "resuming a paused node");
            return -1;
        }
    }
    self->held_len = kept;
    return 0;
}

/* _pause(node, delta, until_ns, callback): delta +1 opens a pause, -1
 * closes one, 0 closes them all (a crash: a power cut ends a pause). With
 * delta +1 and until_ns >= 0, callback runs at world time until_ns in the
 * world's context, and its TimerHandle is returned; else None. */
PyObject *askew__skew_pause(struct askew_loop_state *self, PyObject *args)
{
    long long node, delta, until_ns;
    PyObject *callback;
    if (!PyArg_ParseTuple(args, "LLLO", &node, &delta, &until_ns, &callback))
        return NULL;
    if (node < 0 || delta < -1 || delta > 1) {
        PyErr_Format(
            PyExc_ValueError,
            "_pause(node=%lld, delta=%lld): node must be >= 0 and delta one of "
            "-1, 0, 1",
            node, delta);
        return NULL;
    }
    if (grow(self, node) < 0)
        return NULL;
    struct askew_skew *s = &self->skews[node];
    if (delta > 0) {
        s->paused++;
    } else if (s->paused > 0) {
        s->paused = delta < 0 ? s->paused - 1 : 0;
        if (s->paused == 0 && release(self, node) < 0)
            return NULL;
    }
    if (delta <= 0 || until_ns < 0)
        Py_RETURN_NONE;
    PyObject *world = PyContext_New(); // new reference: no node in it
    if (world == NULL)
        return NULL;
    PyObject *timer = askew__loop_call_at_ns(self, until_ns, callback, NULL, 0, world);
    Py_DECREF(world);
    return timer;
}
