/* SPDX-License-Identifier: Apache-2.0 */
/* The simulated network's topology (see net.h, net_impl.h): nodes and their
 * incarnations, partitions, isolation and one-way cuts, and the link model
 * with its per-link overrides. Cuts are per-node epochs and a hash of
 * directed links, never a matrix, so a message's check is O(1) whatever the
 * node count. Every change is mixed into the trace; nothing here draws from
 * a stream or touches a message. The binding's Network methods call it;
 * net.c asks it about a link at send and at delivery. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "net_impl.h"

static int link_valid(const struct askew_net_link *link)
{
    return link != NULL && link->latency_ns_min >= 0 &&
           link->latency_ns_min <= link->latency_ns_max &&
           link->loss_ppm <= ASKEW_NET_PPM_MAX &&
           link->duplicate_ppm <= ASKEW_NET_PPM_MAX;
}

static void link_default(struct askew_net_link *link)
{
    link->latency_ns_min = ASKEW_NET_LATENCY_NS_MIN_DEFAULT;
    link->latency_ns_max = ASKEW_NET_LATENCY_NS_MAX_DEFAULT;
    link->loss_ppm = 0;
    link->duplicate_ppm = 0;
}

void askew__net_topo_reset(struct askew_net *net)
{
    link_default(&net->link);
    net->nodes_len = 0;
    net->part_epoch = 1;
    net->iso_epoch = 1;
    net->mark_epoch = 1;
    for (size_t i = 0; i < net->edges_cap; i++)
        net->edges[i].key = EDGE_EMPTY;
    net->edges_len = 0;
    net->cuts_len = 0;
}

/* ---- the directed-link table --------------------------------------------- */

static size_t edge_slot(uint64_t key, size_t cap)
{
    /* A fixed mixer, not a seeded one: slot order never reaches a decision,
     * only lookups, so it cannot affect a run. */
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdULL;
    key ^= key >> 33;
    return (size_t)key & (cap - 1);
}

struct askew_net_edge *askew__net_edge_find(const struct askew_net *net, uint64_t key)
{
    if (net->edges_len == 0)
        return NULL;
    size_t mask = net->edges_cap - 1;
    for (size_t i = edge_slot(key, net->edges_cap);; i = (i + 1) & mask) {
        struct askew_net_edge *edge = &net->edges[i];
        if (edge->key == key)
            return edge;
        if (edge->key == EDGE_EMPTY)
            return NULL;
    }
}

/* Place an entry known to be absent into a table with room for it. */
static struct askew_net_edge *edge_place(struct askew_net_edge *edges, size_t cap,
                                         uint64_t key)
{
    size_t i = edge_slot(key, cap);

    while (edges[i].key != EDGE_EMPTY)
        i = (i + 1) & (cap - 1);
    edges[i].key = key;
    return &edges[i];
}

/* Rebuild into `cap` slots, keeping only entries with flags left. */
static int edges_rebuild(struct askew_net *net, size_t cap)
{
    struct askew_net_edge *edges = malloc(cap * sizeof(*edges));
    size_t len = 0;

    if (edges == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < cap; i++)
        edges[i].key = EDGE_EMPTY;
    for (size_t i = 0; i < net->edges_cap; i++) {
        const struct askew_net_edge *old = &net->edges[i];
        if (old->key == EDGE_EMPTY || old->flags == 0)
            continue;
        struct askew_net_edge *edge = edge_place(edges, cap, old->key);
        edge->flags = old->flags;
        edge->link = old->link;
        len++;
    }
    free(net->edges);
    net->edges = edges;
    net->edges_cap = cap;
    net->edges_len = len;
    return 0;
}

static int edge_get(struct askew_net *net, uint64_t key, struct askew_net_edge **out)
{
    struct askew_net_edge *edge = askew__net_edge_find(net, key);
    int err;

    if (edge == NULL) {
        /* Keep the load at most one half so probes stay short. */
        if ((net->edges_len + 1) * 2 > net->edges_cap) {
            err =
                edges_rebuild(net, net->edges_cap ? net->edges_cap * 2 : EDGE_CAP_MIN);
            if (err < 0)
                return err;
        }
        edge = edge_place(net->edges, net->edges_cap, key);
        edge->flags = 0;
        net->edges_len++;
    }
    *out = edge;
    return 0;
}

/* ---- nodes and cuts ------------------------------------------------------ */

int askew__net_is_cut(const struct askew_net *net, uint32_t src, uint32_t dst,
                      const struct askew_net_edge *edge)
{
    const struct askew_net_node *s = &net->nodes[src];
    const struct askew_net_node *d = &net->nodes[dst];

    if (src != dst &&
        (s->iso_epoch == net->iso_epoch || d->iso_epoch == net->iso_epoch))
        return 1;
    if (s->part_epoch == net->part_epoch && d->part_epoch == net->part_epoch &&
        s->part_group != d->part_group)
        return 1;
    return edge != NULL && (edge->flags & EDGE_CUT) != 0;
}

/* Bump an epoch; on wrap, forget every stamp so none can match by accident
 * (once per four billion bumps, so O(nodes) there is fine). */
static uint32_t epoch_next(struct askew_net *net, uint32_t *epoch, size_t field)
{
    if (++*epoch == 0) {
        for (uint32_t i = 0; i < net->nodes_len; i++)
            memset((char *)&net->nodes[i] + field, 0, sizeof(uint32_t));
        *epoch = 1;
    }
    return *epoch;
}

int askew_net_node_add(struct askew_net *net, uint32_t *node)
{
    if (net->nodes_len >= ASKEW_NET_NODES_MAX)
        return -ENOSPC;
    if (net->nodes_len == net->nodes_cap) {
        uint32_t cap = net->nodes_cap ? net->nodes_cap * 2 : 64;
        struct askew_net_node *nodes =
            realloc(net->nodes, (size_t)cap * sizeof(*nodes));
        if (nodes == NULL)
            return -ENOMEM;
        net->nodes = nodes;
        net->nodes_cap = cap;
    }
    /* Zeroed stamps never equal a live epoch, which starts at 1. */
    memset(&net->nodes[net->nodes_len], 0, sizeof(net->nodes[0]));
    net->nodes[net->nodes_len].alive = 1;
    *node = net->nodes_len++;
    mix(net, OP_NODE_ADD, *node, 0);
    return 0;
}

int askew_net_crash(struct askew_net *net, uint32_t node)
{
    if (!node_valid(net, node))
        return -EINVAL;
    /* Messages to it stay on the heap and drop when due: O(1) here, and
     * the drop happens at the virtual time the message would have landed. */
    net->nodes[node].alive = 0;
    mix(net, OP_CRASH, node, net->nodes[node].incarnation);
    return 0;
}

int askew_net_restart(struct askew_net *net, uint32_t node)
{
    struct askew_net_node *n;

    if (!node_valid(net, node))
        return -EINVAL;
    n = &net->nodes[node];
    if (n->incarnation == UINT32_MAX)
        return -EOVERFLOW;
    n->incarnation++;
    n->alive = 1;
    mix(net, OP_RESTART, node, n->incarnation);
    return 0;
}

int askew_net_node_state(const struct askew_net *net, uint32_t node, int *alive,
                         uint32_t *incarnation)
{
    if (!node_valid(net, node))
        return -EINVAL;
    if (alive != NULL)
        *alive = net->nodes[node].alive;
    if (incarnation != NULL)
        *incarnation = net->nodes[node].incarnation;
    return 0;
}

int askew_net_partition(struct askew_net *net, const uint32_t *nodes,
                        const size_t *lens, size_t groups_len)
{
    size_t total = 0;
    uint32_t mark;
    uint32_t epoch;

    if (groups_len > 0 && lens == NULL)
        return -EINVAL;
    for (size_t g = 0; g < groups_len; g++)
        total += lens[g];
    if (total > 0 && nodes == NULL)
        return -EINVAL;
    if (groups_len >= UINT32_MAX)
        return -EINVAL;
    /* Validate everything first so a bad call changes nothing. */
    mark = epoch_next(net, &net->mark_epoch, offsetof(struct askew_net_node, mark));
    for (size_t i = 0; i < total; i++) {
        if (!node_valid(net, nodes[i]) || net->nodes[nodes[i]].mark == mark)
            return -EINVAL;
        net->nodes[nodes[i]].mark = mark;
    }
    epoch =
        epoch_next(net, &net->part_epoch, offsetof(struct askew_net_node, part_epoch));
    mix(net, OP_PARTITION, groups_len, total);
    for (size_t g = 0, i = 0; g < groups_len; g++) {
        for (size_t end = i + lens[g]; i < end; i++) {
            struct askew_net_node *n = &net->nodes[nodes[i]];
            n->part_epoch = epoch;
            n->part_group = (uint32_t)g + 1;
            mix(net, OP_PARTITION, nodes[i], g);
        }
    }
    return 0;
}

int askew_net_cut(struct askew_net *net, uint32_t src, uint32_t dst)
{
    struct askew_net_edge *edge;
    int err;

    if (!node_valid(net, src) || !node_valid(net, dst))
        return -EINVAL;
    err = edge_get(net, edge_key(src, dst), &edge);
    if (err < 0)
        return err;
    if ((edge->flags & EDGE_CUT) == 0) {
        edge->flags |= EDGE_CUT;
        net->cuts_len++;
    }
    mix(net, OP_CUT, src, dst);
    return 0;
}

int askew_net_isolate(struct askew_net *net, uint32_t node)
{
    if (!node_valid(net, node))
        return -EINVAL;
    net->nodes[node].iso_epoch = net->iso_epoch;
    mix(net, OP_ISOLATE, node, 0);
    return 0;
}

void askew_net_heal(struct askew_net *net)
{
    epoch_next(net, &net->part_epoch, offsetof(struct askew_net_node, part_epoch));
    epoch_next(net, &net->iso_epoch, offsetof(struct askew_net_node, iso_epoch));
    if (net->cuts_len > 0) {
        for (size_t i = 0; i < net->edges_cap; i++)
            net->edges[i].flags &= ~EDGE_CUT;
        net->cuts_len = 0;
        /* Drop the entries left with no flags. Should the new array fail to
         * allocate, they stay: a flag-less entry reads as "not cut, global
         * model", which is exactly right, so the result is ignored. */
        (void)edges_rebuild(net, net->edges_cap);
    }
    mix(net, OP_HEAL, 0, 0);
}

int askew_net_link_cut(const struct askew_net *net, uint32_t src, uint32_t dst,
                       int *cut)
{
    if (!node_valid(net, src) || !node_valid(net, dst) || cut == NULL)
        return -EINVAL;
    *cut =
        askew__net_is_cut(net, src, dst, askew__net_edge_find(net, edge_key(src, dst)));
    return 0;
}

/* ---- the link model ------------------------------------------------------ */

static void mix_link(struct askew_net *net, uint64_t op,
                     const struct askew_net_link *link)
{
    mix(net, op, (uint64_t)link->latency_ns_min, (uint64_t)link->latency_ns_max);
    mix(net, op, link->loss_ppm, link->duplicate_ppm);
}

int askew_net_configure(struct askew_net *net, const struct askew_net_link *link)
{
    if (!link_valid(link))
        return -EINVAL;
    net->link = *link;
    mix_link(net, OP_CONFIGURE, link);
    return 0;
}

int askew_net_configure_link(struct askew_net *net, uint32_t src, uint32_t dst,
                             const struct askew_net_link *link)
{
    struct askew_net_edge *edge;
    int err;

    if (!node_valid(net, src) || !node_valid(net, dst) || !link_valid(link))
        return -EINVAL;
    err = edge_get(net, edge_key(src, dst), &edge);
    if (err < 0)
        return err;
    edge->flags |= EDGE_LINK;
    edge->link = *link;
    mix(net, OP_CONFIGURE_LINK, src, dst);
    mix_link(net, OP_CONFIGURE_LINK, link);
    return 0;
}

int askew_net_link_get(const struct askew_net *net, uint32_t src, uint32_t dst,
                       struct askew_net_link *link)
{
    if (!node_valid(net, src) || !node_valid(net, dst) || link == NULL)
        return -EINVAL;
    *link = *link_of(net, askew__net_edge_find(net, edge_key(src, dst)));
    return 0;
}
