/* SPDX-License-Identifier: Apache-2.0 */
/* The scheduler: the ready queue, the strategies that order a tick's batch,
 * and the tick itself (fire due timers, move the clock to the next timer
 * when nothing is ready). A tick is asyncio's _run_once: work queued while a
 * batch runs waits for the next tick. Under "faithful" the batch is grouped
 * by event loop (key), each group runs in FIFO order, the group of each step
 * is drawn from the scheduling stream, every step costs seeded virtual CPU
 * time and the clock wakes a seeded overshoot after a deadline: only
 * schedules that asyncio processes on some machine could produce. Never
 * reads the host clock, never calls back into Python itself. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

int askew_sched_init(struct askew_sched *sched)
{
    memset(sched, 0, sizeof *sched);
    askew_heap_init(&sched->timers);
    sched->pct_depth = 1;
    sched->pct_steps = 1;
    askew_sched_reset(sched, 0);
    return 0;
}

void askew_sched_free(struct askew_sched *sched)
{
    askew_heap_free(&sched->timers);
    free(sched->ring);
    free(sched->batch);
    free(sched->sorted);
    free(sched->groups);
    free(sched->key_slots);
    free(sched->fired);
    memset(sched, 0, sizeof *sched);
}

/* PCT's d - 1 change points, each uniform in [1, k], drawn in order and
 * then sorted (insertion: d is small). */
static void draw_change_points(struct askew_sched *sched)
{
    ASKEW_ASSERT(sched->pct_depth >= 1 && sched->pct_depth <= ASKEW_PCT_DEPTH_MAX);
    ASKEW_ASSERT(sched->pct_steps >= 1);
    uint64_t *at = sched->pct_change_at;
    for (uint32_t i = 0; i + 1 < sched->pct_depth; i++) {
        const uint64_t step = 1 + askew_rng_below(&sched->rng, sched->pct_steps);
        uint32_t j = i;
        for (; j > 0 && at[j - 1] > step; j--)
            at[j] = at[j - 1];
        at[j] = step;
    }
}

void askew_sched_reset(struct askew_sched *sched, uint64_t seed)
{
    ASKEW_ASSERT(askew_sched_pending(sched) == 0 && sched->timers.len == 0);
    sched->seed = seed;
    askew_rng_seed(&sched->rng, askew_seed_stream(seed, ASKEW_STREAM_SCHED));
    sched->now_ns = 0;
    sched->view_ns = INT64_MIN;
    sched->steps = 0;
    sched->timer_seq = 0;
    sched->group_now = 0;
    sched->group_next = 0;
    sched->ring_head = 0;
    sched->batch_len = sched->batch_pos = sched->groups_len = 0;
    askew_trace_reset(&sched->trace);
    sched->pct_run++;
    sched->pct_next = 0;
    if (sched->strategy == ASKEW_STRATEGY_PCT)
        draw_change_points(sched);
}

int askew_sched_push(struct askew_sched *sched, void *item, uint64_t seq, uint64_t key)
{
    if (sched->ring_len == sched->ring_cap) {
        /* Unroll the ring into a larger array, oldest first. */
        const size_t cap = sched->ring_cap ? sched->ring_cap * 2 : 256;
        struct askew_ready *ring = malloc(cap * sizeof *ring);
        if (ring == NULL)
            return -ENOMEM;
        for (size_t i = 0; i < sched->ring_len; i++)
            ring[i] = sched->ring[(sched->ring_head + i) % sched->ring_cap];
        free(sched->ring);
        sched->ring = ring;
        sched->ring_cap = cap;
        sched->ring_head = 0;
    }
    struct askew_ready *slot =
        &sched->ring[(sched->ring_head + sched->ring_len) % sched->ring_cap];
    slot->item = item;
    slot->seq = seq;
    slot->group = sched->strategy == ASKEW_STRATEGY_INTERLEAVE ? sched->group_now : key;
    sched->ring_len++;
    return 0;
}

int askew_sched_timer_add(struct askew_sched *sched, struct askew_timer *timer)
{
    timer->seq = sched->timer_seq++;
    return askew_heap_push(&sched->timers, timer);
}

void askew_sched_timer_cancel(struct askew_sched *sched, struct askew_timer *timer)
{
    askew_heap_remove(&sched->timers, timer);
}

static int grouped(const struct askew_sched *sched)
{
    return sched->strategy == ASKEW_STRATEGY_FAITHFUL ||
           sched->strategy == ASKEW_STRATEGY_INTERLEAVE ||
           sched->strategy == ASKEW_STRATEGY_PCT ||
           sched->strategy == ASKEW_STRATEGY_PCTCP;
}

/* The strategies that charge CPU time per step and overshoot deadlines. */
static int costed(const struct askew_sched *sched)
{
    return sched->strategy == ASKEW_STRATEGY_FAITHFUL ||
           sched->strategy == ASKEW_STRATEGY_PCT ||
           sched->strategy == ASKEW_STRATEGY_PCTCP;
}

size_t askew_sched_pending(const struct askew_sched *sched)
{
    size_t left = sched->ring_len;
    if (grouped(sched)) {
        for (size_t g = 0; g < sched->groups_len; g++)
            left += sched->groups[g].end - sched->groups[g].pos;
    } else {
        left += sched->batch_len - sched->batch_pos;
    }
    return left;
}

/* Uniform in [lo, hi] ns from the scheduling stream; nothing drawn when the
 * span is empty. The caller folds the value into the trace. */
static int64_t draw_span(struct askew_sched *sched, int64_t lo, int64_t hi)
{
    return hi <= lo
               ? lo
               : lo + (int64_t)askew_rng_below(&sched->rng, (uint64_t)(hi - lo) + 1);
}

static void shuffle_timers(struct askew_sched *sched, struct askew_timer **t, size_t n)
{
    for (size_t i = n - 1; i > 0; i--) {
        const size_t j = (size_t)askew_rng_below(&sched->rng, i + 1);
        struct askew_timer *tmp = t[i];
        t[i] = t[j];
        t[j] = tmp;
    }
}

/* Pop every due timer, earlier deadlines first and equal deadlines in
 * registration order, as asyncio's heap of (when, ...) gives them. The
 * strategies that may leave asyncio's orders draw the order of ties. */
static int fire_due(struct askew_sched *sched, askew_fire_fn fire, void *ctx)
{
    const int64_t due_ns =
        sched->view_ns > sched->now_ns ? sched->view_ns : sched->now_ns;
    size_t n = 0;
    for (;;) {
        const struct askew_timer *top = askew_heap_peek(&sched->timers);
        if (top == NULL || top->deadline_ns > due_ns)
            break;
        const int rc = askew__grow((void **)&sched->fired, &sched->fired_cap, n + 1,
                                   sizeof *sched->fired);
        if (rc < 0)
            return rc;
        sched->fired[n++] = askew_heap_pop(&sched->timers);
    }
    if (sched->strategy == ASKEW_STRATEGY_INTERLEAVE ||
        sched->strategy == ASKEW_STRATEGY_SHUFFLE) {
        for (size_t start = 0; start < n;) {
            size_t end = start + 1;
            while (end < n &&
                   sched->fired[end]->deadline_ns == sched->fired[start]->deadline_ns)
                end++;
            if (end - start > 1)
                shuffle_timers(sched, sched->fired + start, end - start);
            start = end;
        }
    }
    for (size_t i = 0; i < n; i++) {
        struct askew_timer *t = sched->fired[i];
        askew_trace_mix(&sched->trace, t->seq ^ ((uint64_t)t->kind << 56));
        sched->group_now = ++sched->group_next;
        const int rc = fire(ctx, t);
        if (rc < 0) {
            /* Give the rest back to the heap so teardown still sees them. */
            for (size_t k = i + 1; k < n; k++)
                (void)askew_heap_push(&sched->timers, sched->fired[k]);
            sched->group_now = 0;
            return rc;
        }
    }
    sched->group_now = 0;
    return 0;
}

static int add_group(struct askew_sched *sched, size_t pos, size_t end)
{
    const int rc = askew__grow((void **)&sched->groups, &sched->groups_cap,
                               sched->groups_len + 1, sizeof *sched->groups);
    if (rc < 0)
        return rc;
    sched->groups[sched->groups_len].pos = pos;
    sched->groups[sched->groups_len].end = end;
    sched->groups_len++;
    return 0;
}

/* Items pushed by one step are contiguous: each run is a group. */
static int group_runs(struct askew_sched *sched)
{
    for (size_t i = 0; i < sched->batch_len; i++) {
        if (i > 0 && sched->batch[i].group == sched->batch[i - 1].group) {
            sched->groups[sched->groups_len - 1].end = i + 1;
            continue;
        }
        const int rc = add_group(sched, i, i + 1);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* Group the batch by key, keeping FIFO order within each key (a stable
 * counting sort): groups come in the order their keys first appear. One
 * key, the common case of a bare loop, costs one pass. */
static int group_keys(struct askew_sched *sched)
{
    const size_t n = sched->batch_len;
    struct askew_ready *batch = sched->batch;
    size_t same = 1;
    while (same < n && batch[same].group == batch[0].group)
        same++;
    if (same == n)
        return add_group(sched, 0, n);
    uint64_t key_max = 0;
    for (size_t i = 0; i < n; i++)
        key_max = batch[i].group > key_max ? batch[i].group : key_max;
    /* New slots come zeroed: stamp 0 is never a batch's. */
    int rc = askew__grow((void **)&sched->key_slots, &sched->key_slots_cap,
                         (size_t)key_max + 1, sizeof *sched->key_slots);
    if (rc == 0)
        rc = askew__grow((void **)&sched->sorted, &sched->sorted_cap, n,
                         sizeof *sched->sorted);
    if (rc < 0)
        return rc;
    const uint64_t stamp = ++sched->batches;
    /* Count each key's items into its group's `end`. */
    for (size_t i = 0; i < n; i++) {
        struct askew_key_slot *slot = &sched->key_slots[batch[i].group];
        if (slot->stamp != stamp) {
            slot->stamp = stamp;
            slot->group = sched->groups_len;
            rc = add_group(sched, 0, 0);
            if (rc < 0)
                return rc;
        }
        sched->groups[slot->group].end++;
    }
    /* Counts to extents, then place each item at its group's cursor. */
    size_t at = 0;
    for (size_t g = 0; g < sched->groups_len; g++) {
        const size_t count = sched->groups[g].end;
        sched->groups[g].pos = sched->groups[g].end = at;
        at += count;
    }
    for (size_t i = 0; i < n; i++)
        sched->sorted[sched->groups[sched->key_slots[batch[i].group].group].end++] =
            batch[i];
    /* The sorted copy becomes the batch; the old array is the next scratch. */
    struct askew_ready *sorted = sched->sorted;
    const size_t sorted_cap = sched->sorted_cap;
    sched->sorted = sched->batch;
    sched->sorted_cap = sched->batch_cap;
    sched->batch = sorted;
    sched->batch_cap = sorted_cap;
    return 0;
}

/* PCT: give each key of the batch that has no priority in this run a
 * random one, in batch order, one draw each. Initial priorities lie above
 * every change-point priority (< ASKEW_PCT_DEPTH_MAX); ties, which need
 * two equal 63-bit draws, go to the lower key. */
static int pct_prioritize(struct askew_sched *sched)
{
    uint64_t key_max = 0;
    for (size_t i = 0; i < sched->batch_len; i++)
        key_max = sched->batch[i].group > key_max ? sched->batch[i].group : key_max;
    const int rc = askew__grow((void **)&sched->key_slots, &sched->key_slots_cap,
                               (size_t)key_max + 1, sizeof *sched->key_slots);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < sched->batch_len; i++) {
        struct askew_key_slot *slot = &sched->key_slots[sched->batch[i].group];
        if (slot->prio_run != sched->pct_run) {
            slot->prio_run = sched->pct_run;
            slot->prio = ASKEW_PCT_DEPTH_MAX + (askew_rng_next(&sched->rng) >> 1);
        }
    }
    return 0;
}

/* PCT: the group whose key has the highest priority. */
static size_t pct_pick(const struct askew_sched *sched)
{
    size_t best = 0;
    uint64_t best_key = sched->batch[sched->groups[0].pos].group;
    for (size_t g = 1; g < sched->groups_len; g++) {
        const uint64_t key = sched->batch[sched->groups[g].pos].group;
        const uint64_t p = sched->key_slots[key].prio;
        const uint64_t q = sched->key_slots[best_key].prio;
        if (p > q || (p == q && key < best_key)) {
            best = g;
            best_key = key;
        }
    }
    return best;
}

static int build_batch(struct askew_sched *sched)
{
    const size_t n = sched->ring_len;
    int rc =
        askew__grow((void **)&sched->batch, &sched->batch_cap, n, sizeof *sched->batch);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < n; i++)
        sched->batch[i] = sched->ring[(sched->ring_head + i) % sched->ring_cap];
    sched->ring_head = 0;
    sched->ring_len = 0;
    sched->batch_len = n;
    sched->batch_pos = 0;
    sched->groups_len = 0;
    switch (sched->strategy) {
    case ASKEW_STRATEGY_FAITHFUL:
    case ASKEW_STRATEGY_PCTCP: /* its choices are the network's (net.c) */
        return group_keys(sched);
    case ASKEW_STRATEGY_PCT:
        rc = pct_prioritize(sched);
        return rc < 0 ? rc : group_keys(sched);
    case ASKEW_STRATEGY_INTERLEAVE:
        return group_runs(sched);
    case ASKEW_STRATEGY_SHUFFLE:
        for (size_t i = n; i > 1; i--) {
            const size_t j = (size_t)askew_rng_below(&sched->rng, i);
            struct askew_ready tmp = sched->batch[i - 1];
            sched->batch[i - 1] = sched->batch[j];
            sched->batch[j] = tmp;
        }
        break;
    case ASKEW_STRATEGY_FIFO:
        break;
    }
    return 0;
}

int askew_sched_tick(struct askew_sched *sched, askew_fire_fn fire, void *ctx)
{
    /* A batch cut short (stop, an escaping KeyboardInterrupt) resumes first,
     * as asyncio keeps the rest of its ready deque. */
    if (askew_sched_pending(sched) != sched->ring_len)
        return ASKEW_TICK_READY;
    int rc = fire_due(sched, fire, ctx);
    if (rc < 0)
        return rc;
    /* Fired timers may queue nothing (a message dropped when due): keep
     * moving the clock until something is ready or no timer is left. */
    while (sched->ring_len == 0) {
        const struct askew_timer *next = askew_heap_peek(&sched->timers);
        if (next == NULL)
            return ASKEW_TICK_IDLE;
        if (sched->time_max_ns > 0 && next->deadline_ns > sched->time_max_ns)
            return ASKEW_TICK_TIME_MAX;
        /* A loop that slept until a deadline wakes a little after it, never
         * before: the overshoot of a real select() or epoll_wait(). */
        int64_t wake_ns = next->deadline_ns;
        if (costed(sched) && wake_ns < INT64_MAX / 2)
            wake_ns += draw_span(sched, sched->overshoot_ns_lo, sched->overshoot_ns_hi);
        if (wake_ns > sched->now_ns)
            sched->now_ns = wake_ns;
        askew_trace_mix(&sched->trace, (uint64_t)sched->now_ns); /* the draw too */
        rc = fire_due(sched, fire, ctx);
        if (rc < 0)
            return rc;
    }
    rc = build_batch(sched);
    return rc < 0 ? rc : ASKEW_TICK_READY;
}

/* The next ready entry of the batch by the strategy, or NULL at its end. */
static inline struct askew_ready *batch_next(struct askew_sched *sched)
{
    if (!grouped(sched))
        return sched->batch_pos == sched->batch_len ? NULL
                                                    : &sched->batch[sched->batch_pos++];
    if (sched->groups_len == 0)
        return NULL;
    size_t g = 0;
    if (sched->groups_len > 1 && sched->strategy == ASKEW_STRATEGY_PCT) {
        g = pct_pick(sched);
        askew_trace_mix(&sched->trace, sched->batch[sched->groups[g].pos].group);
    } else if (sched->groups_len > 1) {
        g = (size_t)askew_rng_below(&sched->rng, sched->groups_len);
        askew_trace_mix(&sched->trace, g);
    }
    struct askew_run_group *grp = &sched->groups[g];
    struct askew_ready *r = &sched->batch[grp->pos++];
    if (grp->pos == grp->end)
        *grp = sched->groups[--sched->groups_len];
    return r;
}

void *askew_sched_next(struct askew_sched *sched)
{
    const struct askew_ready *r = batch_next(sched);
    if (r == NULL) {
        sched->group_now = 0;
        return NULL;
    }
    sched->steps++;
    sched->group_now = ++sched->group_next;
    /* PCT: at a change point the loop that ran the step drops below every
     * loop not yet dropped (its key has a slot: pct_prioritize made it). */
    while (sched->strategy == ASKEW_STRATEGY_PCT &&
           sched->pct_next + 1 < sched->pct_depth &&
           sched->pct_change_at[sched->pct_next] == sched->steps) {
        sched->key_slots[r->group].prio = sched->pct_depth - 1 - sched->pct_next;
        sched->pct_next++;
    }
    uint64_t traced = r->seq;
    /* Code takes time to run: the step's CPU time passes before the next.
     * The draw is folded into the same trace value as the step. */
    sched->step_cpu_ns = 0;
    if (costed(sched) && sched->cpu_ns_hi > 0) {
        sched->step_cpu_ns = draw_span(sched, sched->cpu_ns_lo, sched->cpu_ns_hi);
        sched->now_ns += sched->step_cpu_ns;
        traced ^= (uint64_t)sched->step_cpu_ns << 40;
    }
    askew_trace_mix(&sched->trace, traced);
    return r->item;
}

int askew_sched_visit(const struct askew_sched *sched, askew_visit_fn visit,
                      askew_visit_timer_fn visit_timer, void *ctx)
{
    if (grouped(sched)) {
        for (size_t g = 0; g < sched->groups_len; g++) {
            for (size_t i = sched->groups[g].pos; i < sched->groups[g].end; i++) {
                const int rc = visit(sched->batch[i].item, ctx);
                if (rc != 0)
                    return rc;
            }
        }
    } else {
        for (size_t i = sched->batch_pos; i < sched->batch_len; i++) {
            const int rc = visit(sched->batch[i].item, ctx);
            if (rc != 0)
                return rc;
        }
    }
    for (size_t i = 0; i < sched->ring_len; i++) {
        const int rc =
            visit(sched->ring[(sched->ring_head + i) % sched->ring_cap].item, ctx);
        if (rc != 0)
            return rc;
    }
    for (size_t i = 0; i < sched->timers.len; i++) {
        const int rc = visit_timer(sched->timers.items[i].timer, ctx);
        if (rc != 0)
            return rc;
    }
    return 0;
}

void askew_sched_clear(struct askew_sched *sched, void (*drop)(void *item),
                       void (*drop_timer)(struct askew_timer *timer))
{
    /* One item at a time, each taken off its queue before it is dropped: a
     * drop may run code (a finalizer) that queues more, which must find the
     * queues consistent, and which is dropped in turn. Nothing is drawn. */
    for (;;) {
        if (grouped(sched) && sched->groups_len > 0) {
            struct askew_run_group *grp = &sched->groups[sched->groups_len - 1];
            void *item = sched->batch[grp->pos++].item;
            if (grp->pos == grp->end)
                sched->groups_len--;
            drop(item);
        } else if (!grouped(sched) && sched->batch_pos < sched->batch_len) {
            drop(sched->batch[sched->batch_pos++].item);
        } else if (sched->ring_len > 0) {
            void *item = sched->ring[sched->ring_head].item;
            sched->ring_head = (sched->ring_head + 1) % sched->ring_cap;
            sched->ring_len--;
            drop(item);
        } else {
            struct askew_timer *t = askew_heap_pop(&sched->timers);
            if (t == NULL)
                break;
            drop_timer(t);
        }
    }
    sched->batch_len = sched->batch_pos = sched->groups_len = 0;
    sched->ring_head = 0;
    sched->group_now = 0;
}
