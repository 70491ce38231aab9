/* SPDX-License-Identifier: Apache-2.0 */
/* The loop's C state and its clocks (loop.c): struct askew_loop_state,
 * the layout every loop unit and the units above the loop read, and what a
 * node's clocks read in it (loop.time, time.*, the preload's clock and
 * entropy, virtual time a blocking call consumes). The lowest of the loop's
 * units: loop_sched.c (scheduling), loop_run.c (the run loop) and
 * loop_type.c (the Python type) build on it. The loop owns the world log
 * (log.h), the node gate (node.h), the per-node clocks (skew.h) and its
 * network (network.h), which reach back only through what the loop hands
 * them. Binding files only. */
#ifndef ASKEW_LOOP_H
#define ASKEW_LOOP_H

#include <time.h>

#include "core.h"
#include "log.h"
#include "network.h"
#include "node.h"
#include "skew.h"

struct askew_coverage;
struct askew_handle;

struct askew_loop_state {
    PyObject_HEAD struct askew_sched sched;
    /* Its module's state (borrowed: the loop holds its type, the type its
     * module). */
    struct askew_state *state;
    struct askew_rng entropy;
    uint64_t handle_seq;
    uint64_t task_seq;
    uint64_t future_seq;
    /* Which run this is: each reset starts a new epoch (from 1). What an
     * earlier run made and surfaces in this one is dropped, and counted in
     * `stale`: a callback of a Future or Task of another epoch (loop_sched.c),
     * an exception-handler call or a finalizer about one (askew/_loop/loop.py). */
    uint64_t epoch;
    uint64_t stale;
    int64_t node_current; /* the node whose callback runs now, -1 for the world */
    int64_t
        node_stepped; /* while the step hook runs: the node of the step it follows */
    int64_t wall_epoch_ns; /* Unix ns the wall clocks read at virtual time 0 */
    unsigned long thread_id;
    uint64_t gc_every;
    PyObject *task_factory;
    PyObject *gc_collect;
    PyObject *future_kwargs; /* {"loop": self}, for create_future */
    PyObject *time_view;     /* a user's replacement of loop.time, or NULL */
    PyObject *step_hook;     /* called after every step when set (world.always) */
    struct askew_coverage *coverage; /* shrink3: coverage.h; NULL when off */
    struct askew_skews skews;        /* per-node clocks and pauses: skew.h */
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
    /* The dead zone at the end of a run (set by _set_dead, cleared by the
     * next reset): the run's verdict is in, and what user code still runs
     * (a finally, a close, a finalizer) moves no clock. */
    char dead;
};

/* The default wall epoch in Unix ns (preload/askew_preload.h's, in s). */
#define ASKEW_WALL_EPOCH_NS (ASKEW_WALL_EPOCH_S * 1000000000LL)
/* The latest wall epoch a run may take, Unix ns: room above it for all of
 * virtual time (2**62 ns, patch.c), so epoch + now fits int64 ns and C's
 * REALTIME, time.time and the preload read one clock (2116-02-20). */
#define ASKEW_WALL_EPOCH_MAX_NS (INT64_MAX - ((int64_t)1 << 62))

/* Virtual time ends here, well short of INT64_MAX: a node's clock is the
 * world's plus a skew, and neither sum may overflow. 2**62 ns is 146 years,
 * far past any max_time. */
#define ASKEW_VIRTUAL_END_NS ((int64_t)1 << 62)

static inline double askew__ns_to_s(int64_t ns)
{
    return (double)ns / 1e9;
}

/* Loop seconds to a deadline in ns, rounded up so that when the timer fires
 * loop.time() >= when holds in float (asyncio.timeout relies on it). 0, or
 * -1 with ValueError for NaN. */
int askew__loop_seconds_to_ns(double when, int64_t *out);
/* loop.time() as the loop's own code must see it: the user's replacement
 * when there is one. 0, or -1 with its exception. */
int askew__loop_now(struct askew_loop_state *self, double *out);
/* The running node's CPU time, ns: what its CPU-time clocks read. */
int64_t askew__loop_cpu_ns(struct askew_loop_state *self);
/* Add the step `h` just ran to its node's CPU time (a restarted node starts
 * again from zero). 0, or -1 with an exception. */
int askew__loop_charge_cpu(struct askew_loop_state *self, const struct askew_handle *h);
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

/* Virtual time for the node running now (skew included), for the preload's
 * clock hook (ctx is the loop). Plain C: safe without the GIL, never calls
 * Python. Returns 0 or -errno. */
int askew__clock_read(void *ctx, int realtime, struct timespec *out);
/* Bytes from the run's entropy stream, traced. Plain C, as above. */
int askew__entropy_fill(void *ctx, void *buf, size_t len);
/* Let `ns` nanoseconds of the running node's clock pass on the loop `ctx`
 * (an askew_loop_state): what a blocking sleep does to a real loop. Logged
 * in the trace hash. Plain C, safe without the GIL (only the simulation
 * thread moves the clock); time.sleep's, the preload's sleep hook, a disk
 * latency. 0; -EINVAL for ns < 0; -EOVERFLOW past the end of virtual time
 * (ASKEW_VIRTUAL_END_NS); -ETIME past the run's time budget (max_time). The
 * clock does not move on an error, nor in the dead zone (time is frozen
 * there: 0 at once). */
int askew__loop_consume_ns(void *ctx, int64_t ns);

#endif
