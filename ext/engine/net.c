/* SPDX-License-Identifier: Apache-2.0 */
/* The simulated network's messages (see net.h): in flight, pooled here and
 * queued on the scheduler's timer heap, with their faults (loss,
 * duplication, the ones a run suppresses) and their delivery; and the
 * network's lifecycle. Every per-message operation costs O(1) plus the
 * heap's O(log n), whatever the node count: whether a link is cut and what
 * its model is come from the topology (net_topo.c) in O(1). It never
 * dereferences a payload, never allocates per message once the pool is
 * warm, and draws only from the NET stream. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "net_impl.h"

#define SLAB_MSGS 4096u

struct askew_net_slab {
    struct askew_net_slab *next;
    struct askew_net_msg msgs[SLAB_MSGS];
};

static const char *const outcome_names[ASKEW_NET_OUTCOMES] = {
    "sent",
    "sent twice",
    "delivered",
    "dropped: crashed",
    "dropped: partitioned",
    "dropped: lost",
    "dropped: reset",
};

const char *askew_net_outcome_name(uint32_t outcome)
{
    return outcome < ASKEW_NET_OUTCOMES ? outcome_names[outcome] : "?";
}

/* ---- the message pool ---------------------------------------------------- */

/* Make sure `count` messages are on the freelist: a slab at a time, so the
 * steady state never allocates. */
static int pool_reserve(struct askew_net *net, unsigned count)
{
    unsigned have = 0;

    for (const struct askew_net_msg *m = net->free; m != NULL && have < count;
         m = m->next)
        have++;
    if (have >= count)
        return 0;
    struct askew_net_slab *slab = malloc(sizeof(*slab));
    if (slab == NULL)
        return -ENOMEM;
    slab->next = net->slabs;
    net->slabs = slab;
    net->slabs_len++;
    /* Thread backwards so the freelist hands out slots in address order. */
    for (size_t i = SLAB_MSGS; i-- > 0;) {
        slab->msgs[i].live = 0;
        slab->msgs[i].next = net->free;
        net->free = &slab->msgs[i];
    }
    return 0;
}

static struct askew_net_msg *pool_take(struct askew_net *net)
{
    struct askew_net_msg *msg = net->free;

    ASKEW_ASSERT(msg != NULL);
    net->free = msg->next;
    return msg;
}

static void pool_give(struct askew_net *net, struct askew_net_msg *msg)
{
    msg->live = 0;
    msg->payload = NULL;
    msg->next = net->free;
    net->free = msg;
}

static void flight_link(struct askew_net *net, struct askew_net_msg *msg)
{
    msg->live = 1;
    msg->next = NULL;
    msg->prev = net->tail;
    if (net->tail != NULL)
        net->tail->next = msg;
    else
        net->head = msg;
    net->tail = msg;
    net->stats.in_flight++;
}

static void flight_unlink(struct askew_net *net, struct askew_net_msg *msg)
{
    ASKEW_ASSERT(msg->live);
    if (msg->prev != NULL)
        msg->prev->next = msg->next;
    else
        net->head = msg->next;
    if (msg->next != NULL)
        msg->next->prev = msg->prev;
    else
        net->tail = msg->prev;
    net->stats.in_flight--;
}

static void fill_delivery(const struct askew_net_msg *msg, uint32_t outcome,
                          struct askew_net_delivery *out)
{
    out->id = msg->id;
    out->payload = msg->payload;
    out->sent_ns = msg->sent_ns;
    out->src = msg->src;
    out->dst = msg->dst;
    out->outcome = outcome;
    out->copy = msg->copy;
}

/* ---- lifecycle ----------------------------------------------------------- */

int askew_net_init(struct askew_net *net, struct askew_sched *sched)
{
    if (net == NULL || sched == NULL)
        return -EINVAL;
    memset(net, 0, sizeof(*net));
    net->sched = sched;
    return askew_net_reset(net, 0);
}

int askew_net_reset(struct askew_net *net, uint64_t seed)
{
    if (net->head != NULL)
        return -EBUSY;
    askew_rng_seed(&net->rng, askew_seed_stream(seed, ASKEW_STREAM_NET));
    net->next_id = 1;
    askew__net_topo_reset(net);
    memset(&net->stats, 0, sizeof(net->stats));
    net->seed = seed;
    net->pctcp_sends = 0;
    net->pctcp_next = 0;
    net->pctcp_drawn = 0;
    net->faults_len = 0;
    net->faults_more = 0;
    for (uint32_t k = 0; k < ASKEW_NET_FAULT_KINDS; k++) {
        free(net->suppress[k]);
        net->suppress[k] = NULL;
        net->suppress_len[k] = 0;
    }
    return 0;
}

void askew_net_drain(struct askew_net *net, askew_net_release_fn release, void *ctx)
{
    struct askew_net_msg *msg;

    while ((msg = net->head) != NULL) {
        struct askew_net_delivery out;

        if (msg->timer.index != ASKEW_TIMER_IDLE)
            askew_sched_timer_cancel(net->sched, &msg->timer);
        flight_unlink(net, msg);
        fill_delivery(msg, ASKEW_NET_DROPPED_RESET, &out);
        pool_give(net, msg);
        if (release != NULL)
            release(ctx, &out);
    }
}

int askew_net_visit(const struct askew_net *net, int (*visit)(void *payload, void *ctx),
                    void *ctx)
{
    for (const struct askew_net_msg *msg = net->head; msg != NULL; msg = msg->next) {
        const int rc = visit(msg->payload, ctx);
        if (rc != 0)
            return rc;
    }
    return 0;
}

void askew_net_free(struct askew_net *net, askew_net_release_fn release, void *ctx)
{
    askew_net_drain(net, release, ctx);
    while (net->slabs != NULL) {
        struct askew_net_slab *next = net->slabs->next;
        free(net->slabs);
        net->slabs = next;
    }
    free(net->nodes);
    free(net->edges);
    free(net->faults);
    for (uint32_t k = 0; k < ASKEW_NET_FAULT_KINDS; k++)
        free(net->suppress[k]);
    memset(net, 0, sizeof(*net));
}

/* ---- message faults ------------------------------------------------------ */

static int id_cmp(const void *a, const void *b)
{
    const uint64_t x = *(const uint64_t *)a;
    const uint64_t y = *(const uint64_t *)b;

    return (x > y) - (x < y);
}

int askew_net_suppress(struct askew_net *net, uint32_t kind, const uint64_t *ids,
                       size_t len)
{
    uint64_t *copy = NULL;

    if (kind >= ASKEW_NET_FAULT_KINDS || (len > 0 && ids == NULL))
        return -EINVAL;
    if (len > 0) {
        if (len > SIZE_MAX / sizeof(*copy))
            return -ENOMEM;
        copy = malloc(len * sizeof(*copy));
        if (copy == NULL)
            return -ENOMEM;
        memcpy(copy, ids, len * sizeof(*copy));
        qsort(copy, len, sizeof(*copy), id_cmp);
    }
    free(net->suppress[kind]);
    net->suppress[kind] = copy;
    net->suppress_len[kind] = len;
    return 0;
}

/* Whether this run skips the fault `kind` of send `id`: a binary search,
 * made only when the draw said drop or duplicate. */
static int suppressed(const struct askew_net *net, uint32_t kind, uint64_t id)
{
    return net->suppress_len[kind] > 0 &&
           bsearch(&id, net->suppress[kind], net->suppress_len[kind], sizeof(id),
                   id_cmp) != NULL;
}

/* List a fault the run made. Best effort: past ASKEW_NET_FAULTS_MAX, or when
 * the list cannot grow, it is only counted, so a send never fails here. */
static void fault_note(struct askew_net *net, uint32_t kind, uint64_t id, uint32_t src,
                       uint32_t dst)
{
    struct askew_net_fault *fault;

    if (net->faults_len == net->faults_cap) {
        size_t cap = net->faults_cap ? net->faults_cap * 2 : 64;
        struct askew_net_fault *faults;

        if (cap > ASKEW_NET_FAULTS_MAX)
            cap = ASKEW_NET_FAULTS_MAX;
        faults =
            cap > net->faults_cap ? realloc(net->faults, cap * sizeof(*faults)) : NULL;
        if (faults == NULL) {
            net->faults_more++;
            return;
        }
        net->faults = faults;
        net->faults_cap = cap;
    }
    fault = &net->faults[net->faults_len++];
    fault->id = id;
    fault->sent_ns = net->sched->now_ns;
    fault->src = src;
    fault->dst = dst;
    fault->kind = kind;
}

const struct askew_net_fault *askew_net_faults(const struct askew_net *net, size_t *len,
                                               uint64_t *more)
{
    *len = net->faults_len;
    if (more != NULL)
        *more = net->faults_more;
    return net->faults;
}

/* ---- send and deliver ---------------------------------------------------- */

static int64_t latency_draw(struct askew_net *net, const struct askew_net_link *link)
{
    /* No draw for a fixed latency: a config change from 5..5 ms to 5 ms
     * must not shift the stream. */
    if (link->latency_ns_min == link->latency_ns_max)
        return link->latency_ns_min;
    return askew_rng_range(&net->rng, link->latency_ns_min, link->latency_ns_max);
}

/* The latency of a suppressed drop: in the link's range like a drawn one,
 * but a hash of the run's seed and the id, so the NET stream is untouched. */
static int64_t latency_quiet(const struct askew_net *net,
                             const struct askew_net_link *link, uint64_t id)
{
    uint64_t state = net->seed ^ (id * 0x9e3779b97f4a7c15ULL);
    const uint64_t span = (uint64_t)(link->latency_ns_max - link->latency_ns_min) + 1;

    return link->latency_ns_min + (int64_t)(askew_splitmix64_next(&state) % span);
}

/* ---- PCTCP: latencies from chains' priorities (see net.h) ---------------- */

static int pctcp_on(const struct askew_net *net)
{
    return net->sched->strategy == ASKEW_STRATEGY_PCTCP;
}

/* The d - 1 change points, from a splitmix64 of the run's seed: a pure
 * function of the run, so drawing them again after a failed send is the
 * same draw. */
static void pctcp_draw_points(struct askew_net *net)
{
    const uint32_t points = net->sched->pct_depth - 1;
    uint64_t state = net->seed ^ UINT64_C(0x5043544350000000); /* "PCTCP" */
    uint64_t *at = net->pctcp_change_at;

    ASKEW_ASSERT(net->sched->pct_depth >= 1 &&
                 net->sched->pct_depth <= ASKEW_PCT_DEPTH_MAX);
    for (uint32_t i = 0; i < points; i++) {
        const uint64_t c = 1 + askew_splitmix64_next(&state) % net->sched->pct_steps;
        uint32_t j = i;
        for (; j > 0 && at[j - 1] > c; j--)
            at[j] = at[j - 1];
        at[j] = c;
    }
    net->pctcp_drawn = 1;
}

/* The priority of the chain a send from `src` joins, lowered if the send is
 * a change point; `*next` gets the change point due after it. Draws once
 * from the NET stream when the send starts a chain. Changes nothing else:
 * the caller commits on success. */
static uint64_t pctcp_prio(struct askew_net *net, uint32_t src, uint32_t *next)
{
    const struct askew_net_node *node = &net->nodes[src];
    const uint32_t depth = net->sched->pct_depth;
    const uint64_t c = net->pctcp_sends + 1;
    uint64_t prio = node->chain_open
                        ? node->chain_prio
                        : ASKEW_PCT_DEPTH_MAX + (askew_rng_next(&net->rng) >> 1);

    if (!net->pctcp_drawn)
        pctcp_draw_points(net);
    *next = net->pctcp_next;
    while (*next + 1 < depth && net->pctcp_change_at[*next] == c) {
        prio = depth - 1 - *next;
        (*next)++;
    }
    return prio;
}

/* The latency of a chain of priority `prio`: the range's minimum for the
 * highest, its maximum for the lowest, linear between (32 bits of it). */
static int64_t pctcp_latency(const struct askew_net_link *link, uint64_t prio)
{
    const uint64_t top = (UINT64_C(1) << 63) - 1;
    const uint64_t span = (uint64_t)(link->latency_ns_max - link->latency_ns_min);
    const uint64_t frac = (prio >= top ? 0 : top - prio) >> 31; /* < 2^32 */

    return link->latency_ns_min +
           (int64_t)((span >> 32) * frac + (((span & 0xffffffffu) * frac) >> 32));
}

static int64_t deadline_at(int64_t now_ns, int64_t latency_ns)
{
    /* Saturate rather than overflow: INT64_MAX is "never" in practice. */
    return latency_ns > INT64_MAX - now_ns ? INT64_MAX : now_ns + latency_ns;
}

static struct askew_net_msg *msg_make(struct askew_net *net, uint64_t id, uint32_t src,
                                      uint32_t dst, void *payload, int64_t deadline_ns,
                                      uint8_t copy)
{
    struct askew_net_msg *msg = pool_take(net);

    msg->timer.deadline_ns = deadline_ns;
    msg->timer.seq = 0;
    msg->timer.index = ASKEW_TIMER_IDLE;
    msg->timer.kind = ASKEW_TIMER_KIND_MESSAGE;
    msg->id = id;
    msg->payload = payload;
    msg->sent_ns = net->sched->now_ns;
    msg->src = src;
    msg->dst = dst;
    msg->dst_incarnation = net->nodes[dst].incarnation;
    msg->prio = 0;
    msg->copy = copy;
    return msg;
}

int askew_net_send(struct askew_net *net, uint32_t src, uint32_t dst, void *payload,
                   struct askew_net_sent *out)
{
    struct askew_rng saved;
    const struct askew_net_edge *edge;
    const struct askew_net_link *link;
    struct askew_net_msg *msgs[2] = {NULL, NULL};
    int64_t now_ns = net->sched->now_ns;
    uint64_t id = net->next_id;
    uint32_t outcome = ASKEW_NET_IN_FLIGHT;
    unsigned copies = 0;
    unsigned ids = 1;
    int lost = 0;
    int chained = 0; /* PCTCP: the original took its chain's latency */
    uint64_t prio = 0;
    uint32_t pct_next = 0;
    int err;

    if (!node_valid(net, src) || !node_valid(net, dst) || out == NULL)
        return -EINVAL;
    /* Everything that can fail happens before anything is kept, and the
     * stream is restored on failure, so -ENOMEM leaves the run replayable. */
    err = pool_reserve(net, 2);
    if (err < 0)
        return err;
    saved = net->rng;
    edge = askew__net_edge_find(net, edge_key(src, dst));
    link = link_of(net, edge);
    if (!net->nodes[src].alive) {
        outcome = ASKEW_NET_DROPPED_CRASHED;
    } else if (askew__net_is_cut(net, src, dst, edge)) {
        outcome = ASKEW_NET_DROPPED_PARTITIONED;
    } else if ((lost = askew_rng_chance_ppm(&net->rng, link->loss_ppm)) &&
               !suppressed(net, ASKEW_NET_FAULT_DROP, id)) {
        outcome = ASKEW_NET_DROPPED_LOST;
    } else {
        /* A suppressed drop makes no draw past the loss draw, as a drop. */
        int64_t latency_ns;
        if (lost) {
            latency_ns = latency_quiet(net, link, id);
        } else if (pctcp_on(net)) {
            prio = pctcp_prio(net, src, &pct_next);
            latency_ns = pctcp_latency(link, prio);
            chained = 1;
        } else {
            latency_ns = latency_draw(net, link);
        }
        int64_t deadline_ns = deadline_at(now_ns, latency_ns);
        msgs[copies++] = msg_make(net, id, src, dst, payload, deadline_ns, 0);
        if (!lost && askew_rng_chance_ppm(&net->rng, link->duplicate_ppm)) {
            deadline_ns = deadline_at(now_ns, latency_draw(net, link));
            if (suppressed(net, ASKEW_NET_FAULT_DUP, id)) {
                ids = 2; /* the copy's id stays taken, as its draw */
            } else {
                msgs[copies++] =
                    msg_make(net, id + 1, src, dst, payload, deadline_ns, 1);
                outcome = ASKEW_NET_DUPLICATED;
            }
        }
    }
    for (unsigned i = 0; i < copies; i++) {
        err = askew_sched_timer_add(net->sched, &msgs[i]->timer);
        if (err < 0)
            goto fail;
    }

    net->next_id += copies == 2 ? 2 : ids;
    net->stats.sent++;
    if (chained) {
        net->pctcp_sends++;
        net->pctcp_next = pct_next;
        for (unsigned i = 0; i < copies; i++)
            msgs[i]->prio = prio;
    }
    if (outcome == ASKEW_NET_DROPPED_LOST)
        fault_note(net, ASKEW_NET_FAULT_DROP, id, src, dst);
    else if (outcome == ASKEW_NET_DUPLICATED)
        fault_note(net, ASKEW_NET_FAULT_DUP, id, src, dst);
    askew_trace_record(&net->sched->trace, now_ns, ASKEW_EV_NET, (int32_t)src, id,
                       copies > 0 ? ASKEW_NET_IN_FLIGHT : outcome);
    mix(net, OP_SEND_DST, dst, copies);
    if (copies == 0)
        net->stats.dropped[outcome]++;
    for (unsigned i = 0; i < copies; i++) {
        flight_link(net, msgs[i]);
        if (i == 1) {
            net->stats.duplicated++;
            askew_trace_record(&net->sched->trace, now_ns, ASKEW_EV_NET, (int32_t)src,
                               id + 1, ASKEW_NET_DUPLICATED);
        }
        mix(net, OP_DEADLINE, (uint64_t)msgs[i]->timer.deadline_ns, msgs[i]->timer.seq);
    }
    out->id = id;
    out->deadline_ns = copies > 0 ? msgs[0]->timer.deadline_ns : 0;
    out->outcome = outcome;
    out->copies = copies;
    return 0;

fail:
    for (unsigned i = copies; i-- > 0;) {
        if (msgs[i]->timer.index != ASKEW_TIMER_IDLE)
            askew_sched_timer_cancel(net->sched, &msgs[i]->timer);
        pool_give(net, msgs[i]);
    }
    net->rng = saved;
    return err;
}

int askew_net_deliver(struct askew_net *net, struct askew_timer *timer,
                      struct askew_net_delivery *out)
{
    struct askew_net_msg *msg;
    struct askew_net_node *dst;
    uint32_t outcome;

    if (timer == NULL || out == NULL)
        return -EINVAL;
    ASKEW_ASSERT(timer->kind == ASKEW_TIMER_KIND_MESSAGE);
    /* The timer is the first member (see net.h), so this is container_of. */
    msg = (struct askew_net_msg *)(void *)timer;
    ASKEW_ASSERT(msg->live);
    /* The scheduler pops a timer before firing it; a caller delivering early
     * (tests, teardown helpers) must not leave a dangling heap entry. */
    if (timer->index != ASKEW_TIMER_IDLE)
        askew_sched_timer_cancel(net->sched, timer);
    dst = &net->nodes[msg->dst];
    if (!dst->alive || dst->incarnation != msg->dst_incarnation)
        outcome = ASKEW_NET_DROPPED_CRASHED;
    else if (askew__net_is_cut(net, msg->src, msg->dst,
                               askew__net_edge_find(net, edge_key(msg->src, msg->dst))))
        outcome = ASKEW_NET_DROPPED_PARTITIONED;
    else
        outcome = ASKEW_NET_DELIVERED;
    if (outcome == ASKEW_NET_DELIVERED) {
        net->stats.delivered++;
        /* PCTCP: the receiver's next send continues this message's chain
         * (none for a message that took no chain's latency). */
        dst->chain_open = msg->prio != 0;
        dst->chain_prio = msg->prio;
    } else
        net->stats.dropped[outcome]++;
    askew_trace_record(&net->sched->trace, net->sched->now_ns, ASKEW_EV_NET,
                       (int32_t)msg->dst, msg->id, outcome);
    flight_unlink(net, msg);
    fill_delivery(msg, outcome, out);
    pool_give(net, msg);
    return 0;
}
