/* SPDX-License-Identifier: Apache-2.0 */
/* The simulated network's private pieces (see net.h), shared by its two
 * files and nothing else: the trace tags of control operations, the edge
 * flags, and the few lookups both need. net_topo.c owns the topology
 * (nodes, incarnations, partitions, isolation, one-way cuts, the link
 * model and its per-link overrides, in a hash of directed links); net.c
 * owns the messages (the pool, their flight on the scheduler's heap, the
 * faults, send and deliver), which ask the topology whether a link is cut
 * and what its model is. Pure C; never includes Python.h. */
#ifndef ASKEW_NET_IMPL_H
#define ASKEW_NET_IMPL_H

#include "net.h"

/* The link table (open addressing): a free slot's key, an entry's flags,
 * the smallest table. */
#define EDGE_EMPTY   UINT64_MAX
#define EDGE_CUT     1u
#define EDGE_LINK    2u
#define EDGE_CAP_MIN 16u

/* Tags mixed into the trace hash for control operations, so two runs whose
 * cuts or faults differ cannot share a hash. Never renumber. */
enum {
    OP_NODE_ADD = 1,
    OP_CRASH = 2,
    OP_RESTART = 3,
    OP_CONFIGURE = 4,
    OP_CONFIGURE_LINK = 5,
    /* 6 was "unconfigure a link", removed unused: never reuse it. */
    OP_PARTITION = 7,
    OP_CUT = 8,
    OP_ISOLATE = 9,
    OP_HEAL = 10,
    OP_SEND_DST = 11,
    OP_DEADLINE = 12
};

/* Mix a control operation and two values into the trace hash. */
static inline void mix(struct askew_net *net, uint64_t op, uint64_t a, uint64_t b)
{
    struct askew_trace *trace = &net->sched->trace;

    askew_trace_mix(trace, op);
    askew_trace_mix(trace, a);
    askew_trace_mix(trace, b);
}

/* Whether `node` names a node of the network. */
static inline int node_valid(const struct askew_net *net, uint32_t node)
{
    return node < net->nodes_len;
}

/* The key of directed link src -> dst in the link table. */
static inline uint64_t edge_key(uint32_t src, uint32_t dst)
{
    return (uint64_t)src << 32 | dst;
}

/* A link's model: its override (`edge` is its entry, or NULL), else the
 * global one. */
static inline const struct askew_net_link *link_of(const struct askew_net *net,
                                                   const struct askew_net_edge *edge)
{
    return edge != NULL && (edge->flags & EDGE_LINK) ? &edge->link : &net->link;
}

/* The entry of directed link `key` (edge_key), or NULL. */
struct askew_net_edge *askew__net_edge_find(const struct askew_net *net, uint64_t key);
/* Whether src -> dst is cut now (isolation, a partition, a one-way cut);
 * `edge` is that link's entry, or NULL. */
int askew__net_is_cut(const struct askew_net *net, uint32_t src, uint32_t dst,
                      const struct askew_net_edge *edge);
/* A reset's topology: no nodes, no cuts, no partition, the default link. */
void askew__net_topo_reset(struct askew_net *net);

#endif
