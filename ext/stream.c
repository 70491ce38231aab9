/* SPDX-License-Identifier: Apache-2.0 */
/* The TCP data path in C (stream.h). askew._core.Segment is the segment
 * askew/_net/tcp.py subclasses as Segment; the path works on the state of
 * one Endpoint (askew._core.Stream, stream_type.c) and what a Stack's
 * streams share (StreamStack). The common case runs here without a Python
 * frame: a write the window takes, cut into segments whose sizes the seed
 * draws (the same draws, in the same order, as the Python had them);
 * in-order data arriving for a live open socket; its delivery to a plain
 * Protocol's data_received. Everything else stays in askew/_net/, and
 * every path here hands over to the Endpoint's method exactly where the
 * Python decides. Never reads a clock; draws only from the NET stream. The
 * Stream and StreamStack types (stream_type.c) and the network's
 * take_segment call it. */
#include <stddef.h>
#include <string.h>

#include "stream.h"

#include <structmember.h> /* after Python.h, which stream.h brings */

static void segment_dealloc(askew_segment *seg);

int askew__segment_type_check(PyObject *type)
{
    return PyType_Check(type) &&
           askew__has_dealloc((PyTypeObject *)type, (destructor)segment_dealloc);
}

static PyObject *call0(askew_tcp *s, int name)
{
    return PyObject_CallMethodNoArgs(s->ep, s->stack->str[name]);
}

/* stats[key] += by: 0, or -1 with an exception. */
static int stat_add(askew_tcp_stack *k, int name, long long by)
{
    PyObject *key = k->str[name];
    PyObject *old = PyDict_GetItemWithError(k->stats, key); // borrowed
    if (old == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetObject(PyExc_KeyError, key);
        return -1;
    }
    const long long v = PyLong_AsLongLong(old);
    if (v == -1 && PyErr_Occurred())
        return -1;
    PyObject *sum = PyLong_FromLongLong(v + by); // new reference
    if (sum == NULL)
        return -1;
    const int rc = PyDict_SetItem(k->stats, key, sum);
    Py_DECREF(sum);
    return rc;
}

/* The exception being raised, normalized, with its traceback; cleared. */
static PyObject *take_exception(void)
{
#if PY_VERSION_HEX >= 0x030C0000
    return PyErr_GetRaisedException();
#else
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (tb != NULL)
        PyException_SetTraceback(value, tb);
    Py_XDECREF(type);
    Py_XDECREF(tb);
    return value;
#endif
}

/* Whether the incarnation that owns s still lives (Endpoint.alive): 1, 0,
 * or -1 with an exception. */
static int stream_alive(askew_tcp *s)
{
    PyObject *t = PyObject_GetAttr(s->slot, s->stack->str[S_TOKEN]); // new reference
    if (t == NULL)
        return -1;
    const long long token = PyLong_AsLongLong(t);
    Py_DECREF(t);
    if (token == -1 && PyErr_Occurred())
        return -1;
    return token == s->token;
}

/* Schedule the reader if it reads and is not scheduled yet. */
int askew__stream_wake(askew_tcp *s)
{
    if (!s->reading || s->rx_scheduled)
        return 0;
    const askew_network *n = s->stack->net;
    if (askew__network_gone(n))
        return -1;
    s->rx_scheduled = 1;
    PyObject *h = n->host.call_soon(n->host.ctx, s->stack->deliver, (PyObject *)s,
                                    s->ctx == Py_None ? NULL : s->ctx);
    if (h == NULL)
        return -1;
    Py_DECREF(h);
    return 0;
}

/* The next bytes in order: counted, queued for the reader, who is woken. */
int askew__stream_accept(askew_tcp *s, PyObject *data)
{
    const Py_ssize_t len = PyObject_Size(data);
    if (len < 0)
        return -1;
    s->rcv_next += len;
    if (PyList_Append(s->rx, data) < 0)
        return -1;
    return askew__stream_wake(s);
}

/* The reader took n bytes: the sender's window opens by as much. */
int askew__stream_consumed(askew_tcp *s, long long n)
{
    askew_tcp *p = s->peer_s;
    if (p == NULL || p->dead)
        return 0;
    p->inflight -= n;
    if (PyByteArray_GET_SIZE(p->buf) == 0)
        return 0;
    PyObject *r = call0(p, S_PUMP);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    return 0;
}

/* Send data, which the window takes whole, as segments whose sizes the
 * seed draws: one draw over [1, 4*cap] each, three times in four the whole
 * cap (at most segment_max), else a shorter segment, so one write often
 * arrives in pieces. A segment dropped at send goes to the stack's
 * _dropped (retransmitted after a timeout). */
int askew__stream_put(askew_tcp *s, PyObject *data)
{
    askew_tcp_stack *k = s->stack;
    askew_network *n = k->net;
    if (!PyBytes_Check(data)) {
        PyErr_Format(PyExc_TypeError, "put() takes bytes, not %.100s",
                     Py_TYPE(data)->tp_name);
        return -1;
    }
    if (askew__network_gone(n))
        return -1;
    PyTypeObject *tp = (PyTypeObject *)k->segment_type;
    const Py_ssize_t len = PyBytes_GET_SIZE(data);
    Py_ssize_t off = 0;
    while (off < len) {
        long long cap = len - off;
        if (cap > k->segment_max)
            cap = k->segment_max;
        long long size = cap;
        if (cap > 1) {
            const long long drawn = askew_rng_range(&n->net.rng, 1, 4 * cap);
            size = drawn < cap ? drawn : cap;
        }
        askew_segment *seg = (askew_segment *)tp->tp_alloc(tp, 0); // new reference
        if (seg == NULL)
            return -1;
        seg->kind = k->data_kind;
        seg->src = Py_NewRef(s->ep);
        seg->dst = Py_NewRef(s->peer != NULL ? s->peer : Py_None);
        seg->dst_s = (askew_tcp *)Py_XNewRef((PyObject *)s->peer_s);
        seg->seq = s->snd_next;
        seg->ack = s->rcv_next + s->rx_eof;
        seg->data = size == len ? Py_NewRef(data)
                                : PyBytes_FromStringAndSize(
                                      PyBytes_AS_STRING(data) + off, (Py_ssize_t)size);
        long long outcome = 0;
        s->snd_next += size;
        s->inflight += size;
        off += (Py_ssize_t)size;
        if (seg->data == NULL || stat_add(k, S_TCP_SEGMENTS, 1) < 0 ||
            askew__network_send_segment(n, s->token, s->remote_node, (PyObject *)seg,
                                        &outcome) < 0) {
            Py_DECREF(seg);
            return -1;
        }
        if (outcome > ASKEW_NET_DUPLICATED) {
            /* lost at send: retransmitted after a timeout */
            PyObject *r =
                PyObject_CallMethodOneArg(k->stack, k->str[S_DROPPED], (PyObject *)seg);
            if (r == NULL) {
                Py_DECREF(seg);
                return -1;
            }
            Py_DECREF(r);
        }
        Py_DECREF(seg);
    }
    return stat_add(k, S_TCP_BYTES, len);
}

/* b"".join(rx), and rx emptied. New reference. */
static PyObject *rx_take(askew_tcp *s)
{
    PyObject *rx = s->rx;
    const Py_ssize_t len = PyList_GET_SIZE(rx);
    PyObject *data = NULL;
    if (len == 1) {
        data = Py_NewRef(PyList_GET_ITEM(rx, 0));
    } else {
        Py_ssize_t total = 0;
        for (Py_ssize_t i = 0; i < len && total >= 0; i++) {
            PyObject *chunk = PyList_GET_ITEM(rx, i); // borrowed
            total = PyBytes_CheckExact(chunk) ? total + PyBytes_GET_SIZE(chunk) : -1;
        }
        if (total < 0) {
            data =
                PyObject_CallMethodOneArg(s->stack->empty, s->stack->str[S_JOIN], rx);
        } else if ((data = PyBytes_FromStringAndSize(NULL, total)) != NULL) {
            char *at = PyBytes_AS_STRING(data);
            for (Py_ssize_t i = 0; i < len; i++) {
                PyObject *chunk = PyList_GET_ITEM(rx, i); // borrowed
                memcpy(at, PyBytes_AS_STRING(chunk), (size_t)PyBytes_GET_SIZE(chunk));
                at += PyBytes_GET_SIZE(chunk);
            }
        }
    }
    if (data == NULL || PyList_SetSlice(rx, 0, len, NULL) < 0) {
        Py_XDECREF(data);
        return NULL;
    }
    return data;
}

/* A plain Protocol reads all that has arrived: rx taken, the window
 * opened, protocol.data_received(data). The byte count; -2 when
 * data_received raised and the connection was aborted (asyncio's fatal
 * error); -1 with an exception (SystemExit and KeyboardInterrupt pass). */
Py_ssize_t askew__stream_take(askew_tcp *s, PyObject *protocol)
{
    PyObject *data = rx_take(s); // new reference
    if (data == NULL)
        return -1;
    const Py_ssize_t n = PyObject_Size(data);
    if (n < 0 || askew__stream_consumed(s, n) < 0) {
        Py_DECREF(data);
        return -1;
    }
    PyObject *r =
        PyObject_CallMethodOneArg(protocol, s->stack->str[S_DATA_RECEIVED], data);
    Py_DECREF(data);
    if (r != NULL) {
        Py_DECREF(r);
        return n;
    }
    if (PyErr_ExceptionMatches(PyExc_SystemExit) ||
        PyErr_ExceptionMatches(PyExc_KeyboardInterrupt))
        return -1;
    PyObject *exc = take_exception(); // new reference
    r = PyObject_CallMethodObjArgs(s->ep, s->stack->str[S_FATAL], exc,
                                   s->stack->str[S_FATAL_TEXT], NULL);
    Py_DECREF(exc);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    return -2;
}

/* What call_soon runs when a socket is readable: a plain Protocol that
 * reads, with data and no EOF waiting, is served here; anything else is
 * Endpoint._deliver_rx's. */
PyObject *askew__stream_deliver(askew_tcp *s)
{
    if (!s->reading || s->conn_lost || s->rx_eof || PyList_GET_SIZE(s->rx) == 0)
        return call0(s, S_DELIVER_RX);
    s->rx_scheduled = 0; /* an error below must not leave the reader unwakeable */
    PyObject *protocol = PyObject_GetAttr(s->ep, s->stack->str[S_PROTOCOL]); // new
    if (protocol == NULL)
        return NULL;
    const int slow =
        protocol == Py_None ? 1 : PyObject_IsInstance(protocol, s->stack->buffered);
    if (slow != 0) {
        Py_DECREF(protocol);
        return slow < 0 ? NULL : call0(s, S_DELIVER_RX);
    }
    const Py_ssize_t n = askew__stream_take(s, protocol);
    Py_DECREF(protocol);
    if (n == -1)
        return NULL;
    if (n == -2)
        Py_RETURN_NONE;
    if (n && PyList_GET_SIZE(s->rx) && s->reading && !s->rx_scheduled)
        return askew__stream_wake(s) < 0 ? NULL : Py_NewRef(Py_None);
    if (s->rx_eof)
        return call0(s, S_DELIVER_EOF);
    Py_RETURN_NONE;
}

/* The network's take_segment: a segment of the stack's segment type came
 * due with `outcome`. 1 when it was in-order data for a live open socket
 * and is taken (queued, its reader woken), 0 when the stack's Python
 * handler decides, -1 with an exception. */
int askew__stream_take_segment(PyObject *segment, uint32_t outcome)
{
    if (!askew__has_dealloc(Py_TYPE(segment), (destructor)segment_dealloc))
        return 0;
    askew_segment *seg = (askew_segment *)segment; /* the caller checked its type */
    askew_tcp *s = seg->dst_s;
    if (s == NULL || outcome != ASKEW_NET_DELIVERED || s->dead)
        return 0;
    const int alive = stream_alive(s);
    if (alive <= 0)
        return alive;
    seg->acked = 1; /* data for a live socket */
    /* Heard from, for keep-alive, each on its own node's clock: this end
     * by the data, the sender by its (instant) ACK. */
    const struct askew_net_host *h = &s->stack->net->host;
    s->rx_ns = h->local_ns(h->ctx, s->token >> ASKEW_NODE_TOKEN_SHIFT);
    if (s->peer_s != NULL)
        s->peer_s->rx_ns =
            h->local_ns(h->ctx, s->peer_s->token >> ASKEW_NODE_TOKEN_SHIFT);
    if (seg->seq != s->rcv_next || PyDict_GET_SIZE(s->ooo) != 0 || s->closing)
        return 0;
    return askew__stream_accept(s, seg->data) < 0 ? -1 : 1;
}

/* ---- Segment ------------------------------------------------------------------ */

/* Segment(kind, src, dst, seq, data) */
static PyObject *segment_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"kind", "src", "dst", "seq", "data", NULL};
    PyObject *src, *dst, *data;
    long long seq;
    int kind;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "iOOLO:Segment", kwlist, &kind, &src,
                                     &dst, &seq, &data))
        return NULL;
    askew_segment *seg = (askew_segment *)type->tp_alloc(type, 0);
    if (seg == NULL)
        return NULL;
    seg->kind = kind;
    seg->src = Py_NewRef(src);
    seg->dst = Py_NewRef(dst);
    seg->seq = seq;
    seg->data = Py_NewRef(data);
    return (PyObject *)seg;
}

static int segment_traverse(askew_segment *seg, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(seg));
    Py_VISIT(seg->src);
    Py_VISIT(seg->dst);
    Py_VISIT(seg->data);
    Py_VISIT(seg->src_addr);
    Py_VISIT(seg->to);
    Py_VISIT(seg->dst_s);
    return 0;
}

static int segment_clear(askew_segment *seg)
{
    Py_CLEAR(seg->src);
    Py_CLEAR(seg->dst);
    Py_CLEAR(seg->data);
    Py_CLEAR(seg->src_addr);
    Py_CLEAR(seg->to);
    Py_CLEAR(seg->dst_s);
    return 0;
}

static void segment_dealloc(askew_segment *seg)
{
    PyTypeObject *tp = Py_TYPE(seg);
    PyObject_GC_UnTrack(seg);
    (void)segment_clear(seg);
    tp->tp_free((PyObject *)seg);
    Py_DECREF(tp);
}

static PyMemberDef segment_members[] = {
    {"kind", T_INT, offsetof(askew_segment, kind), 0, NULL},
    {"seq", T_LONGLONG, offsetof(askew_segment, seq), 0, NULL},
    {"ack", T_LONGLONG, offsetof(askew_segment, ack), 0, NULL},
    {"tries", T_INT, offsetof(askew_segment, tries), 0, NULL},
    {"acked", T_BOOL, offsetof(askew_segment, acked), 0, NULL},
    {"src", T_OBJECT_EX, offsetof(askew_segment, src), 0, NULL},
    {"dst", T_OBJECT_EX, offsetof(askew_segment, dst), 0, NULL},
    {"data", T_OBJECT_EX, offsetof(askew_segment, data), 0, NULL},
    {"src_addr", T_OBJECT_EX, offsetof(askew_segment, src_addr), 0, NULL},
    {"to", T_OBJECT_EX, offsetof(askew_segment, to), 0, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot segment_slots[] = {
    {Py_tp_new, segment_new},
    {Py_tp_dealloc, segment_dealloc},
    {Py_tp_traverse, segment_traverse},
    {Py_tp_clear, segment_clear},
    {Py_tp_members, segment_members},
    {Py_tp_doc, "One segment on the wire (askew/_net/tcp.py's Segment subclasses it)."},
    {0, NULL},
};

static PyType_Spec segment_spec = {
    .name = "askew._core.Segment",
    .basicsize = sizeof(askew_segment),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_BASETYPE,
    .slots = segment_slots,
};

int askew__segment_type_init(PyObject *module)
{
    PyObject *tp =
        PyType_FromModuleAndSpec(module, &segment_spec, NULL); // new reference
    if (tp == NULL)
        return -1;
    const int rc = PyModule_AddObjectRef(module, "Segment", tp);
    Py_DECREF(tp);
    return rc;
}
