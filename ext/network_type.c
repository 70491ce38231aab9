/* SPDX-License-Identifier: Apache-2.0 */
/* askew._core.Network as Python sees it (see network.h): its methods (nodes
 * and incarnations, sends and broadcasts, recv and its timeout, TCP
 * segments, partitions and links, the link model, statistics and message
 * faults), its GC support, the type, askew.Message and NET_OUTCOME_NAMES.
 * Each method checks its arguments and calls the wire (network.c) or the
 * engine; a network that outlived its loop refuses every call. Module init
 * (module.c) calls askew__network_setup; askew/_world/ and
 * askew/_net/ call the methods. */
#include <math.h>
#include <stdlib.h>

#include "errors.h"
#include "handle.h"
#include "network.h"
#include "network_type.h"
#include "task.h"

static PyObject *recv_expire(PyObject *module, PyObject *fut);
static PyMethodDef recv_expire_def = {"_recv_expire", recv_expire, METH_O, NULL};
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

/* ---- methods ------------------------------------------------------------- */

/* 0 when the loop is there and both ids name nodes; else -1 with an
 * exception. */
static int check_link(const askew_network *n, long long src, long long dst)
{
    return askew__network_gone(n) || askew__node_check(&n->net, src, NULL) < 0 ||
                   askew__node_check(&n->net, dst, NULL) < 0
               ? -1
               : 0;
}

static PyObject *net_node_add(askew_network *n, PyObject *Py_UNUSED(ignored))
{
    if (askew__network_gone(n))
        return NULL;
    const int grown = askew__grow((void **)&n->nodes, &n->nodes_cap, n->nodes_len + 1,
                                  sizeof *n->nodes);
    if (grown < 0)
        return askew__raise_engine(grown, "adding a node");
    uint32_t id;
    const int rc = askew_net_node_add(&n->net, &id);
    if (rc < 0)
        return askew__raise_engine(rc, "adding a node");
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

static int payload_check(askew_network *n, PyObject *payload)
{
    if (payload_fast_ok(payload, 0) || n->payload_check == NULL)
        return 0;
    PyObject *res = PyObject_CallOneArg(n->payload_check, payload);
    if (res == NULL)
        return -1;
    Py_DECREF(res);
    return 0;
}

/* The (token, dst, payload) arguments of send_from and send_segment: 0, or
 * -1 with an exception (`usage` names the call). */
static int parse_send(askew_network *n, PyObject *const *args, Py_ssize_t nargs,
                      const char *usage, long long *token, long long *dst)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, usage);
        return -1;
    }
    *token = askew__token_as_long(args[0]);
    *dst = PyLong_AsLongLong(args[1]);
    return PyErr_Occurred() || askew__network_check_node(n, *dst) < 0 ? -1 : 0;
}

/* send_from(token, dst, payload): a node's send. */
static PyObject *net_send_from(askew_network *n, PyObject *const *args,
                               Py_ssize_t nargs)
{
    long long token, dst;
    if (parse_send(n, args, nargs, "send_from(token, dst, payload)", &token, &dst) <
            0 ||
        payload_check(n, args[2]) < 0)
        return NULL;
    uint32_t src;
    if (askew__node_token_alive(&n->net, token, &src) &&
        askew__network_send(n, src, (uint32_t)dst, args[2], NULL) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* broadcast(token, payload): to every other node, in id order. */
static PyObject *net_broadcast(askew_network *n, PyObject *const *args,
                               Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "broadcast(token, payload)");
        return NULL;
    }
    const long long token = askew__token_as_long(args[0]);
    if ((token == -1 && PyErr_Occurred()) || askew__network_gone(n) ||
        payload_check(n, args[1]) < 0)
        return NULL;
    uint32_t src;
    if (!askew__node_token_alive(&n->net, token, &src))
        Py_RETURN_NONE;
    for (size_t dst = 0; dst < n->nodes_len; dst++)
        if (dst != src && askew__network_send(n, src, (uint32_t)dst, args[1], NULL) < 0)
            return NULL;
    Py_RETURN_NONE;
}

/* send_segment(token, dst, segment): a TCP segment from the live
 * incarnation `token`; the outcome code, or -1 when that incarnation is
 * gone (nothing is sent). No payload check: the stack makes segments. */
static PyObject *net_send_segment(askew_network *n, PyObject *const *args,
                                  Py_ssize_t nargs)
{
    long long token, dst, outcome;
    if (parse_send(n, args, nargs, "send_segment(token, dst, segment)", &token, &dst) <
            0 ||
        askew__network_send_segment(n, token, dst, args[2], &outcome) < 0)
        return NULL;
    return PyLong_FromLongLong(outcome);
}

/* draw(lo, hi): uniform in [lo, hi] from the NET stream (one draw, none
 * when lo == hi): segment sizes and retransmission jitter. */
static PyObject *net_draw(askew_network *n, PyObject *args)
{
    long long lo, hi;
    if (!PyArg_ParseTuple(args, "LL", &lo, &hi) || askew__network_gone(n))
        return NULL;
    if (lo > hi) {
        PyErr_SetString(PyExc_ValueError, "draw(lo, hi) needs lo <= hi");
        return NULL;
    }
    return PyLong_FromLongLong(lo == hi ? lo : askew_rng_range(&n->net.rng, lo, hi));
}

/* set_segment_handler(type, handler) or (None, None). */
static PyObject *net_set_segment_handler(askew_network *n, PyObject *const *args,
                                         Py_ssize_t nargs)
{
    if (nargs != 2 || (args[0] != Py_None && !PyType_Check(args[0]))) {
        PyErr_SetString(PyExc_TypeError, "set_segment_handler(type, handler)");
        return NULL;
    }
    if (askew__network_gone(n))
        return NULL;
    Py_XSETREF(n->segment_type, args[0] == Py_None ? NULL : Py_NewRef(args[0]));
    Py_XSETREF(n->segment_handler, args[0] == Py_None ? NULL : Py_NewRef(args[1]));
    Py_RETURN_NONE;
}

static PyObject *recv_expire(PyObject *Py_UNUSED(module), PyObject *fut)
{
    const int is_done = askew__future_done(fut);
    if (is_done < 0 || (!is_done && askew__future_set_result(fut, Py_None) < 0))
        return NULL;
    Py_RETURN_NONE;
}

/* recv(node, token, timeout): the next Message if one is waiting, else
 * a future for it (None on timeout). Only the node's own tasks may call it. */
static PyObject *net_recv(askew_network *n, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "recv(node, token, timeout)");
        return NULL;
    }
    const long long node = PyLong_AsLongLong(args[0]);
    const long long token = askew__token_as_long(args[1]);
    if (PyErr_Occurred() || askew__network_check_node(n, node) < 0)
        return NULL;
    struct askew_node_inbox *b = &n->nodes[node];
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
    PyObject *var = n->host.gate->var;
    if (var == NULL || PyContextVar_Get(var, NULL, &current) < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_RuntimeError, "recv() outside a simulated world");
        return NULL;
    }
    const long long caller = current == NULL ? -1 : askew__token_as_long(current);
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
                node, (long long)askew__node_of(caller), node);
        return NULL;
    }
    if (b->len > 0) {
        PyObject *msg = b->ring[b->head]; /* the ring's reference moves out */
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
    PyObject *fut = n->host.new_future(n->host.ctx);
    if (fut == NULL)
        return NULL;
    Py_XSETREF(b->waiter, Py_NewRef(fut));
    if (b->timeout != NULL) {
        askew__handle_cancel((askew_handle *)b->timeout);
        Py_CLEAR(b->timeout);
    }
    if (timeout >= 0) {
        b->timeout =
            n->host.call_later(n->host.ctx, timeout, n->state->recv_expire_fn, fut);
        if (b->timeout == NULL)
            goto fail;
    }
    return fut;
fail:
    Py_CLEAR(b->waiter);
    Py_DECREF(fut);
    return NULL;
}

PyObject *askew__network_recv(PyObject *net, PyObject *const *args, Py_ssize_t nargs)
{
    return net_recv((askew_network *)net, args, nargs);
}

static PyObject *net_set_payload_check(askew_network *n, PyObject *fn)
{
    if (askew__network_gone(n))
        return NULL;
    Py_XSETREF(n->payload_check, fn == Py_None ? NULL : Py_NewRef(fn));
    Py_RETURN_NONE;
}

static PyObject *net_node_op(askew_network *n, PyObject *arg,
                             int (*op)(struct askew_net *, uint32_t), const char *what)
{
    const long long node = PyLong_AsLongLong(arg);
    if ((node == -1 && PyErr_Occurred()) || askew__network_check_node(n, node) < 0)
        return NULL;
    askew__network_inbox_clear(&n->nodes[node]);
    const int rc = op(&n->net, (uint32_t)node);
    if (rc < 0)
        return askew__raise_engine(rc, what);
    int alive;
    uint32_t incarnation;
    (void)askew_net_node_state(&n->net, (uint32_t)node, &alive, &incarnation);
    return PyLong_FromUnsignedLong(incarnation);
}

static PyObject *net_crash(askew_network *n, PyObject *arg)
{
    return net_node_op(n, arg, askew_net_crash, "crashing a node");
}

static PyObject *net_restart(askew_network *n, PyObject *arg)
{
    return net_node_op(n, arg, askew_net_restart, "restarting a node");
}

static PyObject *net_alive(askew_network *n, PyObject *arg)
{
    const long long node = PyLong_AsLongLong(arg);
    if ((node == -1 && PyErr_Occurred()) || askew__network_check_node(n, node) < 0)
        return NULL;
    int alive;
    uint32_t incarnation;
    (void)askew_net_node_state(&n->net, (uint32_t)node, &alive, &incarnation);
    return Py_BuildValue("(Ok)", alive ? Py_True : Py_False,
                         (unsigned long)incarnation);
}

/* partition([[ids...], [ids...], ...]) */
static PyObject *net_partition(askew_network *n, PyObject *groups)
{
    /* Every group is copied into a tuple first and the buffer sized from
     * those copies, never from a length the caller reports: a __len__ that
     * lies, or an __iter__ that grows a list while it is read, must not be
     * able to write past the buffer. */
    if (askew__network_gone(n))
        return NULL;
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
            if ((id == -1 && PyErr_Occurred()) ||
                askew__node_check(&n->net, id, NULL) < 0)
                goto done;
            ASKEW_ASSERT(k < total);
            ids[k++] = (uint32_t)id;
        }
    }
    const int rc = askew_net_partition(&n->net, ids, lens, (size_t)ng);
    if (rc < 0) {
        askew__raise_engine(rc, "partitioning (groups must not overlap)");
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

static PyObject *net_cut(askew_network *n, PyObject *args)
{
    long long src, dst;
    if (!PyArg_ParseTuple(args, "LL", &src, &dst) || check_link(n, src, dst) < 0)
        return NULL;
    const int rc = askew_net_cut(&n->net, (uint32_t)src, (uint32_t)dst);
    return rc < 0 ? askew__raise_engine(rc, "cutting a link") : Py_NewRef(Py_None);
}

static PyObject *net_isolate(askew_network *n, PyObject *arg)
{
    const long long node = PyLong_AsLongLong(arg);
    if ((node == -1 && PyErr_Occurred()) || askew__network_check_node(n, node) < 0)
        return NULL;
    const int rc = askew_net_isolate(&n->net, (uint32_t)node);
    return rc < 0 ? askew__raise_engine(rc, "isolating a node") : Py_NewRef(Py_None);
}

static PyObject *net_heal(askew_network *n, PyObject *Py_UNUSED(ignored))
{
    if (askew__network_gone(n))
        return NULL;
    askew_net_heal(&n->net);
    Py_RETURN_NONE;
}

/* configure(lo_ns, hi_ns, loss_ppm, dup_ppm, src, dst): src < 0 for
 * the global model. Values are validated in _world.py. */
static PyObject *net_configure(askew_network *n, PyObject *args)
{
    struct askew_net_link link;
    long long src, dst;
    unsigned int loss, dup;
    if (!PyArg_ParseTuple(args, "LLIILL", &link.latency_ns_min, &link.latency_ns_max,
                          &loss, &dup, &src, &dst) ||
        askew__network_gone(n))
        return NULL;
    link.loss_ppm = loss;
    link.duplicate_ppm = dup;
    int rc;
    if (src < 0) {
        rc = askew_net_configure(&n->net, &link);
    } else {
        if (check_link(n, src, dst) < 0)
            return NULL;
        rc = askew_net_configure_link(&n->net, (uint32_t)src, (uint32_t)dst, &link);
    }
    return rc < 0 ? askew__raise_engine(rc, "configuring the network")
                  : Py_NewRef(Py_None);
}

static PyObject *net_link(askew_network *n, PyObject *args)
{
    long long src, dst;
    if (!PyArg_ParseTuple(args, "LL", &src, &dst) || askew__network_gone(n))
        return NULL;
    struct askew_net_link link;
    int cut = 0;
    if (src < 0) {
        link = n->net.link;
    } else {
        if (check_link(n, src, dst) < 0)
            return NULL;
        (void)askew_net_link_get(&n->net, (uint32_t)src, (uint32_t)dst, &link);
        (void)askew_net_link_cut(&n->net, (uint32_t)src, (uint32_t)dst, &cut);
    }
    return Py_BuildValue("(LLIIO)", (long long)link.latency_ns_min,
                         (long long)link.latency_ns_max, link.loss_ppm,
                         link.duplicate_ppm, cut ? Py_True : Py_False);
}

static PyObject *net_stats(askew_network *n, PyObject *Py_UNUSED(ignored))
{
    if (askew__network_gone(n))
        return NULL;
    const struct askew_net_stats *s = &n->net.stats;
    return Py_BuildValue("{sKsKsKsKsKsKsK}", "sent", (unsigned long long)s->sent,
                         "duplicated", (unsigned long long)s->duplicated, "delivered",
                         (unsigned long long)s->delivered, "crashed",
                         (unsigned long long)s->dropped[ASKEW_NET_DROPPED_CRASHED],
                         "partitioned",
                         (unsigned long long)s->dropped[ASKEW_NET_DROPPED_PARTITIONED],
                         "lost", (unsigned long long)s->dropped[ASKEW_NET_DROPPED_LOST],
                         "in_flight", (unsigned long long)s->in_flight);
}

/* suppress(kind, ids): the run skips the message faults of `kind`
 * (ASKEW_NET_FAULT_DROP or _DUP) of the sends `ids` (askew/_explore/shrink.py). */
static PyObject *net_suppress(askew_network *n, PyObject *args)
{
    unsigned int kind;
    PyObject *seq, *fast;
    if (!PyArg_ParseTuple(args, "IO", &kind, &seq) || askew__network_gone(n))
        return NULL;
    if ((fast = PySequence_Fast(seq, "suppress(kind, ids): ids must be a sequence")) ==
        NULL)
        return NULL;
    const Py_ssize_t len = PySequence_Fast_GET_SIZE(fast);
    uint64_t *ids = PyMem_Calloc(len > 0 ? (size_t)len : 1, sizeof(*ids));
    int rc = 0;
    if (ids == NULL) {
        Py_DECREF(fast);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < len; i++) {
        ids[i] = PyLong_AsUnsignedLongLong(PySequence_Fast_GET_ITEM(fast, i));
        if (PyErr_Occurred())
            goto fail;
    }
    rc = askew_net_suppress(&n->net, kind, ids, (size_t)len);
    if (rc < 0) {
        askew__raise_engine(rc, "suppressing message faults");
        goto fail;
    }
    PyMem_Free(ids);
    Py_DECREF(fast);
    Py_RETURN_NONE;

fail:
    PyMem_Free(ids);
    Py_DECREF(fast);
    return NULL;
}

/* faults(): the run's message faults so far, as a list of (kind, id,
 * sent_ns, src, dst), and the count not kept: (list, more). */
static PyObject *net_faults(askew_network *n, PyObject *Py_UNUSED(ignored))
{
    size_t len;
    uint64_t more;
    if (askew__network_gone(n))
        return NULL;
    const struct askew_net_fault *faults = askew_net_faults(&n->net, &len, &more);
    PyObject *list = PyList_New((Py_ssize_t)len);
    if (list == NULL)
        return NULL;
    for (size_t i = 0; i < len; i++) {
        const struct askew_net_fault *f = &faults[i];
        PyObject *item = Py_BuildValue("(IKLII)", f->kind, (unsigned long long)f->id,
                                       (long long)f->sent_ns, f->src, f->dst);
        if (item == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, item);
    }
    return Py_BuildValue("(NK)", list, (unsigned long long)more);
}

/* check_node(id, what): the "unknown node id" check, for askew/_world/. */
static PyObject *net_check_node(askew_network *n, PyObject *const *args,
                                Py_ssize_t nargs)
{
    const char *what;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "check_node(node, what)");
        return NULL;
    }
    if ((what = PyUnicode_AsUTF8(args[1])) == NULL || askew__network_gone(n) ||
        askew__node_check_object(&n->net, args[0], what) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef network_methods[] = {
    {"node_add", (PyCFunction)net_node_add, METH_NOARGS, "A new node; its id."},
    {"check_node", (PyCFunction)(void (*)(void))net_check_node, METH_FASTCALL, NULL},
    {"send_from", (PyCFunction)(void (*)(void))net_send_from, METH_FASTCALL, NULL},
    {"broadcast", (PyCFunction)(void (*)(void))net_broadcast, METH_FASTCALL, NULL},
    {"recv", (PyCFunction)(void (*)(void))net_recv, METH_FASTCALL, NULL},
    {"send_segment", (PyCFunction)(void (*)(void))net_send_segment, METH_FASTCALL,
     NULL},
    {"draw", (PyCFunction)net_draw, METH_VARARGS, NULL},
    {"set_segment_handler", (PyCFunction)(void (*)(void))net_set_segment_handler,
     METH_FASTCALL, NULL},
    {"set_payload_check", (PyCFunction)net_set_payload_check, METH_O, NULL},
    {"crash", (PyCFunction)net_crash, METH_O, NULL},
    {"restart", (PyCFunction)net_restart, METH_O, NULL},
    {"alive", (PyCFunction)net_alive, METH_O, NULL},
    {"partition", (PyCFunction)net_partition, METH_O, NULL},
    {"cut", (PyCFunction)net_cut, METH_VARARGS, NULL},
    {"isolate", (PyCFunction)net_isolate, METH_O, NULL},
    {"heal", (PyCFunction)net_heal, METH_NOARGS, NULL},
    {"configure", (PyCFunction)net_configure, METH_VARARGS, NULL},
    {"link", (PyCFunction)net_link, METH_VARARGS, NULL},
    {"stats", (PyCFunction)net_stats, METH_NOARGS, NULL},
    {"suppress", (PyCFunction)net_suppress, METH_VARARGS, NULL},
    {"faults", (PyCFunction)net_faults, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

/* ---- the type ------------------------------------------------------------ */

struct gc_visit {
    visitproc visit;
    void *arg;
};

static int visit_payload(void *payload, void *ctx)
{
    const struct gc_visit *v = ctx;
    return v->visit((PyObject *)payload, v->arg);
}

static int network_traverse(askew_network *n, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(n));
    Py_VISIT(n->payload_check);
    Py_VISIT(n->segment_type);
    Py_VISIT(n->segment_handler);
    for (size_t i = 0; i < n->nodes_len; i++) {
        struct askew_node_inbox *b = &n->nodes[i];
        Py_VISIT(b->waiter);
        Py_VISIT(b->timeout);
        for (size_t k = 0; k < b->len; k++)
            Py_VISIT(b->ring[(b->head + k) % b->cap]);
    }
    if (n->host.ctx == NULL)
        return 0;
    /* One reference per copy on the wire (askew__network_send), so one visit
     * each. */
    struct gc_visit v = {visit, arg};
    return askew_net_visit(&n->net, visit_payload, &v);
}

static int network_clear_refs(askew_network *n)
{
    askew__network_clear(n);
    Py_CLEAR(n->payload_check);
    Py_CLEAR(n->segment_type);
    Py_CLEAR(n->segment_handler);
    return 0;
}

static void network_dealloc(askew_network *n)
{
    PyTypeObject *tp = Py_TYPE(n);
    PyObject_GC_UnTrack(n);
    askew__network_detach(n);
    (void)network_clear_refs(n);
    for (size_t i = 0; i < n->nodes_len; i++)
        PyMem_Free(n->nodes[i].ring);
    free(n->nodes);
    tp->tp_free((PyObject *)n);
    Py_DECREF(tp);
}

static PyType_Slot network_slots[] = {
    {Py_tp_dealloc, network_dealloc},
    {Py_tp_traverse, network_traverse},
    {Py_tp_clear, network_clear_refs},
    {Py_tp_methods, network_methods},
    {Py_tp_doc, "A loop's simulated network (loop._net); askew.World drives it."},
    {0, NULL},
};

static PyType_Spec network_spec = {
    .name = "askew._core.Network",
    .basicsize = sizeof(askew_network),
    .flags =
        Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = network_slots,
};

/* NET_OUTCOME_NAMES: the engine's name of each outcome, indexed by code. */
static PyObject *outcome_names(void)
{
    PyObject *names = PyTuple_New(ASKEW_NET_OUTCOMES); // new reference
    if (names == NULL)
        return NULL;
    for (uint32_t i = 0; i < ASKEW_NET_OUTCOMES; i++) {
        PyObject *name = PyUnicode_FromString(askew_net_outcome_name(i));
        if (name == NULL) {
            Py_DECREF(names);
            return NULL;
        }
        PyTuple_SET_ITEM(names, i, name); // steals
    }
    return names;
}

int askew__network_setup(PyObject *module)
{
    struct askew_state *st = PyModule_GetState(module);
    st->message_type = PyStructSequence_NewType(&message_desc);
    st->recv_expire_fn = PyCFunction_New(&recv_expire_def, NULL);
    st->network_type =
        (PyTypeObject *)PyType_FromModuleAndSpec(module, &network_spec, NULL);
    if (st->message_type == NULL || st->recv_expire_fn == NULL ||
        st->network_type == NULL ||
        PyModule_AddObjectRef(module, "Message", (PyObject *)st->message_type) < 0 ||
        PyModule_AddObjectRef(module, "Network", (PyObject *)st->network_type) < 0)
        return -1;
    PyObject *names = outcome_names();
    if (names == NULL)
        return -1;
    const int rc = PyModule_AddObjectRef(module, "NET_OUTCOME_NAMES", names);
    Py_DECREF(names);
    return rc;
}
