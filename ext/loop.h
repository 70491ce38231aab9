/* SPDX-License-Identifier: Apache-2.0 */
/* The loop object's C layout and the seams between loop.c (the scheduler
 * binding) and skew.c (per-node clocks). The loop owns the world log
 * (log.h), the node gate (node.h) and its network (network.h), which reach
 * back only through what the loop hands them. Binding files only. */
#ifndef ASKEW_LOOP_H
#define ASKEW_LOOP_H

#include "core.h"
#include "log.h"
#include "network.h"
#include "node.h"

struct askew_coverage;

struct askew_skew {
    struct askew_node_clock clock; /* the engine's: ext/engine/skew.c */
    uint32_t paused;               /* pauses open on the node; > 0 runs nothing */
    char active;                   /* skewed at least once this run */
};

struct askew_handle;

struct askew_loop_state {
    PyObject_HEAD struct askew_sched sched;
    /* Its module's state (borrowed: the loop holds its type, the type its
     * module). */
    struct askew_state *state;
    struct askew_rng entropy;
    uint64_t handle_seq;
    uint64_t task_seq;
    int64_t node_current;  /* the node whose callback runs now, -1 for the world */
    int64_t wall_epoch_ns; /* Unix ns the wall clocks read at virtual time 0 */
    unsigned long thread_id;
    uint64_t gc_every;
    PyObject *task_factory;
    PyObject *gc_collect;
    PyObject *future_kwargs; /* {"loop": self}, for create_future */
    PyObject *time_view;     /* a user's replacement of loop.time, or NULL */
    PyObject *step_hook;     /* called after every step when set (world.always) */
    struct askew_coverage *coverage; /* shrink3: coverage.h; NULL when off */
    struct askew_skew *skews;
    size_t skews_cap; /* entries, zeroed until used: index is the node id */
    /* Callbacks of paused nodes, in the order they came up; each holds the
     * reference the ready queue held. */
    struct askew_handle **held;
    size_t held_len;
    size_t held_cap;
    /* CPU time each node's incarnation has used (index node + 1; 0 is the
     * world): the sum of its steps' CPU draws, what its CPU clocks read. */
    struct askew_cpu {
        int64_t ns;
        uint32_t incarnation;
    } *cpu;
    size_t cpu_len;              /* capacity: entries past the nodes seen are zero */
    askew_network *net;          /* strong; loop._net */
    struct askew_node_gate gate; /* set: callbacks carry the node they run as */
    struct askew_log log;
    char running;
    char stopping;
    char closed;
    char debug;
};

/* The default wall epoch in Unix ns (preload/askew_preload.h's, in s). */
#define ASKEW_WALL_EPOCH_NS (ASKEW_WALL_EPOCH_S * 1000000000LL)
/* The latest wall epoch a run may take, Unix ns: room above it for all of
 * virtual time (2**62 ns, patch.c), so epoch + now fits int64 ns and C's
 * REALTIME, time.time and the preload read one clock (2116-02-20). */
#define ASKEW_WALL_EPOCH_MAX_NS (INT64_MAX - ((int64_t)1 << 62))

/* What Loop._run returns (exported as _core.RUN_*): stopped, idle (nothing
 * ready, no timer), past the time budget, past the step budget. */
enum askew_run_status {
    ASKEW_RUN_STOPPED = 0,
    ASKEW_RUN_IDLE = 1,
    ASKEW_RUN_TIME_BUDGET = 2,
    ASKEW_RUN_STEP_BUDGET = 3
};

/* Module init: the Loop type, RUN_* and STRATEGIES. */
int askew__loop_type_init(PyObject *module);
/* The running node's CPU time, ns: what its CPU-time clocks read. */
int64_t askew__loop_cpu_ns(struct askew_loop_state *self);
/* A timer handle for deadline_ns on the world clock. New reference. */
PyObject *askew__loop_call_at_ns(struct askew_loop_state *self, int64_t deadline_ns,
                                 PyObject *callback, PyObject *const *args,
                                 Py_ssize_t nargs, PyObject *context);
/* loop.create_future(). New reference. */
PyObject *askew__loop_new_future(struct askew_loop_state *self);
/* Loop seconds in the running node's clock to a world deadline in ns. */
int askew__loop_local_when_to_ns(struct askew_loop_state *self, double when,
                                 int64_t *out);
/* The running node's view of the world clock, ns. */
int64_t askew__loop_local_ns(struct askew_loop_state *self);
/* The running node's wall clock, ns after the wall epoch. */
int64_t askew__loop_wall_ns(struct askew_loop_state *self);
/* The wall clock reading wall_ns (askew__loop_wall_ns) in ns since the
 * Unix epoch as Linux's CLOCK_REALTIME reads it: never before 1970 (a clock stepped
 * back before it reads 0) and held at the end of int64 ns (a century's skew on a late
 * epoch). */
int64_t askew__loop_unix_ns(struct askew_loop_state *self, int64_t wall_ns);

/* skew.c */
int askew__skew_init(struct askew_loop_state *self);
void askew__skew_free(struct askew_loop_state *self);
void askew__skew_reset(struct askew_loop_state *self);
/* A node's monotonic reading at world time now_ns (loop.time, monotonic). */
int64_t askew__skew_local(struct askew_loop_state *self, int64_t node, int64_t now_ns);
/* A node's wall reading, ns after the wall epoch (time.time, REALTIME). */
int64_t askew__skew_wall(struct askew_loop_state *self, int64_t node, int64_t now_ns);
int64_t askew__skew_global(struct askew_loop_state *self, int64_t node,
                           int64_t local_ns);
PyObject *askew__skew_set(struct askew_loop_state *self, PyObject *args);
PyObject *askew__skew_pause(struct askew_loop_state *self, PyObject *args);
/* Whether node is paused: its callbacks are held, not run. */
static inline int askew__skew_paused(const struct askew_loop_state *self, int64_t node)
{
    return node >= 0 && (size_t)node < self->skews_cap && self->skews[node].paused;
}
/* Hold a callback of a paused node; its queue reference moves to the held
 * list. 0, or -1 with an exception (the reference is then still the
 * caller's). */
int askew__skew_hold(struct askew_loop_state *self, struct askew_handle *h);
/* Drop every held callback (run teardown). */
void askew__skew_drop_held(struct askew_loop_state *self);
int askew__skew_traverse(struct askew_loop_state *self, visitproc visit, void *arg);

#endif
