/* SPDX-License-Identifier: Apache-2.0 */
/* Per-node clocks: world.faults.skew(node, offset=..., drift=...) makes a
 * node read local = now + offset + drift * (now - base). A node's reading
 * never goes backwards, whatever the skew does, so time.monotonic() and
 * loop.time() stay monotonic; timers a node sets in its own clock are
 * converted back to world time so that they fire when its clock says. */
#include "handle.h"
#include "loop.h"

#include <stdlib.h>
#include <string.h>

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

static inline const struct askew_skew *skew_of(struct askew_loop_state *self,
                                               int64_t node)
{
    if (node < 0 || (size_t)node >= self->skews_len || !self->skews[node].active)
        return NULL;
    return &self->skews[node];
}

static int64_t raw_local(const struct askew_skew *s, int64_t now_ns)
{
    const __int128 drift = (__int128)(now_ns - s->base_ns) * s->drift_ppb / 1000000000;
    return now_ns + s->offset_ns + (int64_t)drift;
}

int64_t askew__skew_local(struct askew_loop_state *self, int64_t node, int64_t now_ns)
{
    const struct askew_skew *c = skew_of(self, node);
    if (c == NULL)
        return now_ns;
    struct askew_skew *s = &self->skews[node];
    int64_t local = raw_local(s, now_ns);
    if (local < s->last_local_ns)
        local = s->last_local_ns;
    s->last_local_ns = local;
    return local;
}

int64_t askew__skew_global(struct askew_loop_state *self, int64_t node,
                           int64_t local_ns)
{
    const struct askew_skew *s = skew_of(self, node);
    if (s == NULL || local_ns == INT64_MAX)
        return local_ns;
    /* Invert the line, then step until the node's clock has reached it. */
    const __int128 span = (__int128)(local_ns - s->offset_ns - s->base_ns) *
                          1000000000 / (1000000000 + s->drift_ppb);
    int64_t g = s->base_ns + (int64_t)span;
    if (g < self->sched.now_ns)
        g = self->sched.now_ns;
    for (int i = 0; i < 8 && raw_local(s, g) < local_ns; i++)
        g++; /* integer rounding leaves it a step or two short at most */
    return g;
}

/* _set_skew(node, offset_ns, drift_ppb); drift is checked in Python. */
PyObject *askew__skew_set(struct askew_loop_state *self, PyObject *args)
{
    long long node, offset_ns, drift_ppb;
    if (!PyArg_ParseTuple(args, "LLL", &node, &offset_ns, &drift_ppb))
        return NULL;
    if (node < 0) {
        PyErr_Format(PyExc_ValueError, "node id must be >= 0, not %lld", node);
        return NULL;
    }
    if ((size_t)node >= self->skews_len) {
        size_t len = self->skews_len ? self->skews_len : 8;
        while (len <= (size_t)node)
            len *= 2;
        struct askew_skew *grown = realloc(self->skews, len * sizeof *grown);
        if (grown == NULL)
            return PyErr_NoMemory();
        memset(grown + self->skews_len, 0, (len - self->skews_len) * sizeof *grown);
        self->skews = grown;
        self->skews_len = len;
    }
    struct askew_skew *s = &self->skews[node];
    /* The node's pending timers were set in its own clock: note each one's
     * local deadline under the old skew, to move it under the new one. */
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
            local[n_moved] = s->active ? raw_local(s, t->deadline_ns) : t->deadline_ns;
            n_moved++;
        }
    }
    /* Keep what the node has read so far: its clock never goes back. */
    const int64_t seen = s->active ? askew__skew_local(self, node, self->sched.now_ns)
                                   : self->sched.now_ns;
    s->offset_ns = offset_ns;
    s->drift_ppb = drift_ppb;
    s->base_ns = self->sched.now_ns;
    s->last_local_ns = seen > s->last_local_ns ? seen : s->last_local_ns;
    s->active =
        offset_ns != 0 || drift_ppb != 0 || s->last_local_ns > self->sched.now_ns;
    for (size_t i = 0; i < n_moved; i++) {
        struct askew_timer *t = &moved[i]->timer;
        const int64_t deadline = askew__skew_global(self, node, local[i]);
        if (deadline == t->deadline_ns)
            continue;
        askew_sched_timer_cancel(&self->sched, t);
        t->deadline_ns = deadline;
        /* The heap had room for it a moment ago: re-adding cannot grow it. */
        const int rc = askew_sched_timer_add(&self->sched, t);
        ASKEW_ASSERT(rc == 0);
    }
    PyMem_Free(moved);
    PyMem_Free(local);
    Py_RETURN_NONE;
}
