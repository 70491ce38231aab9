/* SPDX-License-Identifier: Apache-2.0 */
/* The loop's clocks (see loop.h): each node's monotonic, wall and CPU time
 * as the loop reads them from the scheduler and the per-node table, the
 * conversion of loop seconds to world deadlines, the clock and entropy the
 * preload is handed, and the virtual time a blocking call consumes. Virtual
 * time only: never reads the host clock, never sleeps, never blocks. Called
 * by the loop's other units, the patched time functions (patch.c), the
 * preload binding and the disks; it calls only skew.c, errors.c and the
 * engine. */
#include <errno.h>
#include <math.h>

#include "errors.h"
#include "handle.h"
#include "loop.h"

int64_t askew__loop_local_ns(struct askew_loop_state *self)
{
    return askew__skew_local(&self->skews, self->node_current, self->sched.now_ns);
}

int64_t askew__loop_wall_ns(struct askew_loop_state *self)
{
    return askew__skew_wall(&self->skews, self->node_current, self->sched.now_ns);
}

int64_t askew__loop_unix_ns(struct askew_loop_state *self, int64_t wall_ns)
{
    const int64_t epoch_ns = self->wall_epoch_ns;
    if (wall_ns < -epoch_ns)
        return 0;
    return wall_ns > INT64_MAX - epoch_ns ? INT64_MAX : wall_ns + epoch_ns;
}

int askew__loop_now(struct askew_loop_state *self, double *out)
{
    if (self->time_view == NULL) {
        *out = askew__ns_to_s(askew__loop_local_ns(self));
        return 0;
    }
    PyObject *res = PyObject_CallNoArgs(self->time_view);
    if (res == NULL)
        return -1;
    *out = PyFloat_AsDouble(res);
    Py_DECREF(res);
    return *out == -1.0 && PyErr_Occurred() ? -1 : 0;
}

int askew__loop_seconds_to_ns(double when, int64_t *out)
{
    if (isnan(when)) {
        PyErr_SetString(PyExc_ValueError, "a time must be a number, not NaN");
        return -1;
    }
    if (when >= 9.2e9) {
        *out = INT64_MAX;
        return 0;
    }
    if (when <= -9.2e9) {
        *out = INT64_MIN / 2;
        return 0;
    }
    int64_t ns = (int64_t)llround(when * 1e9);
    while (askew__ns_to_s(ns) < when)
        ns++;
    *out = ns;
    return 0;
}

int64_t askew__loop_cpu_ns(struct askew_loop_state *self)
{
    const size_t i = (size_t)(self->node_current + 1);
    return i < self->cpu_len ? self->cpu[i].ns : 0;
}

/* A restarted node is a new process: its CPU time starts again from zero. */
int askew__loop_charge_cpu(struct askew_loop_state *self, const askew_handle *h)
{
    const size_t i = (size_t)(h->node + 1);
    const int grown =
        askew__grow((void **)&self->cpu, &self->cpu_len, i + 1, sizeof *self->cpu);
    if (grown < 0) {
        askew__raise_engine(grown, "growing the per-node CPU clocks");
        return -1;
    }
    struct askew_cpu *c = &self->cpu[i];
    if (c->incarnation != h->incarnation) {
        c->incarnation = h->incarnation;
        c->ns = 0;
    }
    c->ns += self->sched.step_cpu_ns;
    return 0;
}

int askew__clock_read(void *ctx, int realtime, struct timespec *out)
{
    struct askew_loop_state *self = ctx;
    if (realtime == ASKEW_CLOCK_CPUTIME) {
        const int64_t cpu_ns = askew__loop_cpu_ns(self);
        out->tv_sec = (time_t)(cpu_ns / 1000000000);
        out->tv_nsec = (long)(cpu_ns % 1000000000);
        return 0;
    }
    /* A monotonic clock never reads below 0 (the boot of the simulation);
     * the wall clock as askew__loop_unix_ns holds it. */
    int64_t ns = realtime ? askew__loop_unix_ns(self, askew__loop_wall_ns(self))
                          : askew__loop_local_ns(self);
    if (ns < 0)
        ns = 0;
    out->tv_sec = (time_t)(ns / 1000000000);
    out->tv_nsec = (long)(ns % 1000000000);
    return 0;
}

int askew__entropy_fill(void *ctx, void *buf, size_t len)
{
    struct askew_loop_state *self = ctx;
    if (len == 0)
        return 0;
    askew_rng_fill(&self->entropy, buf, len);
    askew_trace_record(&self->sched.trace, self->sched.now_ns, ASKEW_EV_ENTROPY,
                       (int32_t)self->node_current, (uint64_t)len, 0);
    return 0;
}

/* A time in the running node's clock to a deadline on the world's clock. */
int askew__loop_local_when_to_ns(struct askew_loop_state *self, double when,
                                 int64_t *out)
{
    int64_t local_ns;
    if (askew__loop_seconds_to_ns(when, &local_ns) < 0)
        return -1;
    *out = askew__skew_global(&self->skews, self->node_current, local_ns,
                              self->sched.now_ns);
    return 0;
}

int askew__loop_consume_ns(void *ctx, int64_t ns)
{
    struct askew_loop_state *loop = ctx;
    if (ns < 0)
        return -EINVAL;
    if (ns == 0 || loop->dead)
        return 0;
    const int64_t node = loop->node_current;
    const int64_t local = askew__loop_local_ns(loop);
    if (local >= ASKEW_VIRTUAL_END_NS || ns >= ASKEW_VIRTUAL_END_NS - local)
        return -EOVERFLOW;
    /* The node sleeps on its own clock; with drift that is a little more or
     * less world time. The world clock never goes back. */
    const int64_t target =
        askew__skew_global(&loop->skews, node, local + ns, loop->sched.now_ns);
    if (target >= ASKEW_VIRTUAL_END_NS)
        return -EOVERFLOW;
    if (loop->sched.time_max_ns > 0 && target > loop->sched.time_max_ns)
        return -ETIME;
    loop->sched.now_ns = target;
    askew_trace_record(&loop->sched.trace, target, ASKEW_EV_ADVANCE, (int32_t)node,
                       (uint64_t)target, (uint64_t)ns);
    return 0;
}
