/* SPDX-License-Identifier: Apache-2.0 */
/* The network's wire (see network.h): the engine's network carrying Python
 * payloads, one per loop. It keeps each node's inbox, turns a message that
 * comes due into an askew.Message (or hands a TCP segment to its stack),
 * puts sends on the wire, and writes sends and deliveries to the loop's
 * log. It never runs a callback itself and never reads a clock but its
 * loop's scheduler. The loop (loop_type.c, loop_run.c) and the TCP data
 * path (stream.c) call it; the Network type's methods (network_type.c)
 * build on it. */
#include <errno.h>
#include <string.h>

#include "errors.h"
#include "handle.h"
#include "network.h"
#include "task.h"

/* ---- inboxes ------------------------------------------------------------ */

void askew__network_inbox_clear(struct askew_node_inbox *b)
{
    for (size_t i = 0; i < b->len; i++)
        Py_DECREF(b->ring[(b->head + i) % b->cap]);
    b->head = b->len = 0;
    Py_CLEAR(b->waiter);
    Py_CLEAR(b->timeout);
}

static int inbox_push(struct askew_node_inbox *b, PyObject *msg)
{
    if (b->len == b->cap) {
        const size_t cap = b->cap ? b->cap * 2 : 8;
        PyObject **ring = PyMem_Malloc(cap * sizeof *ring);
        if (ring == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        for (size_t i = 0; i < b->len; i++)
            ring[i] = b->ring[(b->head + i) % b->cap];
        PyMem_Free(b->ring);
        b->ring = ring;
        b->cap = cap;
        b->head = 0;
    }
    b->ring[(b->head + b->len) % b->cap] = msg; /* steals the reference */
    b->len++;
    return 0;
}

/* ---- engine <-> Python -------------------------------------------------- */

static void release_payload(void *ctx, const struct askew_net_delivery *d)
{
    (void)ctx;
    Py_XDECREF((PyObject *)d->payload);
}

void askew__network_clear(askew_network *n)
{
    if (n == NULL)
        return; /* a loop that failed to get its network */
    if (n->host.ctx != NULL)
        askew_net_drain(&n->net, release_payload, NULL);
    for (size_t i = 0; i < n->nodes_len; i++)
        askew__network_inbox_clear(&n->nodes[i]);
}

askew_network *askew__network_new(struct askew_state *st,
                                  const struct askew_net_host *host)
{
    askew_network *n = (askew_network *)st->network_type->tp_alloc(st->network_type, 0);
    if (n == NULL)
        return NULL;
    n->state = st;
    if (askew_net_init(&n->net, host->sched) < 0) {
        Py_DECREF(n);
        PyErr_NoMemory();
        return NULL;
    }
    n->host = *host;
    return n;
}

void askew__network_detach(askew_network *n)
{
    if (n->host.ctx == NULL)
        return;
    askew__network_clear(n);
    askew_net_free(&n->net, release_payload, NULL);
    memset(&n->host, 0, sizeof n->host);
}

void askew__network_reset(askew_network *n, uint64_t seed)
{
    askew__network_clear(n);
    for (size_t i = 0; i < n->nodes_len; i++) {
        PyMem_Free(n->nodes[i].ring);
        memset(&n->nodes[i], 0, sizeof n->nodes[i]);
    }
    n->nodes_len = 0;
    /* The engine's reset reseeds its stream; run after the scheduler's. */
    ASKEW_ASSERT(askew_net_reset(&n->net, seed) == 0);
}

static int deliver(askew_network *n, const struct askew_net_delivery *d)
{
    struct askew_node_inbox *b = &n->nodes[d->dst];
    PyObject *msg = PyStructSequence_New(n->state->message_type); // new reference
    if (msg == NULL)
        return -1;
    PyStructSequence_SetItem(msg, 0, PyLong_FromUnsignedLong(d->src));
    PyStructSequence_SetItem(msg, 1, PyLong_FromUnsignedLong(d->dst));
    PyStructSequence_SetItem(msg, 2, Py_NewRef((PyObject *)d->payload));
    PyStructSequence_SetItem(msg, 3, PyFloat_FromDouble((double)d->sent_ns / 1e9));
    if (PyErr_Occurred()) {
        Py_DECREF(msg);
        return -1;
    }
    if (b->waiter != NULL) {
        PyObject *fut = b->waiter;
        b->waiter = NULL;
        const int is_done = askew__future_done(fut);
        if (is_done == 0) {
            if (b->timeout != NULL) {
                askew__handle_cancel((askew_handle *)b->timeout);
                Py_CLEAR(b->timeout);
            }
            const int rc = askew__future_set_result(fut, msg);
            Py_DECREF(fut);
            Py_DECREF(msg);
            return rc;
        }
        Py_DECREF(fut);
        if (is_done < 0) {
            Py_DECREF(msg);
            return -1;
        }
    }
    if (inbox_push(b, msg) < 0) {
        Py_DECREF(msg);
        return -1;
    }
    return 0;
}

/* The stack's segment_handler(segment, outcome): 0, or -1 with an exception. */
static int call_segment_handler(askew_network *n, PyObject *segment, uint32_t code)
{
    PyObject *outcome = PyLong_FromUnsignedLong(code); // new reference
    if (outcome == NULL)
        return -1;
    PyObject *args[2] = {segment, outcome};
    PyObject *r = PyObject_Vectorcall(n->segment_handler, args, 2, NULL);
    Py_DECREF(outcome);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    return 0;
}

int askew__network_fire(askew_network *n, struct askew_timer *timer)
{
    ASKEW_ASSERT(timer->kind == ASKEW_TIMER_KIND_MESSAGE);
    struct askew_net_delivery d;
    const int rc = askew_net_deliver(&n->net, timer, &d);
    if (rc < 0)
        return rc;
    PyObject *payload = d.payload; /* the copy's reference, ours to release */
    askew__log_record(n->host.log, n->host.sched->now_ns, ASKEW_LOG_KIND_DELIVERY,
                      (int32_t)d.dst, (int32_t)d.src, d.outcome, payload);
    int res = 0;
    if (n->segment_type != NULL && (PyObject *)Py_TYPE(payload) == n->segment_type) {
        /* A TCP segment: in-order data for a live open socket is taken in
         * C (ext/stream.c); for anything else its stack decides, dropped
         * ones included (they are retransmitted). */
        const int taken =
            n->take_segment != NULL ? n->take_segment(payload, d.outcome) : 0;
        if (taken < 0 ||
            (taken == 0 && call_segment_handler(n, payload, d.outcome) < 0))
            res = -EIO; /* a Python exception is set */
    } else if (d.outcome == ASKEW_NET_DELIVERED && deliver(n, &d) < 0) {
        res = -EIO; /* a Python exception is set */
    }
    Py_DECREF(payload);
    return res;
}

void askew__network_drop_timer(struct askew_timer *timer)
{
    /* Messages leave the heap through askew_net_drain, before any clear. */
    (void)timer;
    ASKEW_ASSERT(timer->kind != ASKEW_TIMER_KIND_MESSAGE);
}

int askew__network_send(askew_network *n, uint32_t src, uint32_t dst, PyObject *payload,
                        uint32_t *outcome)
{
    struct askew_net_sent sent;
    const int rc = askew_net_send(&n->net, src, dst, payload, &sent);
    if (rc < 0) {
        askew__raise_engine(rc, "sending");
        return -1;
    }
    for (uint32_t i = 0; i < sent.copies; i++)
        Py_INCREF(payload);
    askew__log_record(n->host.log, n->host.sched->now_ns, ASKEW_LOG_KIND_SEND,
                      (int32_t)src, (int32_t)dst, sent.outcome, payload);
    if (outcome != NULL)
        *outcome = sent.outcome;
    return 0;
}

int askew__network_send_segment(askew_network *n, long long token, long long dst,
                                PyObject *segment, long long *outcome)
{
    uint32_t src, sent;
    if (askew__network_check_node(n, dst) < 0)
        return -1;
    if (!askew__node_token_alive(&n->net, token, &src)) {
        *outcome = -1;
        return 0;
    }
    if (askew__network_send(n, src, (uint32_t)dst, segment, &sent) < 0)
        return -1;
    *outcome = sent;
    return 0;
}
