/* SPDX-License-Identifier: Apache-2.0 */
/* Per-node clocks, the binding half: world.faults.skew(node, offset=...,
 * drift=...) sets a node's clock (the arithmetic is the engine's, in
 * ext/engine/skew.c), and this file answers loop.time(), time.*, the
 * preload and TimerHandle.when() in the node's clocks. Timers a node sets
 * in its monotonic clock are converted to world deadlines so that they fire
 * when its clock says; a new drift moves them. Never reads the host clock. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "handle.h"
#include "loop.h"

int askew__skew_init(struct askew_loop_state *self)
{
    self->skews = NULL;
    self->skews_len = 0;
    return 0;
}

void askew__skew_free(struct askew_loop_state *self)
{
    free(self->skews);
    self->skews = NULL;
    self->skews_len = 0;
}

void askew__skew_reset(struct askew_loop_state *self)
{
    if (self->skews_len)
        memset(self->skews, 0, self->skews_len * sizeof *self->skews);
}

static inline const struct askew_node_clock *clock_of(struct askew_loop_state *self,
                                                      int64_t node)
{
    if (node < 0 || (size_t)node >= self->skews_len || !self->skews[node].active)
        return NULL;
    return &self->skews[node].clock;
}

int64_t askew__skew_local(struct askew_loop_state *self, int64_t node, int64_t now_ns)
{
    const struct askew_node_clock *c = clock_of(self, node);
    int64_t mono;
    if (c == NULL)
        return now_ns;
    /* Out of range only for times no run reaches (the budget ends virtual
     * time at 2**62 ns): saturate rather than wrap. */
    if (askew_node_clock_mono(c, now_ns, &mono) < 0)
        return now_ns < c->base_ns ? INT64_MIN : INT64_MAX;
    return mono;
}

int64_t askew__skew_wall(struct askew_loop_state *self, int64_t node, int64_t now_ns)
{
    const struct askew_node_clock *c = clock_of(self, node);
    int64_t wall;
    if (c == NULL)
        return now_ns;
    if (askew_node_clock_wall(c, now_ns, &wall) < 0)
        return c->offset_ns < 0 ? INT64_MIN : INT64_MAX;
    return wall;
}

int64_t askew__skew_global(struct askew_loop_state *self, int64_t node,
                           int64_t local_ns)
{
    const struct askew_node_clock *c = clock_of(self, node);
    int64_t g;
    if (c == NULL || local_ns == INT64_MAX)
        return local_ns;
    if (askew_node_clock_deadline(c, local_ns, &g) < 0)
        return local_ns > c->mono_base_ns ? INT64_MAX : self->sched.now_ns;
    return g;
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

static int grow(struct askew_loop_state *self, long long node)
{
    if ((size_t)node < self->skews_len)
        return 0;
    size_t len = self->skews_len ? self->skews_len : 8;
    while (len <= (size_t)node)
        len *= 2;
    struct askew_skew *grown = realloc(self->skews, len * sizeof *grown);
    if (grown == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    memset(grown + self->skews_len, 0, (len - self->skews_len) * sizeof *grown);
    self->skews = grown;
    self->skews_len = len;
    return 0;
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
    /* The node's pending timers were set in its monotonic clock: note each
     * one's reading under the old clock, to move it under the new one. */
    askew_handle **moved = NULL;
    int64_t *local = NULL;
    size_t n_moved = 0;
    struct askew_heap *heap = &self->sched.timers;
    if (heap->len) {
        moved = PyMem_Malloc(heap->len * sizeof *moved);
        local = PyMem_Malloc(heap->len * sizeof *local);
        if (moved == NULL || local == NULL) {
            PyMem_Free(moved);
            PyMem_Free(local);
            return PyErr_NoMemory();
        }
        for (size_t i = 0; i < heap->len; i++) {
            struct askew_timer *t = heap->items[i].timer;
            if (t->kind != ASKEW_TIMER_KIND_HANDLE)
                continue;
            askew_handle *h =
                (askew_handle *)((char *)t - offsetof(askew_handle, timer));
            if (h->node != node || t->deadline_ns == INT64_MAX)
                continue;
            moved[n_moved] = h;
            local[n_moved] = askew__skew_local(self, node, t->deadline_ns);
            n_moved++;
        }
    }
    s->clock = next;
    s->active = 1;
    for (size_t i = 0; i < n_moved; i++) {
        struct askew_timer *t = &moved[i]->timer;
        int64_t deadline = askew__skew_global(self, node, local[i]);
        if (deadline < self->sched.now_ns)
            deadline = self->sched.now_ns; /* overdue: due now, not in the past */
        if (deadline == t->deadline_ns)
            continue;
        askew_sched_timer_cancel(&self->sched, t);
        t->deadline_ns = deadline;
        /* The heap had room for it a moment ago: re-adding cannot grow it. */
        const int add = askew_sched_timer_add(&self->sched, t);
        ASKEW_ASSERT(add == 0);
    }
    PyMem_Free(moved);
    PyMem_Free(local);
    Py_RETURN_NONE;
}

/* ---- pauses --------------------------------------------------------------- */

int askew__skew_hold(struct askew_loop_state *self, askew_handle *h)
{
    if (self->held_len == self->held_cap) {
        const size_t cap = self->held_cap ? self->held_cap * 2 : 16;
        askew_handle **grown = realloc(self->held, cap * sizeof *grown);
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        self->held = grown;
        self->held_cap = cap;
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
