/* SPDX-License-Identifier: Apache-2.0 */
/* The askew engine API: the seeded PRNG, the virtual clock and its timer
 * heap, the ready queue and its strategies, and the trace. Pure C: this
 * header and every file under ext/engine/ never include Python.h, so each unit
 * is tested by Check alone. Functions return 0 or a negative errno; results
 * come back through out-parameters. Time is always integer nanoseconds. */
#ifndef ASKEW_ENGINE_H
#define ASKEW_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* An invariant check that stays on in release builds (pip compiles with
 * -DNDEBUG): an engine invariant broken is a bug worth a crash, not a wrong
 * schedule that replays wrongly. */
#define ASKEW_ASSERT(cond)                                                             \
    do {                                                                               \
        if (__builtin_expect(!(cond), 0))                                              \
            askew__assert_fail(#cond, __FILE__, __LINE__);                             \
    } while (0)
__attribute__((noreturn)) void askew__assert_fail(const char *expr, const char *file,
                                                  int line);

/* ---- grow.c: growing arrays ---------------------------------------------- */

/* Make room for `need` elements of `elem` bytes in *buf, whose capacity is
 * *cap elements: the capacity doubles (from 16 when empty) until it holds
 * need, and the new elements are zeroed. 0, or -ENOMEM with *buf and *cap
 * unchanged. The check is inline (hot paths call it once per tick or per
 * timer); askew__grow_alloc does the growing. */
int askew__grow_alloc(void **buf, size_t *cap, size_t need, size_t elem);
static inline int askew__grow(void **buf, size_t *cap, size_t need, size_t elem)
{
    return need <= *cap ? 0 : askew__grow_alloc(buf, cap, need, elem);
}

/* ---- rng.c: xoshiro256** seeded by splitmix64 ------------------------- */

struct askew_rng {
    uint64_t s[4];
};

/* Streams derived from one run seed, one per purpose, so that one more draw
 * for one purpose never shifts another's. The numbers are part of the
 * determinism contract: never renumber. */
enum askew_stream {
    ASKEW_STREAM_SCHED = 1,
    ASKEW_STREAM_NET = 2,
    ASKEW_STREAM_FAULTS = 3,
    ASKEW_STREAM_USER = 4,
    ASKEW_STREAM_ENTROPY = 5,
    ASKEW_STREAM_PYRANDOM = 6,
    /* Entropy drawn while a module is imported (ext/preload.c). */
    ASKEW_STREAM_IMPORT = 7,
    /* askew.buggify's decisions (askew/_explore/buggify.py), each point's name mixed
     * in. */
    ASKEW_STREAM_BUGGIFY = 8,
    /* The swarm configuration a seed runs under (askew/_explore/swarm.py). */
    ASKEW_STREAM_SWARM = 9,
    /* The simulated disks' crash outcomes and faults (ext/engine/disk.c),
     * one derived stream per disk. */
    ASKEW_STREAM_DISK = 10,
    /* numpy's legacy global generator, reseeded at every run start when
     * numpy is loaded (askew/_loop/patches.py). */
    ASKEW_STREAM_NUMPY = 11,
    /* libc's global generators (rand, random, drand48), reseeded per run
     * by the preload (ext/preload.c hands it this stream's seed). */
    ASKEW_STREAM_LIBC = 12,
    /* Each node's pid and thread ids as the preload and askew/_loop/identity.py
     * report them (ext/preload_identity.c). */
    ASKEW_STREAM_IDENTITY = 13,
    /* Which runnable thread of a run holds the baton next (ext/engine/baton.c). */
    ASKEW_STREAM_THREADS = 14,
};

uint64_t askew_splitmix64_next(uint64_t *state);
void askew_rng_seed(struct askew_rng *rng, uint64_t seed);
uint64_t askew_rng_next(struct askew_rng *rng);
/* Uniform in [0, bound); bound must be > 0. Unbiased (Lemire's method). */
uint64_t askew_rng_below(struct askew_rng *rng, uint64_t bound);
/* Uniform in [lo, hi], inclusive; lo <= hi. */
int64_t askew_rng_range(struct askew_rng *rng, int64_t lo, int64_t hi);
/* True with probability ppm / 1e6. Draws nothing when ppm is 0 or >= 1e6. */
int askew_rng_chance_ppm(struct askew_rng *rng, uint32_t ppm);
void askew_rng_fill(struct askew_rng *rng, void *buf, size_t len);
/* The seed of stream `purpose` of a run seeded `seed`. */
uint64_t askew_seed_stream(uint64_t seed, uint64_t purpose);
/* The seed of iteration `i` of a sweep based at `base`: iteration 0 is
 * `base` itself, so a reported seed replays alone. */
uint64_t askew_seed_iteration(uint64_t base, uint64_t i);

/* ---- clock.c: the virtual clock and the timer heap --------------------- */

/* A timer lives inside its owner (a loop handle, a message in flight); the
 * heap holds pointers and keeps `index` current, so cancellation is a
 * removal in O(log n). Ordered by (deadline_ns, seq): seq is unique. */
struct askew_timer {
    int64_t deadline_ns;
    uint64_t seq;
    size_t index;  /* position in the heap, ASKEW_TIMER_IDLE when not queued */
    uint32_t kind; /* what the owner is; the engine never looks inside */
};
#define ASKEW_TIMER_IDLE ((size_t)-1)

/* The heap keeps each timer's key beside its pointer, so that sifting
 * compares within the array and never loads the timers themselves: with a
 * million messages in flight that is the difference between a cache miss
 * per level and none. */
struct askew_heap_slot {
    int64_t deadline_ns;
    uint64_t seq;
    struct askew_timer *timer;
};

struct askew_heap {
    struct askew_heap_slot *items;
    size_t len;
    size_t cap;
};

void askew_heap_init(struct askew_heap *heap);
void askew_heap_free(struct askew_heap *heap);
int askew_heap_push(struct askew_heap *heap, struct askew_timer *timer);
struct askew_timer *askew_heap_peek(const struct askew_heap *heap);
struct askew_timer *askew_heap_pop(struct askew_heap *heap);
/* Remove a queued timer; a timer not in the heap is left alone. */
void askew_heap_remove(struct askew_heap *heap, struct askew_timer *timer);

/* ---- skew.c: a node's clocks from world time ----------------------------- */

/* A node's clocks as of its last skew at world time base_ns: its wall clock
 * (ns after the wall epoch) reads now + offset + drift * (now - base), and
 * its monotonic clock mono_base + (1 + drift) * (now - base). An identity
 * clock is all zeros. drift_ppb lies in (-1e9, 1e9), so both rates are
 * positive. */
struct askew_node_clock {
    int64_t base_ns;
    int64_t mono_base_ns;
    int64_t offset_ns;
    int64_t drift_ppb;
};

void askew_node_clock_init(struct askew_node_clock *c);
/* The readings at world time now_ns; -ERANGE when one leaves int64. */
int askew_node_clock_mono(const struct askew_node_clock *c, int64_t now_ns,
                          int64_t *out);
int askew_node_clock_wall(const struct askew_node_clock *c, int64_t now_ns,
                          int64_t *out);
/* The earliest world time at which the monotonic clock reads >= mono_ns:
 * when a timer set in the node's clock is due. -ERANGE when that lies past
 * int64 (the timer never fires). */
int askew_node_clock_deadline(const struct askew_node_clock *c, int64_t mono_ns,
                              int64_t *world_ns);
/* Skew at world time now_ns: the wall clock steps to now + offset and
 * drifts from there; the monotonic clock goes on from its current reading
 * at the new rate, never jumping. -EINVAL for a drift outside (-1e9, 1e9)
 * ppb, -ERANGE when a reading would leave int64; the clock is unchanged on
 * error. */
int askew_node_clock_set(struct askew_node_clock *c, int64_t now_ns, int64_t offset_ns,
                         int64_t drift_ppb);

/* The readings again, saturated instead of failing, for the binding's
 * clocks: a reading past int64 is the edge it went past (no run reaches
 * those times: virtual time ends at 2**62 ns). askew_node_clock_due is the
 * world deadline of a timer set for mono_ns on the node's clock: INT64_MAX
 * ("never") stays never, one past int64 never fires, one before the int64
 * range is due now (now_ns). */
int64_t askew_node_clock_mono_sat(const struct askew_node_clock *c, int64_t now_ns);
int64_t askew_node_clock_wall_sat(const struct askew_node_clock *c, int64_t now_ns);
int64_t askew_node_clock_due(const struct askew_node_clock *c, int64_t mono_ns,
                             int64_t now_ns);

/* ---- sched.c: the ready queue, strategies, budgets ---------------------- */

/* How a tick's batch is ordered (DESIGN §2, "Strategies"). */
enum askew_strategy {
    /* Each loop (key) runs asyncio's order exactly; across keys, steps
     * interleave by the PRNG; every step costs seeded CPU time and the clock
     * wakes a seeded overshoot after a deadline. Only schedules asyncio can
     * produce. */
    ASKEW_STRATEGY_FAITHFUL = 0,
    ASKEW_STRATEGY_FIFO = 1,       /* asyncio's order, no cost, no overshoot */
    ASKEW_STRATEGY_INTERLEAVE = 2, /* independent steps interleave by PRNG */
    ASKEW_STRATEGY_SHUFFLE = 3,    /* the whole batch permuted */
    /* Faithful, but the loop of each step is the ready one of highest
     * priority (PCT, Burckhardt et al. 2010): random distinct priorities per
     * key, lowered at pct_depth - 1 change-point steps drawn uniformly from
     * [1, pct_steps]. Within a key, asyncio's order; only schedules asyncio
     * can produce. */
    ASKEW_STRATEGY_PCT = 4,
    /* Faithful across and within loops, and the network's latency draws
     * replaced by priorities over chains of messages (PCTCP, Ozkan et al.
     * 2018; see net.h): each message's latency is a function of its chain's
     * priority, inside the link's range, so every delivery order is one a
     * latency within the range could produce. pct_depth - 1 change points
     * fall on sends drawn uniformly from [1, pct_steps]. */
    ASKEW_STRATEGY_PCTCP = 5
};

/* PCT's deepest bug depth: d - 1 change points are kept in a fixed array. */
#define ASKEW_PCT_DEPTH_MAX 64

/* A queued item. Its key names the event loop it belongs to (under askew's
 * world, a node + 1; 0 for the world or a bare loop). `group` is what a
 * batch is grouped by, FIFO within a group: the key under faithful, the step
 * that pushed it under interleave. */
struct askew_ready {
    void *item;
    uint64_t seq; /* the item's creation number, fed to the trace */
    uint64_t group;
};

struct askew_run_group {
    size_t pos;
    size_t end;
};

/* The trace: a running hash of every decision and event of a run, and how
 * many events were recorded. It keeps no events: the report's event log is
 * binding's world log, which holds their text. */
enum askew_event_kind {
    ASKEW_EV_PICK = 1,    /* a = handle seq, b = choice index */
    ASKEW_EV_TIMER = 2,   /* a = timer seq */
    ASKEW_EV_ADVANCE = 3, /* a = new now_ns */
    ASKEW_EV_USER = 4,    /* a, b = caller's digest */
    ASKEW_EV_NET = 5,     /* a = message id, b = outcome */
    ASKEW_EV_FAULT = 6,
    ASKEW_EV_ENTROPY = 7, /* a = bytes drawn */
    ASKEW_EV_DISK = 8,    /* a = op | detail << 8, b = result (ext/engine/disk.h) */
    ASKEW_EV_BATON = 9    /* a = the actor given the baton, b = how many could run */
};

struct askew_trace {
    uint64_t hash;
    uint64_t count; /* events recorded (askew_trace_record), not mixes */
};

void askew_trace_reset(struct askew_trace *trace);
/* Fold one event into the hash and count it. */
void askew_trace_record(struct askew_trace *trace, int64_t t_ns, uint32_t kind,
                        int32_t node, uint64_t a, uint64_t b);
/* Fold a value into the hash without counting an event (hot decisions). */
void askew_trace_mix(struct askew_trace *trace, uint64_t value);

/* Where each key's run of items starts while a faithful batch is built;
 * `stamp` says which batch the entry belongs to, so the table is never
 * cleared. */
struct askew_key_slot {
    uint64_t stamp;
    size_t group;
    /* PCT: the key's priority (higher runs first) and the reset it was
     * drawn in (pct_run); a slot of an older run has none yet. */
    uint64_t prio;
    uint64_t prio_run;
};

struct askew_sched {
    uint64_t seed;
    struct askew_rng rng; /* the scheduling stream */
    enum askew_strategy strategy;
    int64_t now_ns;
    /* Timers with deadline_ns <= max(now_ns, view_ns) are due: a loop whose
     * time() the user replaced sets it to that clock (INT64_MIN when not). */
    int64_t view_ns;
    uint64_t steps;
    uint64_t steps_max;  /* 0 = unbounded */
    int64_t time_max_ns; /* 0 = unbounded */
    /* Faithful only: virtual CPU time per step and clock overshoot after a
     * deadline, uniform in [lo, hi] ns; hi == 0 draws nothing. */
    int64_t cpu_ns_lo;
    int64_t cpu_ns_hi;
    int64_t overshoot_ns_lo;
    int64_t overshoot_ns_hi;
    int64_t step_cpu_ns; /* the CPU time charged to the step last picked */
    /* PCT (set before askew_sched_reset, which draws the change points):
     * depth d >= 1 and the step-count estimate k >= 1. change_at[i] is the
     * step (1-based) at which the running key drops to priority d - 1 - i;
     * sorted, pct_next the next one due. */
    uint32_t pct_depth;
    uint64_t pct_steps;
    uint64_t pct_run; /* resets so far: the stamp of key_slots' prio */
    uint64_t pct_change_at[ASKEW_PCT_DEPTH_MAX - 1];
    uint32_t pct_next;
    uint64_t timer_seq;  /* next timer seq */
    uint64_t group_now;  /* group of the step running now (interleave) */
    uint64_t group_next; /* next fresh group id */
    uint64_t batches;    /* batches built: the stamp of key_slots */
    struct askew_heap timers;
    /* pending: a ring of items waiting for the next tick */
    struct askew_ready *ring;
    size_t ring_head;
    size_t ring_len;
    size_t ring_cap;
    /* the tick being run */
    struct askew_ready *batch;
    size_t batch_len;
    size_t batch_cap;
    size_t batch_pos;           /* fifo/shuffle cursor */
    struct askew_ready *sorted; /* scratch: a faithful batch grouped by key */
    size_t sorted_cap;
    struct askew_run_group *groups;
    size_t groups_len;
    size_t groups_cap;
    struct askew_key_slot *key_slots; /* indexed by key */
    size_t key_slots_cap;
    struct askew_timer **fired; /* scratch for the timers of one tick */
    size_t fired_cap;
    struct askew_trace trace;
};

int askew_sched_init(struct askew_sched *sched);
void askew_sched_free(struct askew_sched *sched);
/* Start a run: clock at 0, streams from `seed`, queues must be empty.
 * Under PCT, first draws the d - 1 change points from the scheduling stream
 * (each uniform in [1, pct_steps], in order, then sorted). */
void askew_sched_reset(struct askew_sched *sched, uint64_t seed);
/* Queue an item (never NULL) of loop `key` for a later tick. Keys are small
 * (the scheduler keeps a table indexed by them). */
int askew_sched_push(struct askew_sched *sched, void *item, uint64_t seq, uint64_t key);
/* Schedule a timer (deadline_ns must be set); assigns its seq. */
int askew_sched_timer_add(struct askew_sched *sched, struct askew_timer *timer);
void askew_sched_timer_cancel(struct askew_sched *sched, struct askew_timer *timer);

enum askew_tick {
    ASKEW_TICK_READY = 0,   /* a batch is ready to run */
    ASKEW_TICK_IDLE = 1,    /* nothing ready, no timer */
    ASKEW_TICK_TIME_MAX = 2 /* the next timer lies past the time budget */
};

/* Begin a tick: fire the timers that are due (advancing the clock to the
 * earliest one, plus the overshoot under faithful, when nothing is ready),
 * then fix the batch, as asyncio's _run_once does. Fired timers are handed
 * to `fire` in (deadline, seq) order (under interleave and shuffle, equal
 * deadlines in PRNG order); `fire` usually pushes its owner's work.
 * Returns an `enum askew_tick` or a negative errno. */
typedef int (*askew_fire_fn)(void *ctx, struct askew_timer *timer);
int askew_sched_tick(struct askew_sched *sched, askew_fire_fn fire, void *ctx);
/* The next item of the current batch by the strategy, or NULL when the
 * batch is done. Counts one step, charges its CPU time under faithful, and
 * makes it the group of later pushes under interleave. */
void *askew_sched_next(struct askew_sched *sched);
/* Items still queued for the current tick plus later ones. */
size_t askew_sched_pending(const struct askew_sched *sched);
/* A node's clock changes from `old` to `next` at sched->now_ns (ext/engine/
 * skew.c): each timer in the heap that `mine(timer, ctx)` claims was set on
 * that node's monotonic clock, so it keeps its reading there and gets the
 * world deadline `next` gives that reading (due now if that lies in the
 * past; a timer set for "never" stays). A moved timer is removed and added
 * again, taking a fresh seq, in heap order; an unmoved one keeps its seq.
 * 0, or -ENOMEM with nothing changed. */
typedef int (*askew_timer_pred)(const struct askew_timer *timer, void *ctx);
int askew_sched_rekey(struct askew_sched *sched, const struct askew_node_clock *old,
                      const struct askew_node_clock *next, askew_timer_pred mine,
                      void *ctx);
/* Hand every queued item (the running batch's rest, then the ring) to
 * `visit` and every timer in the heap to `visit_timer`, stopping at the
 * first nonzero return, which is returned. Changes nothing and draws
 * nothing: the binding's garbage-collector traversal, which must see every
 * reference the queues hold or a loop dropped with work pending is never
 * collected. */
typedef int (*askew_visit_fn)(void *item, void *ctx);
typedef int (*askew_visit_timer_fn)(struct askew_timer *timer, void *ctx);
int askew_sched_visit(const struct askew_sched *sched, askew_visit_fn visit,
                      askew_visit_timer_fn visit_timer, void *ctx);
/* Drop every queued item, handing each to `drop` (run teardown). */
void askew_sched_clear(struct askew_sched *sched, void (*drop)(void *item),
                       void (*drop_timer)(struct askew_timer *timer));

#ifdef __cplusplus
}
#endif

#endif
