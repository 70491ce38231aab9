/* SPDX-License-Identifier: Apache-2.0 */
/* A node's clocks as functions of world time, in integer nanoseconds: a
 * wall clock that an offset steps (backwards too, as NTP does) and a
 * monotonic clock that runs at rate 1 + drift and never jumps or stops,
 * whatever the skews do. Pure arithmetic in 128 bits: every result that
 * would leave int64 is -ERANGE (or, in the _sat forms, the edge), never a
 * wrap; drift is kept inside (-1, 1) so that no rate is zero and no
 * division is by zero. Also moves a node's timers in the scheduler's heap
 * when its clock changes. Never reads the host clock; ext/skew.c calls it
 * for loop.time(), time.*, the preload and timer deadlines. */
#include <errno.h>
#include <stdlib.h>

#include "engine.h"

#define NS_PER_S 1000000000

static inline __int128 floor_div(__int128 a, __int128 b)
{
    const __int128 q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static inline __int128 ceil_div(__int128 a, __int128 b)
{
    return -floor_div(-a, b);
}

static inline int to_i64(__int128 v, int64_t *out)
{
    if (v > INT64_MAX || v < INT64_MIN)
        return -ERANGE;
    *out = (int64_t)v;
    return 0;
}

void askew_node_clock_init(struct askew_node_clock *c)
{
    *c = (struct askew_node_clock){0, 0, 0, 0};
}

int askew_node_clock_mono(const struct askew_node_clock *c, int64_t now_ns,
                          int64_t *out)
{
    /* Floor division keeps the reading non-decreasing in now_ns, also for
     * times before base_ns (a timer set before the last skew). */
    const __int128 rate = (__int128)NS_PER_S + c->drift_ppb;
    const __int128 run = floor_div(((__int128)now_ns - c->base_ns) * rate, NS_PER_S);
    return to_i64((__int128)c->mono_base_ns + run, out);
}

int askew_node_clock_wall(const struct askew_node_clock *c, int64_t now_ns,
                          int64_t *out)
{
    const __int128 drifted =
        floor_div(((__int128)now_ns - c->base_ns) * c->drift_ppb, NS_PER_S);
    return to_i64((__int128)now_ns + c->offset_ns + drifted, out);
}

int askew_node_clock_deadline(const struct askew_node_clock *c, int64_t mono_ns,
                              int64_t *world_ns)
{
    /* The least t with mono(t) >= mono_ns: mono_base + floor((t - base) *
     * rate / 1e9) >= mono_ns holds exactly when (t - base) * rate >=
     * (mono_ns - mono_base) * 1e9, so t - base is that product's ceiling
     * divided by rate (rate >= 1, see askew_node_clock_set). */
    const __int128 rate = (__int128)NS_PER_S + c->drift_ppb;
    const __int128 span =
        ceil_div(((__int128)mono_ns - c->mono_base_ns) * NS_PER_S, rate);
    return to_i64((__int128)c->base_ns + span, world_ns);
}

int askew_node_clock_set(struct askew_node_clock *c, int64_t now_ns, int64_t offset_ns,
                         int64_t drift_ppb)
{
    if (drift_ppb <= -NS_PER_S || drift_ppb >= NS_PER_S)
        return -EINVAL;
    /* The monotonic clock goes on from where it is now; the wall clock must
     * be representable at once (it is now + offset). */
    int64_t mono;
    const int rc = askew_node_clock_mono(c, now_ns, &mono);
    if (rc < 0)
        return rc;
    int64_t wall;
    if (to_i64((__int128)now_ns + offset_ns, &wall) < 0)
        return -ERANGE;
    c->base_ns = now_ns;
    c->mono_base_ns = mono;
    c->offset_ns = offset_ns;
    c->drift_ppb = drift_ppb;
    return 0;
}

int64_t askew_node_clock_mono_sat(const struct askew_node_clock *c, int64_t now_ns)
{
    int64_t mono;
    if (askew_node_clock_mono(c, now_ns, &mono) < 0)
        return now_ns < c->base_ns ? INT64_MIN : INT64_MAX;
    return mono;
}

int64_t askew_node_clock_wall_sat(const struct askew_node_clock *c, int64_t now_ns)
{
    int64_t wall;
    if (askew_node_clock_wall(c, now_ns, &wall) < 0)
        return c->offset_ns < 0 ? INT64_MIN : INT64_MAX;
    return wall;
}

int64_t askew_node_clock_due(const struct askew_node_clock *c, int64_t mono_ns,
                             int64_t now_ns)
{
    if (mono_ns == INT64_MAX)
        return INT64_MAX;
    int64_t world;
    if (askew_node_clock_deadline(c, mono_ns, &world) < 0)
        return mono_ns > c->mono_base_ns ? INT64_MAX : now_ns;
    return world;
}

/* A timer to move and where to. */
struct move {
    struct askew_timer *timer;
    int64_t deadline_ns;
};

int askew_sched_rekey(struct askew_sched *sched, const struct askew_node_clock *old,
                      const struct askew_node_clock *next, askew_timer_pred mine,
                      void *ctx)
{
    const struct askew_heap *heap = &sched->timers;
    const int64_t now = sched->now_ns;
    /* Every new deadline first, from the heap as it is: moving one timer
     * reorders the heap under the walk. */
    struct move *moves = NULL;
    size_t moves_len = 0;
    size_t moves_cap = 0;
    for (size_t i = 0; i < heap->len; i++) {
        struct askew_timer *t = heap->items[i].timer;
        if (t->deadline_ns == INT64_MAX || !mine(t, ctx))
            continue;
        const int64_t local = askew_node_clock_mono_sat(old, t->deadline_ns);
        int64_t deadline = askew_node_clock_due(next, local, now);
        if (deadline < now)
            deadline = now; /* overdue: due now, not in the past */
        if (deadline == t->deadline_ns)
            continue;
        const int rc =
            askew__grow((void **)&moves, &moves_cap, moves_len + 1, sizeof *moves);
        if (rc < 0) {
            free(moves);
            return rc;
        }
        moves[moves_len++] = (struct move){t, deadline};
    }
    for (size_t i = 0; i < moves_len; i++) {
        struct askew_timer *t = moves[i].timer;
        askew_sched_timer_cancel(sched, t);
        t->deadline_ns = moves[i].deadline_ns;
        /* The heap had room for it a moment ago: re-adding cannot grow it. */
        const int add = askew_sched_timer_add(sched, t);
        ASKEW_ASSERT(add == 0);
    }
    free(moves);
    return 0;
}
