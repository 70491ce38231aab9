/* SPDX-License-Identifier: Apache-2.0 */
/* askew._core.Network: the engine's network (engine/net.c) as a Python
 * type, one per loop, made with it and reached as loop._net. It keeps each
 * node's inbox and the future a recv() waits on and turns a message that
 * comes due into an askew.Message. Two units: the wire (network.c: the
 * state, inboxes, delivery, sends, what the loop and the TCP data path
 * call) and the type (network_type.c: the methods Python calls, module
 * init), which builds on the wire. What it needs of its loop (clock, log,
 * node identity, futures, timers) it borrows through struct askew_net_host,
 * so that it never includes loop.h. Binding files only. */
#ifndef ASKEW_NETWORK_H
#define ASKEW_NETWORK_H

#include "core.h"
#include "log.h"
#include "net.h"
#include "node.h"

/* What the network borrows from the loop that owns it. Set once when the
 * loop makes it; `ctx` is NULL once the loop is gone (every method then
 * raises). */
struct askew_net_host {
    void *ctx; /* the loop, passed back to the functions below */
    struct askew_sched *sched;
    const struct askew_node_gate *gate;
    struct askew_log *log;
    /* loop.create_future(). New reference. */
    PyObject *(*new_future)(void *ctx);
    /* A timer handle running callback(arg) `delay` seconds from now on the
     * running node's clock. New reference. */
    PyObject *(*call_later)(void *ctx, double delay, PyObject *callback, PyObject *arg);
    /* A handle running callback(arg) in a later tick, in `context` (NULL:
     * a copy of the current one), as call_soon. New reference. */
    PyObject *(*call_soon)(void *ctx, PyObject *callback, PyObject *arg,
                           PyObject *context);
    /* Node `node`'s monotonic clock now (skew and drift applied), ns. */
    int64_t (*local_ns)(void *ctx, int64_t node);
};

struct askew_node_inbox {
    PyObject **ring; /* Message objects, oldest first */
    size_t head;
    size_t len;
    size_t cap;
    PyObject *waiter;  /* the Future a recv() waits on, or NULL */
    PyObject *timeout; /* that recv's timeout handle, or NULL */
};

typedef struct askew_network {
    PyObject_HEAD struct askew_net net; /* valid while host.ctx != NULL */
    struct askew_state *state;          /* its module's; borrowed (the type holds it) */
    struct askew_net_host host;
    struct askew_node_inbox *nodes;
    size_t nodes_len;
    size_t nodes_cap;
    PyObject *payload_check; /* _world.check_payload: the slow path */
    /* TCP segments (askew/_net/): payloads of exactly this type are
     * handed to segment_handler(segment, outcome) when they come due,
     * delivered or dropped, instead of an inbox. */
    PyObject *segment_type;
    PyObject *segment_handler;
    /* Asked first about each of those (ext/stream.c sets it): 1 when it
     * took the segment, 0 when segment_handler decides, -1 with an
     * exception. */
    int (*take_segment)(PyObject *segment, uint32_t outcome);
} askew_network;

/* A network outlives its loop only as a husk: 1 with RuntimeError when its
 * loop is gone (every method then refuses), else 0. */
static inline int askew__network_gone(const askew_network *n)
{
    if (n->host.ctx != NULL)
        return 0;
    PyErr_SetString(PyExc_RuntimeError, "this network's loop is gone");
    return 1;
}

/* 0 when the loop is there and `node` names a node; else -1 with an
 * exception. */
static inline int askew__network_check_node(const askew_network *n, long long node)
{
    return askew__network_gone(n) || askew__node_check(&n->net, node, NULL) < 0 ? -1
                                                                                : 0;
}

/* A network on host->sched. New reference, or NULL with an exception. */
askew_network *askew__network_new(struct askew_state *st,
                                  const struct askew_net_host *host);
/* The loop goes: drop everything in flight and free the engine's network. */
void askew__network_detach(askew_network *n);
/* Start a run: no nodes, nothing in flight, the NET stream from seed. */
void askew__network_reset(askew_network *n, uint64_t seed);
/* Drop messages in flight and what waits in inboxes (run teardown). n may
 * be NULL (a loop whose making failed), as for askew__network_busy. */
void askew__network_clear(askew_network *n);
/* Whether messages are still in flight. */
static inline int askew__network_busy(const askew_network *n)
{
    return n != NULL && n->host.ctx != NULL && n->net.head != NULL;
}
/* The scheduler fired a timer of kind ASKEW_TIMER_KIND_MESSAGE: deliver or
 * drop it. 0, or -errno (-EIO with a Python exception set). */
int askew__network_fire(askew_network *n, struct askew_timer *timer);
/* Put a TCP segment on the wire from the live incarnation `token` (what
 * send_segment does): 0 with the outcome code in *outcome, -1 there when
 * that incarnation is gone (nothing is sent); -1 with an exception. */
int askew__network_send_segment(askew_network *n, long long token, long long dst,
                                PyObject *segment, long long *outcome);
/* A message timer found by a clear: never happens (they are drained first). */
void askew__network_drop_timer(struct askew_timer *timer);
/* Put payload on the wire from src to dst and log it; the outcome into
 * *outcome if given. 0, or -1 with an exception. */
int askew__network_send(askew_network *n, uint32_t src, uint32_t dst, PyObject *payload,
                        uint32_t *outcome);
/* Forget what waits in an inbox: its messages, its recv's future and
 * timeout handle. */
void askew__network_inbox_clear(struct askew_node_inbox *b);

#endif
