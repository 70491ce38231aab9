/* SPDX-License-Identifier: Apache-2.0 */
/* The simulated network: nodes (alive or crashed, with an incarnation), the
 * link model (latency, loss, duplication; global and per directed link),
 * cuts (partitions, one-way cuts, isolation) and the messages in flight,
 * which ride the scheduler's timer heap. Pure C, called by the binding: it
 * never includes Python.h, never dereferences a payload, never reads the host
 * clock and never draws from any stream but the NET one. The order of draws
 * documented at askew_net_send is part of the determinism contract. */
#ifndef ASKEW_NET_H
#define ASKEW_NET_H

#include "engine.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Timer kinds: 1 is the loop's callback handles; a timer of this kind is
 * the first member of a message in flight. Never renumber. */
#define ASKEW_TIMER_KIND_MESSAGE 2u

/* The link model when nothing is configured: 1 ms to 10 ms, no loss, no
 * duplication. Wide enough that concurrent messages reorder by default. */
#define ASKEW_NET_LATENCY_NS_MIN_DEFAULT 1000000
#define ASKEW_NET_LATENCY_NS_MAX_DEFAULT 10000000
#define ASKEW_NET_PPM_MAX                1000000u
/* Node ids are int32 in the trace, so at most INT32_MAX nodes. */
#define ASKEW_NET_NODES_MAX 0x7fffffffu

/* Outcomes, fed to the trace as an event's `b`; part of the determinism
 * contract: never renumber. */
enum askew_net_outcome {
    ASKEW_NET_IN_FLIGHT = 0,           /* send: on the wire */
    ASKEW_NET_DUPLICATED = 1,          /* send: a second copy on the wire too */
    ASKEW_NET_DELIVERED = 2,           /* delivery: hand it to dst */
    ASKEW_NET_DROPPED_CRASHED = 3,     /* src dead at send, dst dead or restarted */
    ASKEW_NET_DROPPED_PARTITIONED = 4, /* link cut at send or at delivery */
    ASKEW_NET_DROPPED_LOST = 5,        /* the loss draw */
    ASKEW_NET_DROPPED_RESET = 6,       /* still in flight at drain; never traced */
    ASKEW_NET_OUTCOMES = 7
};

/* What the world log shows for an outcome: "sent", "sent twice",
 * "delivered", "dropped: crashed", ...; "?" when unknown. The binding
 * exports them as _core.NET_OUTCOME_NAMES. */
const char *askew_net_outcome_name(uint32_t outcome);

/* One directed link's model. A per-link override replaces the whole model
 * (it is a snapshot, not a delta on the global one). */
struct askew_net_link {
    int64_t latency_ns_min; /* >= 0 */
    int64_t latency_ns_max; /* >= latency_ns_min */
    uint32_t loss_ppm;      /* <= 1e6 */
    uint32_t duplicate_ppm; /* <= 1e6 */
};

/* A message in flight. Internal: the binding sees only struct
 * askew_net_delivery. `timer` comes first so the heap's pointer converts. */
struct askew_net_msg {
    struct askew_timer timer;
    uint64_t id;
    void *payload;
    int64_t sent_ns;
    uint32_t src;
    uint32_t dst;
    uint32_t dst_incarnation;
    uint64_t prio; /* PCTCP: its chain's priority when it was sent */
    uint8_t copy;  /* 0: the original, 1: the duplicate */
    uint8_t live;  /* 1 while in flight; 0 on the freelist */
    struct askew_net_msg *prev;
    struct askew_net_msg *next; /* the in-flight list, or the freelist */
};

struct askew_net_node {
    uint32_t incarnation; /* bumped by restart */
    uint32_t part_epoch;  /* part_group counts only while == net->part_epoch */
    uint32_t part_group;  /* 1-based group of the current partition */
    uint32_t iso_epoch;   /* isolated while == net->iso_epoch */
    uint32_t mark;        /* scratch: partition overlap check */
    uint8_t alive;
    /* PCTCP: 1 once a message of a chain (priority chain_prio) was
     * delivered to the node: its sends continue that chain. */
    uint8_t chain_open;
    uint64_t chain_prio;
};

/* A directed link with a one-way cut, a model override, or both. */
struct askew_net_edge {
    uint64_t key; /* src << 32 | dst; ASKEW_NET_EDGE_EMPTY when free */
    uint32_t flags;
    struct askew_net_link link;
};

struct askew_net_stats {
    uint64_t sent;       /* accepted send calls, dropped at send or not */
    uint64_t duplicated; /* second copies put on the wire */
    uint64_t delivered;
    uint64_t dropped[ASKEW_NET_OUTCOMES]; /* indexed by outcome */
    uint64_t in_flight;
    /* Always: sent + duplicated == delivered + sum(dropped) + in_flight +
     * (copies taken off by askew_net_drain since the last reset, which is
     * teardown and counted nowhere; tests/c/fuzz_engine.c checks this). */
};

/* Message faults: the network's own decisions to lose a message (the loss
 * draw) or to put a second copy on the wire (the duplicate draw), named by
 * the send's id (a duplicate's fault names the original's id). A run keeps
 * the first ASKEW_NET_FAULTS_MAX of them in order, for the shrinker
 * (askew/_explore/shrink.py); drops by crash or cut are not listed: they follow
 * from crash and partition calls, which are faults of their own. */
enum askew_net_fault_kind {
    ASKEW_NET_FAULT_DROP = 0, /* the loss draw said drop */
    ASKEW_NET_FAULT_DUP = 1,  /* the duplicate draw said a second copy */
    ASKEW_NET_FAULT_KINDS = 2
};
#define ASKEW_NET_FAULTS_MAX 65536u

struct askew_net_fault {
    uint64_t id; /* the send's */
    int64_t sent_ns;
    uint32_t src;
    uint32_t dst;
    uint32_t kind; /* enum askew_net_fault_kind */
};

struct askew_net_slab;

struct askew_net {
    struct askew_sched *sched; /* borrowed: clock, timer heap, trace */
    struct askew_rng rng;      /* the NET stream */
    uint64_t next_id;
    struct askew_net_link link; /* the global model */
    struct askew_net_node *nodes;
    uint32_t nodes_len;
    uint32_t nodes_cap;
    uint32_t part_epoch;
    uint32_t iso_epoch;
    uint32_t mark_epoch;
    struct askew_net_edge *edges; /* open addressing, linear probing */
    size_t edges_cap;             /* a power of two, or 0 */
    size_t edges_len;
    size_t cuts_len;
    struct askew_net_msg *head; /* in flight, oldest send first */
    struct askew_net_msg *tail;
    struct askew_net_msg *free;
    struct askew_net_slab *slabs; /* the pool's memory, SLAB_MSGS messages each */
    size_t slabs_len;
    struct askew_net_stats stats;
    uint64_t seed; /* the run's, for the latency of a suppressed drop */
    /* The run's message faults (see askew_net_fault_kind), in order; at most
     * ASKEW_NET_FAULTS_MAX, `faults_more` counts those not kept. */
    struct askew_net_fault *faults;
    size_t faults_len;
    size_t faults_cap;
    uint64_t faults_more;
    /* Per kind, the sorted ids whose fault this run skips (owned). */
    uint64_t *suppress[ASKEW_NET_FAULT_KINDS];
    size_t suppress_len[ASKEW_NET_FAULT_KINDS];
    /* PCTCP (the scheduler's strategy ASKEW_STRATEGY_PCTCP): sends that took
     * a chain's latency so far, and the change points among them (sorted,
     * drawn at the first such send; pctcp_next the next one due). */
    uint64_t pctcp_sends;
    uint64_t pctcp_change_at[ASKEW_PCT_DEPTH_MAX - 1];
    uint32_t pctcp_next;
    uint8_t pctcp_drawn;
};

/* What the binding gets back for a message: at delivery (delivered or
 * dropped) and at drain. Every copy put on the wire comes back exactly once,
 * so the binding takes one payload reference per copy and releases one here. */
struct askew_net_delivery {
    uint64_t id;
    void *payload; /* borrowed from the binding: never dereferenced */
    int64_t sent_ns;
    uint32_t src;
    uint32_t dst;
    uint32_t outcome;
    uint32_t copy; /* 0: the original, 1: the duplicate */
};

/* What a send did. `copies` (0, 1 or 2) messages went on the wire: each
 * comes back once through askew_net_deliver or askew_net_drain. */
struct askew_net_sent {
    uint64_t id;         /* of the original; the duplicate gets id + 1 */
    int64_t deadline_ns; /* of the original; 0 unless it is in flight */
    uint32_t outcome;    /* ASKEW_NET_IN_FLIGHT, _DUPLICATED or a drop */
    uint32_t copies;
};

typedef void (*askew_net_release_fn)(void *ctx, const struct askew_net_delivery *msg);

/* Set up an empty network on `sched` (borrowed, must outlive it), seeded as
 * askew_net_reset(net, 0) would. */
int askew_net_init(struct askew_net *net, struct askew_sched *sched);
/* Drain (see askew_net_drain) and free everything. */
void askew_net_free(struct askew_net *net, askew_net_release_fn release, void *ctx);
/* Start a run: no nodes, the default model, no cuts, counters zero, ids from
 * 1, the NET stream from askew_seed_stream(seed, ASKEW_STREAM_NET), no
 * message faults listed or suppressed. Keeps the memory for the next run.
 * -EBUSY while messages are in flight. */
int askew_net_reset(struct askew_net *net, uint64_t seed);
/* Take every message off the wire (and off the timer heap, if still there)
 * in send order, handing each to `release` (may be NULL) with outcome
 * ASKEW_NET_DROPPED_RESET. Not traced, not counted as dropped: it is run
 * teardown. Safe before or after askew_sched_clear. */
void askew_net_drain(struct askew_net *net, askew_net_release_fn release, void *ctx);

/* Hand the payload of every message in flight to `visit`, in send order,
 * stopping at the first nonzero return, which is returned. Changes nothing:
 * the binding's garbage-collector traversal. */
int askew_net_visit(const struct askew_net *net, int (*visit)(void *payload, void *ctx),
                    void *ctx);

/* Nodes get ids 0, 1, ... in order; a new node is alive, incarnation 0. */
int askew_net_node_add(struct askew_net *net, uint32_t *node);
/* Crash: later sends from it drop ("crashed"), so do messages to it when
 * they come due, even if it restarts first. Messages it sent before the
 * crash are on the wire and still arrive. Crashing a crashed node is a
 * no-op. */
int askew_net_crash(struct askew_net *net, uint32_t node);
/* Alive again with incarnation + 1; messages sent to an earlier incarnation
 * drop when due. Restarting an alive node is a crash and a restart in one. */
int askew_net_restart(struct askew_net *net, uint32_t node);
int askew_net_node_state(const struct askew_net *net, uint32_t node, int *alive,
                         uint32_t *incarnation);

/* The global model, for every link without an override. */
int askew_net_configure(struct askew_net *net, const struct askew_net_link *link);
/* Override the model of src -> dst only (directed). */
int askew_net_configure_link(struct askew_net *net, uint32_t src, uint32_t dst,
                             const struct askew_net_link *link);
/* The model src -> dst uses now: its override or the global one. */
int askew_net_link_get(const struct askew_net *net, uint32_t src, uint32_t dst,
                       struct askew_net_link *link);

/* Replace the current partition by `groups_len` groups: group g is the
 * `lens[g]` ids that follow group g - 1's in `nodes`. Links between nodes of
 * different groups are cut both ways; a node named in no group stays
 * connected to everyone. A node in two groups (or twice in one) or an
 * unknown id is -EINVAL and changes nothing. One-way cuts and isolation are
 * kept. Messages already in flight across the cut drop when due. */
int askew_net_partition(struct askew_net *net, const uint32_t *nodes,
                        const size_t *lens, size_t groups_len);
/* Cut src -> dst only; dst -> src stays up. */
int askew_net_cut(struct askew_net *net, uint32_t src, uint32_t dst);
/* Cut every link between `node` and any other node, both ways (a node's
 * messages to itself are loopback and stay up). */
int askew_net_isolate(struct askew_net *net, uint32_t node);
/* Restore every link: the partition, one-way cuts and isolation go. Link
 * model overrides stay. Messages still in flight are delivered if nothing
 * else drops them. */
void askew_net_heal(struct askew_net *net);
/* Whether src -> dst is cut now, by any of the above. */
int askew_net_link_cut(const struct askew_net *net, uint32_t src, uint32_t dst,
                       int *cut);

/* Skip, for the rest of the run, the faults of `kind` of the sends whose ids
 * are `ids` (any order, repeats allowed; replaces the kind's previous set):
 *   ASKEW_NET_FAULT_DROP: a send whose loss draw says drop is put on the
 *     wire once instead, its latency taken without a draw (a hash of the
 *     run's seed and the id, in the link's range), and no duplicate draw
 *     made: exactly the draws of the drop;
 *   ASKEW_NET_FAULT_DUP: a send whose duplicate draw says yes still makes
 *     the copy's latency draw and takes id + 1, but puts no copy on the wire.
 * So the NET stream and the ids stay those of the run without suppression
 * up to the point the program behaves otherwise. -EINVAL for a bad kind,
 * -ENOMEM (nothing changed). */
int askew_net_suppress(struct askew_net *net, uint32_t kind, const uint64_t *ids,
                       size_t len);
/* The run's message faults so far, in order (borrowed, valid until the next
 * send or reset); `*more` (may be NULL) gets the count not kept. */
const struct askew_net_fault *askew_net_faults(const struct askew_net *net, size_t *len,
                                               uint64_t *more);

/* PCTCP (Ozkan, Majumdar, Niksic, Befrouei, Weissenbacher, OOPSLA 2018)
 * under the scheduler's ASKEW_STRATEGY_PCTCP. Messages form chains along
 * causality: a send continues the chain of the message last delivered to
 * its sender (every send until the next delivery does), so the messages a
 * message causes keep its priority; a node that has received nothing
 * starts a chain at each send, with priority ASKEW_PCT_DEPTH_MAX + (a NET
 * draw >> 1). A
 * message's latency is not drawn but follows its chain's priority p:
 *   latency_ns_min + (latency_ns_max - latency_ns_min) * (2^63 - 1 - p) / 2^63,
 * so the chain of highest priority arrives first, always inside the link's
 * range: every delivery order is one that in-range latencies produce. At
 * the d - 1 change points (the c-th send that takes a chain's latency, c
 * drawn uniformly from [1, pct_steps] by a splitmix64 of the run's seed, so
 * the NET stream is untouched) the sent message's chain drops to priority
 * d - 1 - i, below every chain not yet dropped: it and its successors take
 * about the range's maximum. A duplicate's copy draws its latency as under
 * every other strategy. */

/* Put a message on the wire at the scheduler's now_ns. Draws, in this
 * order, from the NET stream, and only those reached:
 *   1. src crashed: drop "crashed" (no draw);
 *   2. src -> dst cut: drop "partitioned" (no draw);
 *   3. askew_rng_chance_ppm(loss_ppm): drop "lost" (no draw at 0 or 1e6);
 *   4. latency: askew_rng_range(latency_ns_min, latency_ns_max) (no draw
 *      when they are equal); under PCTCP instead its chain's (above), with
 *      one draw when it starts a chain; the original is due at now + latency;
 *   5. askew_rng_chance_ppm(duplicate_ppm): if so, a second copy
 *      with its own latency draw as in 4, added to the heap after the
 *      original (so a tie in deadline keeps send order in the heap's seq).
 * A lost send and a duplicated one are listed as message faults (see
 * askew_net_faults), unless suppressed (see askew_net_suppress).
 * Every send takes an id (dropped ones too) and records one trace event
 * (node = src, a = id, b = ASKEW_NET_IN_FLIGHT or the drop), plus one
 * (a = id + 1, b = ASKEW_NET_DUPLICATED) for a duplicate; dst, deadlines and
 * timer seqs are mixed into the hash. On -ENOMEM nothing changed, the stream
 * included. */
int askew_net_send(struct askew_net *net, uint32_t src, uint32_t dst, void *payload,
                   struct askew_net_sent *out);
/* The scheduler fired `timer` (kind ASKEW_TIMER_KIND_MESSAGE): decide at
 * now_ns, in this order, with no draws: dst crashed or incarnation changed
 * drops "crashed"; src -> dst cut now drops "partitioned"; else "delivered".
 * Records one trace event (node = dst, a = id, b = outcome), fills `out`
 * and recycles the message: the timer is invalid after the call. */
int askew_net_deliver(struct askew_net *net, struct askew_timer *timer,
                      struct askew_net_delivery *out);

#ifdef __cplusplus
}
#endif
#endif
