/* SPDX-License-Identifier: Apache-2.0 */
/* The network binding: the engine's network (engine/net.c) wired to Python.
 * It keeps each node's inbox and the future a recv() waits on, turns a
 * message that comes due into an askew.Message, and keeps the world's log:
 * a ring of recent events (sends, deliveries, drops, and the world's own)
 * whose details (payloads, texts) are formatted only when someone reads
 * them. Which node runs a callback comes from a context variable the world
 * sets; a crashed incarnation's callbacks are skipped here, never run. */
#include <stdlib.h>
#include <string.h>

#include <math.h>

#include "handle.h"
#include "loop.h"
#include "task.h"

#define LOG_RING_DEFAULT 10000u

/* Log kinds below 16 are the network's; the world's start at 16 (_world.py). */
enum { LOG_SEND = 1, LOG_DELIVERY = 2 };

struct node_binding {
    PyObject **inbox; /* a ring of Message objects, oldest first */
    size_t head;
    size_t len;
    size_t cap;
    PyObject *waiter;  /* the Future a recv() waits on, or NULL */
    PyObject *timeout; /* that recv's timeout handle, or NULL */
};

struct log_entry {
    int64_t t_ns;
    uint32_t kind;
    int32_t node;
    int32_t peer;
    uint32_t outcome;
    PyObject *detail;
};

struct askew_network {
    struct askew_net net;
    struct node_binding *nodes;
    size_t nodes_len;
    size_t nodes_cap;
    struct log_entry *log;
    size_t log_cap;
    uint64_t log_count;
    PyObject *node_var;      /* contextvars.ContextVar of node id << 32 | incarnation */
    PyObject *payload_check; /* _world.check_payload: the slow path */
};

static PyTypeObject *MessageType;
static PyObject *recv_expire(PyObject *module, PyObject *fut);
static PyMethodDef recv_expire_def = {"_recv_expire", recv_expire, METH_O, NULL};
static PyObject *recv_expire_fn; /* the callback of a recv's timeout */
static PyStructSequence_Field message_fields[] = {
    {"src", "the sending node's id"},
    {"dst", "the receiving node's id"},
    {"payload", "what was sent"},
    {"sent_at", "virtual time of the send, seconds"},
    {NULL, NULL},
};

static PyStructSequence_Desc message_desc = {
    "askew.Message",
    "A message delivered to a node: src, dst, payload, sent_at.",
    message_fields,
    4,
};

int askew__net_types_init(PyObject *module)
{
    MessageType = PyStructSequence_NewType(&message_desc);
    recv_expire_fn = PyCFunction_New(&recv_expire_def, NULL);
    if (MessageType == NULL || recv_expire_fn == NULL)
        return -1;
    return PyModule_AddObjectRef(module, "Message", (PyObject *)MessageType);
}

/* ---- the log ------------------------------------------------------------ */

static void log_record(struct askew_network *n, int64_t t_ns, uint32_t kind,
                       int32_t node, int32_t peer, uint32_t outcome, PyObject *detail)
{
    if (n->log == NULL) {
        /* Made on first use: a bare loop that never logs never pays for it.
         * Without memory the log stays empty; the trace hash still counts. */
        n->log = PyMem_Calloc(LOG_RING_DEFAULT, sizeof *n->log);
        if (n->log == NULL)
            return;
        n->log_cap = LOG_RING_DEFAULT;
    }
    struct log_entry *e = &n->log[n->log_count % n->log_cap];
    PyObject *old = e->detail;
    e->t_ns = t_ns;
    e->kind = kind;
    e->node = node;
    e->peer = peer;
    e->outcome = outcome;
    e->detail = Py_XNewRef(detail);
    n->log_count++;
    Py_XDECREF(old);
}

static void log_clear(struct askew_network *n)
{
    const size_t used = n->log_count < n->log_cap ? (size_t)n->log_count : n->log_cap;
    for (size_t i = 0; i < used; i++)
        Py_CLEAR(n->log[i].detail);
    n->log_count = 0;
}

/* ---- nodes ---------------------------------------------------------------- */

static void node_clear(struct node_binding *b)
{
    for (size_t i = 0; i < b->len; i++)
        Py_DECREF(b->inbox[(b->head + i) % b->cap]);
    b->head = b->len = 0;
    Py_CLEAR(b->waiter);
    Py_CLEAR(b->timeout);
}

static int inbox_push(struct node_binding *b, PyObject *msg)
{
    if (b->len == b->cap) {
        const size_t cap = b->cap ? b->cap * 2 : 8;
        PyObject **ring = PyMem_Malloc(cap * sizeof *ring);
        if (ring == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        for (size_t i = 0; i < b->len; i++)
            ring[i] = b->inbox[(b->head + i) % b->cap];
        PyMem_Free(b->inbox);
        b->inbox = ring;
        b->cap = cap;
        b->head = 0;
    }
    b->inbox[(b->head + b->len) % b->cap] = msg; /* steals the reference */
    b->len++;
    return 0;
}

static struct node_binding *node_get(struct askew_loop_state *self, long long node)
{
    struct askew_network *n = self->net;
    if (node < 0 || (unsigned long long)node >= n->nodes_len) {
        if (n->nodes_len == 0)
            PyErr_Format(PyExc_ValueError,
                         "unknown node id %lld (this world's nodes: none yet)", node);
        else
            PyErr_Format(PyExc_ValueError,
                         "unknown node id %lld (this world's nodes: 0..%zd)", node,
                         (Py_ssize_t)n->nodes_len - 1);
        return NULL;
    }
    return &n->nodes[node];
}

/* ---- engine <-> Python -------------------------------------------------- */

static void release_payload(void *ctx, const struct askew_net_delivery *d)
{
    (void)ctx;
    Py_XDECREF((PyObject *)d->payload);
}

static void drain(struct askew_network *n)
{
    askew_net_drain(&n->net, release_payload, NULL);
    for (size_t i = 0; i < n->nodes_len; i++)
        node_clear(&n->nodes[i]);
}

int askew__net_init(struct askew_loop_state *self)
{
    struct askew_network *n = PyMem_Calloc(1, sizeof *n);
    if (n == NULL)
        return -1;
    if (askew_net_init(&n->net, &self->sched) < 0) {
        PyMem_Free(n);
        return -1;
    }
    self->net = n;
    return 0;
}

void askew__net_free(struct askew_loop_state *self)
{
    struct askew_network *n = self->net;
    if (n == NULL)
        return;
    drain(n);
    askew_net_free(&n->net, release_payload, NULL);
    for (size_t i = 0; i < n->nodes_len; i++)
        PyMem_Free(n->nodes[i].inbox);
    PyMem_Free(n->nodes);
    log_clear(n);
    PyMem_Free(n->log);
    Py_CLEAR(n->node_var);
    Py_CLEAR(n->payload_check);
    PyMem_Free(n);
    self->net = NULL;
    self->gated = 0;
}

void askew__net_clear(struct askew_loop_state *self)
{
    if (self->net != NULL)
        drain(self->net);
}

void askew__net_reset(struct askew_loop_state *self, uint64_t seed)
{
    struct askew_network *n = self->net;
    drain(n);
    for (size_t i = 0; i < n->nodes_len; i++) {
        PyMem_Free(n->nodes[i].inbox);
        memset(&n->nodes[i], 0, sizeof n->nodes[i]);
    }
    n->nodes_len = 0;
    log_clear(n);
    Py_CLEAR(n->node_var);
    self->gated = 0;
    /* The engine's reset reseeds its stream; run after the scheduler's. */
    ASKEW_ASSERT(askew_net_reset(&n->net, seed) == 0);
}

struct gc_visit {
    visitproc visit;
    void *arg;
};

static int visit_payload(void *payload, void *ctx)
{
    const struct gc_visit *v = ctx;
    return v->visit((PyObject *)payload, v->arg);
}

int askew__net_traverse(struct askew_loop_state *self, visitproc visit, void *arg)
{
    struct askew_network *n = self->net;
    if (n == NULL)
        return 0;
    Py_VISIT(n->node_var);
    Py_VISIT(n->payload_check);
    for (size_t i = 0; i < n->nodes_len; i++) {
        struct node_binding *b = &n->nodes[i];
        Py_VISIT(b->waiter);
        Py_VISIT(b->timeout);
        for (size_t k = 0; k < b->len; k++)
            Py_VISIT(b->inbox[(b->head + k) % b->cap]);
    }
    const size_t used = n->log_count < n->log_cap ? (size_t)n->log_count : n->log_cap;
    for (size_t i = 0; i < used; i++)
        Py_VISIT(n->log[i].detail);
    /* One reference per copy on the wire (send_one), so one visit each. */
    struct gc_visit v = {visit, arg};
    return askew_net_visit(&n->net, visit_payload, &v);
}

int askew__net_busy(const struct askew_loop_state *self)
{
    return self->net != NULL && self->net->net.head != NULL;
}

static int deliver(struct askew_loop_state *self, const struct askew_net_delivery *d)
{
    struct node_binding *b = &self->net->nodes[d->dst];
    PyObject *msg = PyStructSequence_New(MessageType); // new reference
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

int askew__net_fire(struct askew_loop_state *self, struct askew_timer *timer)
{
    ASKEW_ASSERT(timer->kind == ASKEW_TIMER_KIND_MESSAGE);
    struct askew_network *n = self->net;
    struct askew_net_delivery d;
    const int rc = askew_net_deliver(&n->net, timer, &d);
    if (rc < 0)
        return rc;
    PyObject *payload = d.payload; /* the copy's reference, ours to release */
    log_record(n, self->sched.now_ns, LOG_DELIVERY, (int32_t)d.dst, (int32_t)d.src,
               d.outcome, payload);
    int res = 0;
    if (d.outcome == ASKEW_NET_DELIVERED && deliver(self, &d) < 0)
        res = -EIO; /* a Python exception is set */
    Py_DECREF(payload);
    return res;
}

void askew__net_drop_timer(struct askew_timer *timer)
{
    /* Messages leave the heap through askew_net_drain, before any clear. */
    (void)timer;
    ASKEW_ASSERT(timer->kind != ASKEW_TIMER_KIND_MESSAGE);
}

/* A node's token is id << 32 | incarnation; a crashed incarnation runs
 * nothing and sends nothing. */
static int token_alive(struct askew_loop_state *self, long long token, uint32_t *node)
{
    *node = (uint32_t)(token >> 32);
    int alive = 0;
    uint32_t incarnation = 0;
    if (askew_net_node_state(&self->net->net, *node, &alive, &incarnation) < 0)
        return 0;
    return alive && incarnation == (uint32_t)token;
}

int askew__net_context_node(struct askew_loop_state *self, PyObject *context,
                            int64_t *node, uint32_t *incarnation)
{
    *node = -1;
    *incarnation = 0;
    if (!self->gated)
        return 0;
    PyObject *var = self->net->node_var, *value = NULL;
    /* The running context answers from the variable's cache; any other is a
     * lookup in its mapping (a future resolved for another task). */
    if (context == NULL || context == PyThreadState_Get()->context) {
        if (PyContextVar_Get(var, NULL, &value) < 0)
            return -1;
    } else {
        const int has = PySequence_Contains(context, var);
        if (has < 0)
            return -1;
        if (has && (value = PyObject_GetItem(context, var)) == NULL)
            return -1;
    }
    if (value == NULL)
        return 0; /* the world's own code */
    const long long token = PyLong_AsLongLong(value);
    Py_DECREF(value);
    if (token == -1 && PyErr_Occurred())
        return -1;
    *node = (int64_t)(token >> 32);
    *incarnation = (uint32_t)token;
    return 0;
}

int askew__net_alive(struct askew_loop_state *self, int64_t node, uint32_t incarnation)
{
    uint32_t id;
    return node < 0 ||
           token_alive(self, (long long)((uint64_t)node << 32 | incarnation), &id);
}

/* ---- methods ------------------------------------------------------------- */

static PyObject *raise_net(int rc, const char *what)
{
    return askew__raise_engine(rc, what);
}

static PyObject *net_set_node_var(struct askew_loop_state *self, PyObject *var)
{
    if (var != Py_None && !PyContextVar_CheckExact(var)) {
        PyErr_SetString(PyExc_TypeError, "expected a contextvars.ContextVar or None");
        return NULL;
    }
    Py_XSETREF(self->net->node_var, var == Py_None ? NULL : Py_NewRef(var));
    self->gated = self->net->node_var != NULL;
    Py_RETURN_NONE;
}

static PyObject *net_node_add(struct askew_loop_state *self,
                              PyObject *Py_UNUSED(ignored))
{
    struct askew_network *n = self->net;
    if (n->nodes_len == n->nodes_cap) {
        const size_t cap = n->nodes_cap ? n->nodes_cap * 2 : 16;
        struct node_binding *nodes = PyMem_Realloc(n->nodes, cap * sizeof *nodes);
        if (nodes == NULL)
            return PyErr_NoMemory();
        memset(nodes + n->nodes_cap, 0, (cap - n->nodes_cap) * sizeof *nodes);
        n->nodes = nodes;
        n->nodes_cap = cap;
    }
    uint32_t id;
    const int rc = askew_net_node_add(&n->net, &id);
    if (rc < 0)
        return raise_net(rc, "adding a node");
    ASKEW_ASSERT(id == n->nodes_len);
    n->nodes_len++;
    return PyLong_FromUnsignedLong(id);
}

/* Immutable without a doubt: the types every message is made of. Anything
 * else goes to the Python check (frozen dataclasses, enums, ...). */
static int payload_fast_ok(PyObject *p, int depth)
{
    if (p == Py_None || PyLong_CheckExact(p) || PyUnicode_CheckExact(p) ||
        PyBytes_CheckExact(p) || PyFloat_CheckExact(p) || PyBool_Check(p))
        return 1;
    if (PyTuple_CheckExact(p) && depth < 8) {
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(p); i++)
            if (!payload_fast_ok(PyTuple_GET_ITEM(p, i), depth + 1))
                return 0;
        return 1;
    }
    return 0;
}

static int payload_check(struct askew_network *n, PyObject *payload)
{
    if (payload_fast_ok(payload, 0) || n->payload_check == NULL)
        return 0;
    PyObject *res = PyObject_CallOneArg(n->payload_check, payload);
    if (res == NULL)
        return -1;
    Py_DECREF(res);
    return 0;
}

static int send_one(struct askew_loop_state *self, uint32_t src, uint32_t dst,
                    PyObject *payload)
{
    struct askew_network *n = self->net;
    struct askew_net_sent sent;
    const int rc = askew_net_send(&n->net, src, dst, payload, &sent);
    if (rc < 0) {
        raise_net(rc, "sending");
        return -1;
    }
    for (uint32_t i = 0; i < sent.copies; i++)
        Py_INCREF(payload);
    log_record(n, self->sched.now_ns, LOG_SEND, (int32_t)src, (int32_t)dst,
               sent.outcome, payload);
    return 0;
}

/* _net_send_from(token, dst, payload): a node's send. */
static PyObject *net_send_from(struct askew_loop_state *self, PyObject *const *args,
                               Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "_net_send_from(token, dst, payload)");
        return NULL;
    }
    const long long token = PyLong_AsLongLong(args[0]);
    const long long dst = PyLong_AsLongLong(args[1]);
    if (PyErr_Occurred() || node_get(self, dst) == NULL ||
        payload_check(self->net, args[2]) < 0)
        return NULL;
    uint32_t src;
    if (token_alive(self, token, &src) &&
        send_one(self, src, (uint32_t)dst, args[2]) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* _net_broadcast(token, payload): to every other node, in id order. */
static PyObject *net_broadcast(struct askew_loop_state *self, PyObject *const *args,
                               Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "_net_broadcast(token, payload)");
        return NULL;
    }
    const long long token = PyLong_AsLongLong(args[0]);
    if ((token == -1 && PyErr_Occurred()) || payload_check(self->net, args[1]) < 0)
        return NULL;
    uint32_t src;
    if (!token_alive(self, token, &src))
        Py_RETURN_NONE;
    for (size_t dst = 0; dst < self->net->nodes_len; dst++)
        if (dst != src && send_one(self, src, (uint32_t)dst, args[1]) < 0)
            return NULL;
    Py_RETURN_NONE;
}

static PyObject *recv_expire(PyObject *Py_UNUSED(module), PyObject *fut)
{
    const int is_done = askew__future_done(fut);
    if (is_done < 0 || (!is_done && askew__future_set_result(fut, Py_None) < 0))
        return NULL;
    Py_RETURN_NONE;
}

/* _net_recv(node, token, timeout): the next Message if one is waiting, else
 * a future for it (None on timeout). Only the node's own tasks may call it. */
static PyObject *net_recv(struct askew_loop_state *self, PyObject *const *args,
                          Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "_net_recv(node, token, timeout)");
        return NULL;
    }
    struct askew_network *n = self->net;
    const long long node = PyLong_AsLongLong(args[0]);
    const long long token = PyLong_AsLongLong(args[1]);
    if (PyErr_Occurred())
        return NULL;
    struct node_binding *b = node_get(self, node);
    if (b == NULL)
        return NULL;
    double timeout = -1.0;
    if (args[2] != Py_None) {
        timeout = PyFloat_AsDouble(args[2]);
        if ((timeout == -1.0 && PyErr_Occurred()) || PyBool_Check(args[2]) ||
            !isfinite(timeout) || timeout < 0) {
            PyErr_Clear();
            PyErr_Format(
                PyExc_ValueError,
                "recv timeout must be a finite number of seconds >= 0 or None, "
                "got %R",
                args[2]);
            return NULL;
        }
    }
    PyObject *current;
    if (n->node_var == NULL || PyContextVar_Get(n->node_var, NULL, &current) < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_RuntimeError, "recv() outside a simulated world");
        return NULL;
    }
    const long long caller = current == NULL ? -1 : PyLong_AsLongLong(current);
    Py_XDECREF(current);
    if (caller != token) {
        if (caller == -1)
            PyErr_Format(
                PyExc_RuntimeError,
                "recv() of node %lld called from the test body: only node %lld's "
                "own tasks can receive its messages (recv outside a node)",
                node, node);
        else
            PyErr_Format(
                PyExc_RuntimeError,
                "recv() of node %lld called from node %lld: only node %lld's own "
                "tasks can receive its messages (recv outside a node)",
                node, caller >> 32, node);
        return NULL;
    }
    if (b->len > 0) {
        PyObject *msg = b->inbox[b->head]; /* the ring's reference moves out */
        b->head = (b->head + 1) % b->cap;
        b->len--;
        return msg;
    }
    /* One receiver at a time per node, as asyncio's StreamReader allows one
     * reader: a second recv() while the first still waits is refused, not
     * queued behind it and not allowed to replace it (which left the first
     * waiting forever). docs/design.md §4 says why and what to do instead. */
    if (b->waiter != NULL) {
        const int is_done = askew__future_done(b->waiter);
        if (is_done < 0)
            return NULL;
        if (is_done == 0) {
            PyErr_Format(PyExc_RuntimeError,
                         "recv() on node %lld while another of its tasks is already "
                         "waiting in recv(): a node receives in one task at a time. "
                         "Receive in one task and hand messages to the others (an "
                         "asyncio.Queue), or wait for the first recv() to return",
                         node);
            return NULL;
        }
    }
    PyObject *fut = askew__loop_new_future(self);
    if (fut == NULL)
        return NULL;
    Py_XSETREF(b->waiter, Py_NewRef(fut));
    if (b->timeout != NULL) {
        askew__handle_cancel((askew_handle *)b->timeout);
        Py_CLEAR(b->timeout);
    }
    if (timeout >= 0) {
        int64_t deadline;
        const double when = (double)askew__loop_local_ns(self) / 1e9 + timeout;
        if (askew__loop_local_when_to_ns(self, when, &deadline) < 0)
            goto fail;
        b->timeout =
            askew__loop_call_at_ns(self, deadline, recv_expire_fn, &fut, 1, NULL);
        if (b->timeout == NULL)
            goto fail;
    }
    return fut;
fail:
    Py_CLEAR(b->waiter);
    Py_DECREF(fut);
    return NULL;
}

static PyObject *net_set_payload_check(struct askew_loop_state *self, PyObject *fn)
{
    Py_XSETREF(self->net->payload_check, fn == Py_None ? NULL : Py_NewRef(fn));
    Py_RETURN_NONE;
}

static PyObject *net_node_op(struct askew_loop_state *self, PyObject *arg,
                             int (*op)(struct askew_net *, uint32_t), const char *what)
{
    const long long node = PyLong_AsLongLong(arg);
    if (node == -1 && PyErr_Occurred())
        return NULL;
    struct node_binding *b = node_get(self, node);
    if (b == NULL)
        return NULL;
    node_clear(b);
    const int rc = op(&self->net->net, (uint32_t)node);
    if (rc < 0)
        return raise_net(rc, what);
    int alive;
    uint32_t incarnation;
    (void)askew_net_node_state(&self->net->net, (uint32_t)node, &alive, &incarnation);
    return PyLong_FromUnsignedLong(incarnation);
}

static PyObject *net_crash(struct askew_loop_state *self, PyObject *arg)
{
    return net_node_op(self, arg, askew_net_crash, "crashing a node");
}

static PyObject *net_restart(struct askew_loop_state *self, PyObject *arg)
{
    return net_node_op(self, arg, askew_net_restart, "restarting a node");
}

static PyObject *net_alive(struct askew_loop_state *self, PyObject *arg)
{
    const long long node = PyLong_AsLongLong(arg);
    if ((node == -1 && PyErr_Occurred()) || node_get(self, node) == NULL)
        return NULL;
    int alive;
    uint32_t incarnation;
    (void)askew_net_node_state(&self->net->net, (uint32_t)node, &alive, &incarnation);
    return Py_BuildValue("(Ok)", alive ? Py_True : Py_False,
                         (unsigned long)incarnation);
}

/* _net_partition([[ids...], [ids...], ...]) */
static PyObject *net_partition(struct askew_loop_state *self, PyObject *groups)
{
    /* Every group is copied into a tuple first and the buffer sized from
     * those copies, never from a length the caller reports: a __len__ that
     * lies, or an __iter__ that grows a list while it is read, must not be
     * able to write past the buffer. */
    PyObject *seq = PySequence_Tuple(groups); // new reference
    if (seq == NULL)
        return NULL;
    const Py_ssize_t ng = PyTuple_GET_SIZE(seq);
    PyObject *copies = PyTuple_New(ng); // new reference
    uint32_t *ids = NULL;
    size_t *lens = NULL;
    PyObject *res = NULL;
    if (copies == NULL)
        goto done;
    size_t total = 0;
    for (Py_ssize_t g = 0; g < ng; g++) {
        PyObject *group = PySequence_Tuple(PyTuple_GET_ITEM(seq, g)); // new reference
        if (group == NULL)
            goto done;
        total += (size_t)PyTuple_GET_SIZE(group);
        PyTuple_SET_ITEM(copies, g, group); // steals
    }
    ids = PyMem_Malloc((total ? total : 1) * sizeof *ids);
    lens = PyMem_Malloc((ng ? (size_t)ng : 1) * sizeof *lens);
    if (ids == NULL || lens == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    size_t k = 0;
    for (Py_ssize_t g = 0; g < ng; g++) {
        PyObject *group = PyTuple_GET_ITEM(copies, g); // borrowed
        lens[g] = (size_t)PyTuple_GET_SIZE(group);
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(group); i++) {
            const long long id = PyLong_AsLongLong(PyTuple_GET_ITEM(group, i));
            if ((id == -1 && PyErr_Occurred()) || node_get(self, id) == NULL)
                goto done;
            ASKEW_ASSERT(k < total);
            ids[k++] = (uint32_t)id;
        }
    }
    const int rc = askew_net_partition(&self->net->net, ids, lens, (size_t)ng);
    if (rc < 0) {
        raise_net(rc, "partitioning (groups must not overlap)");
        goto done;
    }
    res = Py_NewRef(Py_None);
done:
    PyMem_Free(ids);
    PyMem_Free(lens);
    Py_XDECREF(copies);
    Py_DECREF(seq);
    return res;
}

static PyObject *net_cut(struct askew_loop_state *self, PyObject *args)
{
    long long src, dst;
    if (!PyArg_ParseTuple(args, "LL", &src, &dst) || node_get(self, src) == NULL ||
        node_get(self, dst) == NULL)
        return NULL;
    const int rc = askew_net_cut(&self->net->net, (uint32_t)src, (uint32_t)dst);
    return rc < 0 ? raise_net(rc, "cutting a link") : Py_NewRef(Py_None);
}

static PyObject *net_isolate(struct askew_loop_state *self, PyObject *arg)
{
    const long long node = PyLong_AsLongLong(arg);
    if ((node == -1 && PyErr_Occurred()) || node_get(self, node) == NULL)
        return NULL;
    const int rc = askew_net_isolate(&self->net->net, (uint32_t)node);
    return rc < 0 ? raise_net(rc, "isolating a node") : Py_NewRef(Py_None);
}

static PyObject *net_heal(struct askew_loop_state *self, PyObject *Py_UNUSED(ignored))
{
    askew_net_heal(&self->net->net);
    Py_RETURN_NONE;
}

/* _net_configure(lo_ns, hi_ns, loss_ppm, dup_ppm, src, dst): src < 0 for
 * the global model. Values are validated in _world.py. */
static PyObject *net_configure(struct askew_loop_state *self, PyObject *args)
{
    struct askew_net_link link;
    long long src, dst;
    unsigned int loss, dup;
    if (!PyArg_ParseTuple(args, "LLIILL", &link.latency_ns_min, &link.latency_ns_max,
                          &loss, &dup, &src, &dst))
        return NULL;
    link.loss_ppm = loss;
    link.duplicate_ppm = dup;
    int rc;
    if (src < 0) {
        rc = askew_net_configure(&self->net->net, &link);
    } else {
        if (node_get(self, src) == NULL || node_get(self, dst) == NULL)
            return NULL;
        rc = askew_net_configure_link(&self->net->net, (uint32_t)src, (uint32_t)dst,
                                      &link);
    }
    return rc < 0 ? raise_net(rc, "configuring the network") : Py_NewRef(Py_None);
}

static PyObject *net_link(struct askew_loop_state *self, PyObject *args)
{
    long long src, dst;
    if (!PyArg_ParseTuple(args, "LL", &src, &dst))
        return NULL;
    struct askew_net_link link;
    int cut = 0;
    if (src < 0) {
        link = self->net->net.link;
    } else {
        if (node_get(self, src) == NULL || node_get(self, dst) == NULL)
            return NULL;
        (void)askew_net_link_get(&self->net->net, (uint32_t)src, (uint32_t)dst, &link);
        (void)askew_net_link_cut(&self->net->net, (uint32_t)src, (uint32_t)dst, &cut);
    }
    return Py_BuildValue("(LLIIO)", (long long)link.latency_ns_min,
                         (long long)link.latency_ns_max, link.loss_ppm,
                         link.duplicate_ppm, cut ? Py_True : Py_False);
}

static PyObject *net_stats(struct askew_loop_state *self, PyObject *Py_UNUSED(ignored))
{
    const struct askew_net_stats *s = &self->net->net.stats;
    return Py_BuildValue("{sKsKsKsKsKsKsK}", "sent", (unsigned long long)s->sent,
                         "duplicated", (unsigned long long)s->duplicated, "delivered",
                         (unsigned long long)s->delivered, "crashed",
                         (unsigned long long)s->dropped[ASKEW_NET_DROPPED_CRASHED],
                         "partitioned",
                         (unsigned long long)s->dropped[ASKEW_NET_DROPPED_PARTITIONED],
                         "lost", (unsigned long long)s->dropped[ASKEW_NET_DROPPED_LOST],
                         "in_flight", (unsigned long long)s->in_flight);
}

/* _log_emit(kind, node, detail, digest): a world event, logged and traced. */
static PyObject *log_emit(struct askew_loop_state *self, PyObject *args)
{
    unsigned int kind;
    int node;
    PyObject *detail;
    unsigned long long digest;
    if (!PyArg_ParseTuple(args, "IiOK", &kind, &node, &detail, &digest))
        return NULL;
    log_record(self->net, self->sched.now_ns, kind, node, -1, 0, detail);
    askew_trace_record(&self->sched.trace, self->sched.now_ns, ASKEW_EV_USER, node,
                       kind, digest);
    Py_RETURN_NONE;
}

/* _log_recent(n): up to n newest entries, oldest first, as tuples
 * (t_ns, kind, node, peer, outcome, detail). */
static PyObject *log_recent(struct askew_loop_state *self, PyObject *arg)
{
    struct askew_network *n = self->net;
    Py_ssize_t want = PyLong_AsSsize_t(arg);
    if (want == -1 && PyErr_Occurred())
        return NULL;
    uint64_t have = n->log_count < n->log_cap ? n->log_count : n->log_cap;
    if (want < 0 || (uint64_t)want > have)
        want = (Py_ssize_t)have;
    PyObject *out = PyList_New(want); // new reference
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < want; i++) {
        const struct log_entry *e =
            &n->log[(n->log_count - (uint64_t)want + (uint64_t)i) % n->log_cap];
        PyObject *t =
            Py_BuildValue("(LIiiIO)", (long long)e->t_ns, e->kind, e->node, e->peer,
                          e->outcome, e->detail ? e->detail : Py_None);
        if (t == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, t);
    }
    return out;
}

static PyObject *log_count(struct askew_loop_state *self, PyObject *Py_UNUSED(ignored))
{
    return PyLong_FromUnsignedLongLong(self->net->log_count);
}

PyMethodDef askew__net_methods[] = {
    {"_set_node_var", (PyCFunction)net_set_node_var, METH_O, NULL},
    {"_net_node_add", (PyCFunction)net_node_add, METH_NOARGS, NULL},
    {"_net_send_from", (PyCFunction)(void (*)(void))net_send_from, METH_FASTCALL, NULL},
    {"_net_broadcast", (PyCFunction)(void (*)(void))net_broadcast, METH_FASTCALL, NULL},
    {"_net_recv", (PyCFunction)(void (*)(void))net_recv, METH_FASTCALL, NULL},
    {"_set_payload_check", (PyCFunction)net_set_payload_check, METH_O, NULL},
    {"_net_crash", (PyCFunction)net_crash, METH_O, NULL},
    {"_net_restart", (PyCFunction)net_restart, METH_O, NULL},
    {"_net_alive", (PyCFunction)net_alive, METH_O, NULL},
    {"_net_partition", (PyCFunction)net_partition, METH_O, NULL},
    {"_net_cut", (PyCFunction)net_cut, METH_VARARGS, NULL},
    {"_net_isolate", (PyCFunction)net_isolate, METH_O, NULL},
    {"_net_heal", (PyCFunction)net_heal, METH_NOARGS, NULL},
    {"_net_configure", (PyCFunction)net_configure, METH_VARARGS, NULL},
    {"_net_link", (PyCFunction)net_link, METH_VARARGS, NULL},
    {"_net_stats", (PyCFunction)net_stats, METH_NOARGS, NULL},
    {"_log_emit", (PyCFunction)log_emit, METH_VARARGS, NULL},
    {"_log_recent", (PyCFunction)log_recent, METH_O, NULL},
    {"_log_count", (PyCFunction)log_count, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};
