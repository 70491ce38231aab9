/* SPDX-License-Identifier: Apache-2.0 */
/* The TCP data path in C (stream.h). askew._core.Segment is the segment
 * askew/_sockets.py subclasses as _Segment; askew._core.Stream is the hot
 * state of one Endpoint (sequence numbers, window, the flags the data path
 * tests), which the Endpoint reads through properties; StreamStack is what
 * a Stack's streams share. The common case runs here without a Python
 * frame: a write the window takes, cut into segments whose sizes the seed
 * draws (the same draws, in the same order, as the Python had them);
 * in-order data arriving for a live open socket; its delivery to a plain
 * Protocol's data_received. Everything else stays in askew/_sockets.py, and
 * every path here hands over to the Endpoint's method exactly where the
 * Python decides. Never reads a clock; draws only from the NET stream. */
#include <stddef.h>
#include <string.h>

#include "network.h"
#include "stream.h"

#include <structmember.h> /* after Python.h, which network.h brings */

/* The names the data path calls or reads, interned once per StreamStack. */
enum {
    S_TOKEN,
    S_PROTOCOL,
    S_STATE,
    S_WRITE,
    S_DELIVER_RX,
    S_DELIVER_EOF,
    S_FATAL,
    S_PUMP,
    S_DROPPED,
    S_DATA_RECEIVED,
    S_JOIN,
    S_TCP_SEGMENTS,
    S_TCP_BYTES,
    S_FATAL_TEXT,
    S_COUNT
};

static const char *const names[S_COUNT] = {
    "token",       "protocol",
    "_s",          "_write",
    "_deliver_rx", "_deliver_eof",
    "_fatal",      "_pump",
    "_dropped",    "data_received",
    "join",        "tcp_segments",
    "tcp_bytes",   "Fatal error: protocol.data_received() call failed.",
};

typedef struct askew_tcp_stack {
    PyObject_HEAD askew_network *net; /* the loop's network */
    PyObject *stack;                  /* the Python Stack: _dropped(segment) */
    PyObject *stats;                  /* stack.stats */
    PyObject *segment_type;           /* askew/_sockets.py's _Segment */
    PyObject *buffered;               /* asyncio.BufferedProtocol */
    PyObject *deliver;                /* deliver(stream): what call_soon runs */
    PyObject *empty;                  /* b"" */
    PyObject *str[S_COUNT];
    long long window;      /* bytes a sender may have unconsumed */
    long long segment_max; /* the largest segment the size draw may choose */
    int data_kind;         /* DATA's kind number */
} askew_tcp_stack;

typedef struct askew_tcp {
    PyObject_HEAD askew_tcp_stack *stack;
    PyObject *ep;   /* the Endpoint (a cycle through ep._s, for the GC) */
    PyObject *slot; /* its node's slot: slot.token is the live incarnation */
    PyObject *ctx;  /* the context its callbacks run in, or None */
    PyObject *peer; /* the peer Endpoint, or NULL */
    struct askew_tcp *peer_s;
    PyObject *rx;  /* the Endpoint's list of arrived chunks (the same list) */
    PyObject *buf; /* its write buffer, a bytearray */
    PyObject *ooo; /* its dict of out-of-order segments */
    long long token;
    long long remote_node;
    long long snd_next;
    long long inflight;
    long long rcv_next;
    long long conn_lost;
    long long rx_ns; /* when a segment last came from the peer (keep-alive) */
    char dead;
    char closing;
    char reading;
    char rx_scheduled;
    char rx_eof;
    char eof_wanted;
} askew_tcp;

typedef struct askew_segment {
    PyObject_HEAD PyObject *src;
    PyObject *dst;
    PyObject *data;
    PyObject *src_addr; /* a datagram's addresses (askew/_udp.py) */
    PyObject *to;
    askew_tcp *dst_s; /* dst's state: data the C path sent, else NULL */
    long long seq;
    int kind;
    int tries;
    char acked;
} askew_segment;

static void segment_dealloc(askew_segment *seg);
static void stream_dealloc(askew_tcp *s);
static void stream_stack_dealloc(askew_tcp_stack *k);

/* Whether o's type is ours (or a subclass): its dealloc says so. */
static int has_dealloc(PyTypeObject *tp, destructor dealloc)
{
    for (; tp != NULL; tp = tp->tp_base)
        if (tp->tp_dealloc == dealloc)
            return 1;
    return 0;
}

static int segment_type_check(PyObject *type)
{
    return PyType_Check(type) &&
           has_dealloc((PyTypeObject *)type, (destructor)segment_dealloc);
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

/* ---- the stream's pieces, one implementation each ------------------------ */

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
static int wake(askew_tcp *s)
{
    if (!s->reading || s->rx_scheduled)
        return 0;
    const askew_network *n = s->stack->net;
    if (n->host.ctx == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "this network's loop is gone");
        return -1;
    }
    s->rx_scheduled = 1;
    PyObject *h = n->host.call_soon(n->host.ctx, s->stack->deliver, (PyObject *)s,
                                    s->ctx == Py_None ? NULL : s->ctx);
    if (h == NULL)
        return -1;
    Py_DECREF(h);
    return 0;
}

/* The next bytes in order: counted, queued for the reader, who is woken. */
static int accept_data(askew_tcp *s, PyObject *data)
{
    const Py_ssize_t len = PyObject_Size(data);
    if (len < 0)
        return -1;
    s->rcv_next += len;
    if (PyList_Append(s->rx, data) < 0)
        return -1;
    return wake(s);
}

/* The reader took n bytes: the sender's window opens by as much. */
static int consumed(askew_tcp *s, long long n)
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
static int put(askew_tcp *s, PyObject *data)
{
    askew_tcp_stack *k = s->stack;
    askew_network *n = k->net;
    if (!PyBytes_Check(data)) {
        PyErr_Format(PyExc_TypeError, "put() takes bytes, not %.100s",
                     Py_TYPE(data)->tp_name);
        return -1;
    }
    if (n->host.ctx == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "this network's loop is gone");
        return -1;
    }
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
static Py_ssize_t take(askew_tcp *s, PyObject *protocol)
{
    PyObject *data = rx_take(s); // new reference
    if (data == NULL)
        return -1;
    const Py_ssize_t n = PyObject_Size(data);
    if (n < 0 || consumed(s, n) < 0) {
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
static PyObject *deliver(PyObject *Py_UNUSED(module), PyObject *arg)
{
    if (!has_dealloc(Py_TYPE(arg), (destructor)stream_dealloc)) {
        PyErr_SetString(PyExc_TypeError, "deliver(stream)");
        return NULL;
    }
    askew_tcp *s = (askew_tcp *)arg;
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
    const Py_ssize_t n = take(s, protocol);
    Py_DECREF(protocol);
    if (n == -1)
        return NULL;
    if (n == -2)
        Py_RETURN_NONE;
    if (n && PyList_GET_SIZE(s->rx) && s->reading && !s->rx_scheduled)
        return wake(s) < 0 ? NULL : Py_NewRef(Py_None);
    if (s->rx_eof)
        return call0(s, S_DELIVER_EOF);
    Py_RETURN_NONE;
}

static PyMethodDef deliver_def = {"_stream_deliver", deliver, METH_O, NULL};

/* ---- Stream: methods ------------------------------------------------------ */

/* write(data): the Endpoint's write. Bytes the window takes whole, with
 * nothing buffered, go straight out; anything else is Endpoint._write's. */
static PyObject *stream_write(askew_tcp *s, PyObject *data)
{
    if (PyBytes_CheckExact(data)) {
        const Py_ssize_t len = PyBytes_GET_SIZE(data);
        if (len > 0 && !s->eof_wanted && !s->conn_lost &&
            PyByteArray_GET_SIZE(s->buf) == 0 && !s->closing && s->peer_s != NULL &&
            !s->dead && s->inflight + len <= s->stack->window)
            return put(s, data) < 0 ? NULL : Py_NewRef(Py_None);
    }
    return PyObject_CallMethodOneArg(s->ep, s->stack->str[S_WRITE], data);
}

static PyObject *stream_put(askew_tcp *s, PyObject *data)
{
    return put(s, data) < 0 ? NULL : Py_NewRef(Py_None);
}

static PyObject *stream_accept(askew_tcp *s, PyObject *data)
{
    return accept_data(s, data) < 0 ? NULL : Py_NewRef(Py_None);
}

static PyObject *stream_wake(askew_tcp *s, PyObject *Py_UNUSED(ignored))
{
    return wake(s) < 0 ? NULL : Py_NewRef(Py_None);
}

static PyObject *stream_consumed(askew_tcp *s, PyObject *arg)
{
    const long long n = PyLong_AsLongLong(arg);
    if ((n == -1 && PyErr_Occurred()) || consumed(s, n) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *stream_take(askew_tcp *s, PyObject *protocol)
{
    const Py_ssize_t n = take(s, protocol);
    return n == -1 ? NULL : PyLong_FromSsize_t(n == -2 ? -1 : n);
}

static PyMethodDef stream_methods[] = {
    {"write", (PyCFunction)stream_write, METH_O,
     "write(data): the fast path of Endpoint.write; else Endpoint._write(data)."},
    {"put", (PyCFunction)stream_put, METH_O,
     "put(data): send bytes the window takes whole, in drawn segment sizes."},
    {"accept", (PyCFunction)stream_accept, METH_O,
     "accept(data): the next bytes in order: queued for the reader, who is woken."},
    {"wake", (PyCFunction)stream_wake, METH_NOARGS,
     "wake(): schedule the reader, if it reads and is not scheduled."},
    {"consumed", (PyCFunction)stream_consumed, METH_O,
     "consumed(n): the reader took n bytes; the peer's window opens."},
    {"take", (PyCFunction)stream_take, METH_O,
     "take(protocol): hand all arrived bytes to protocol.data_received; their "
     "count, or -1 when it raised and the connection was aborted."},
    {NULL, NULL, 0, NULL},
};

/* ---- Stream: attributes --------------------------------------------------- */

static PyObject *flag_get(askew_tcp *s, void *offset)
{
    return PyBool_FromLong(*((char *)s + (size_t)offset));
}

static int flag_set(askew_tcp *s, PyObject *v, void *offset)
{
    if (v == NULL) {
        PyErr_SetString(PyExc_AttributeError, "cannot delete a stream flag");
        return -1;
    }
    const int truth = PyObject_IsTrue(v);
    if (truth < 0)
        return -1;
    *((char *)s + (size_t)offset) = (char)truth;
    return 0;
}

static PyObject *peer_get(askew_tcp *s, void *Py_UNUSED(closure))
{
    return Py_NewRef(s->peer != NULL ? s->peer : Py_None);
}

static int peer_set(askew_tcp *s, PyObject *v, void *Py_UNUSED(closure))
{
    askew_tcp *ps = NULL;
    if (v == NULL) {
        PyErr_SetString(PyExc_AttributeError, "cannot delete peer");
        return -1;
    }
    if (v != Py_None) {
        PyObject *st = PyObject_GetAttr(v, s->stack->str[S_STATE]); // new reference
        if (st == NULL)
            return -1;
        if (!has_dealloc(Py_TYPE(st), (destructor)stream_dealloc)) {
            PyErr_Format(PyExc_TypeError, "a peer's _s must be a Stream, not %.100s",
                         Py_TYPE(st)->tp_name);
            Py_DECREF(st);
            return -1;
        }
        ps = (askew_tcp *)st;
    }
    Py_XSETREF(s->peer, v == Py_None ? NULL : Py_NewRef(v));
    Py_XSETREF(s->peer_s, ps);
    return 0;
}

#define FLAG(name)                                                                     \
    {#name, (getter)flag_get, (setter)flag_set, NULL, (void *)offsetof(askew_tcp, name)}

static PyGetSetDef stream_getset[] = {
    FLAG(dead),
    FLAG(closing),
    FLAG(reading),
    FLAG(rx_scheduled),
    FLAG(rx_eof),
    FLAG(eof_wanted),
    {"peer", (getter)peer_get, (setter)peer_set, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMemberDef stream_members[] = {
    {"snd_next", T_LONGLONG, offsetof(askew_tcp, snd_next), 0, NULL},
    {"inflight", T_LONGLONG, offsetof(askew_tcp, inflight), 0, NULL},
    {"rcv_next", T_LONGLONG, offsetof(askew_tcp, rcv_next), 0, NULL},
    {"conn_lost", T_LONGLONG, offsetof(askew_tcp, conn_lost), 0, NULL},
    {"rx_ns", T_LONGLONG, offsetof(askew_tcp, rx_ns), 0, NULL},
    {"token", T_LONGLONG, offsetof(askew_tcp, token), READONLY, NULL},
    {"remote_node", T_LONGLONG, offsetof(askew_tcp, remote_node), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

/* ---- Stream: the type ----------------------------------------------------- */

/* Stream(stack, ep, slot, token, remote_node, ctx, rx, buf, ooo) */
static PyObject *stream_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"stack", "ep", "slot", "token", "remote_node",
                             "ctx",   "rx", "buf",  "ooo",   NULL};
    PyObject *stack, *ep, *slot, *ctx, *rx, *buf, *ooo;
    long long token, remote_node;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOOLLOO!O!O!:Stream", kwlist, &stack,
                                     &ep, &slot, &token, &remote_node, &ctx,
                                     &PyList_Type, &rx, &PyByteArray_Type, &buf,
                                     &PyDict_Type, &ooo))
        return NULL;
    if (!has_dealloc(Py_TYPE(stack), (destructor)stream_stack_dealloc)) {
        PyErr_SetString(PyExc_TypeError,
                        "Stream(stack, ...): stack must be a StreamStack");
        return NULL;
    }
    askew_tcp *s = (askew_tcp *)type->tp_alloc(type, 0);
    if (s == NULL)
        return NULL;
    s->stack = (askew_tcp_stack *)Py_NewRef(stack);
    s->ep = Py_NewRef(ep);
    s->slot = Py_NewRef(slot);
    s->ctx = Py_NewRef(ctx);
    s->rx = Py_NewRef(rx);
    s->buf = Py_NewRef(buf);
    s->ooo = Py_NewRef(ooo);
    s->token = token;
    s->remote_node = remote_node;
    s->reading = 1;
    return (PyObject *)s;
}

static int stream_traverse(askew_tcp *s, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(s));
    Py_VISIT(s->stack);
    Py_VISIT(s->ep);
    Py_VISIT(s->slot);
    Py_VISIT(s->ctx);
    Py_VISIT(s->peer);
    Py_VISIT(s->peer_s);
    Py_VISIT(s->rx);
    Py_VISIT(s->buf);
    Py_VISIT(s->ooo);
    return 0;
}

static int stream_clear(askew_tcp *s)
{
    Py_CLEAR(s->stack);
    Py_CLEAR(s->ep);
    Py_CLEAR(s->slot);
    Py_CLEAR(s->ctx);
    Py_CLEAR(s->peer);
    Py_CLEAR(s->peer_s);
    Py_CLEAR(s->rx);
    Py_CLEAR(s->buf);
    Py_CLEAR(s->ooo);
    return 0;
}

static void stream_dealloc(askew_tcp *s)
{
    PyTypeObject *tp = Py_TYPE(s);
    PyObject_GC_UnTrack(s);
    (void)stream_clear(s);
    tp->tp_free((PyObject *)s);
    Py_DECREF(tp);
}

/* A cleared stream (the GC broke its cycle) has no stack: its methods and
 * the data path must not run then. tp_clear only runs on garbage, which
 * nothing calls again, so the data path does not check. */
static PyType_Slot stream_slots[] = {
    {Py_tp_new, stream_new},
    {Py_tp_dealloc, stream_dealloc},
    {Py_tp_traverse, stream_traverse},
    {Py_tp_clear, stream_clear},
    {Py_tp_methods, stream_methods},
    {Py_tp_members, stream_members},
    {Py_tp_getset, stream_getset},
    {Py_tp_doc, "The hot state of one TCP endpoint (askew/_sockets.py's Endpoint._s)."},
    {0, NULL},
};

static PyType_Spec stream_spec = {
    .name = "askew._core.Stream",
    .basicsize = sizeof(askew_tcp),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .slots = stream_slots,
};

/* ---- arrival ---------------------------------------------------------------- */

/* The network's take_segment: a segment of the stack's segment type came
 * due with `outcome`. 1 when it was in-order data for a live open socket
 * and is taken (queued, its reader woken), 0 when the stack's Python
 * handler decides, -1 with an exception. */
static int take_segment(PyObject *segment, uint32_t outcome)
{
    if (!has_dealloc(Py_TYPE(segment), (destructor)segment_dealloc))
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
    return accept_data(s, seg->data) < 0 ? -1 : 1;
}

/* ---- StreamStack ------------------------------------------------------------ */

/* StreamStack(net, stack, stats, segment_type, buffered, window,
 * segment_max, data_kind) */
static PyObject *stream_stack_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"net",          "stack",     "stats",
                             "segment_type", "buffered",  "window",
                             "segment_max",  "data_kind", NULL};
    PyObject *net, *stack, *stats, *segment_type, *buffered;
    long long window, segment_max;
    int data_kind;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!OO!OOLLi:StreamStack", kwlist,
                                     askew__state_of_type(type)->network_type, &net,
                                     &stack, &PyDict_Type, &stats, &segment_type,
                                     &buffered, &window, &segment_max, &data_kind))
        return NULL;
    if (!segment_type_check(segment_type) || !PyType_Check(buffered) || window < 1 ||
        segment_max < 1) {
        PyErr_SetString(PyExc_ValueError,
                        "StreamStack: segment_type must subclass Segment, buffered be "
                        "a class, window and segment_max be >= 1");
        return NULL;
    }
    askew_tcp_stack *k = (askew_tcp_stack *)type->tp_alloc(type, 0);
    if (k == NULL)
        return NULL;
    k->net = (askew_network *)Py_NewRef(net);
    k->stack = Py_NewRef(stack);
    k->stats = Py_NewRef(stats);
    k->segment_type = Py_NewRef(segment_type);
    k->buffered = Py_NewRef(buffered);
    k->window = window;
    k->segment_max = segment_max;
    k->data_kind = data_kind;
    k->net->take_segment = take_segment;
    k->deliver = PyCFunction_New(&deliver_def, NULL);
    k->empty = PyBytes_FromStringAndSize(NULL, 0);
    if (k->deliver == NULL || k->empty == NULL)
        goto fail;
    for (int i = 0; i < S_COUNT; i++)
        if ((k->str[i] = PyUnicode_InternFromString(names[i])) == NULL)
            goto fail;
    return (PyObject *)k;
fail:
    Py_DECREF(k);
    return NULL;
}

static int stream_stack_traverse(askew_tcp_stack *k, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(k));
    Py_VISIT(k->net);
    Py_VISIT(k->stack);
    Py_VISIT(k->stats);
    Py_VISIT(k->segment_type);
    Py_VISIT(k->buffered);
    Py_VISIT(k->deliver);
    return 0;
}

static int stream_stack_clear(askew_tcp_stack *k)
{
    Py_CLEAR(k->net);
    Py_CLEAR(k->stack);
    Py_CLEAR(k->stats);
    Py_CLEAR(k->segment_type);
    Py_CLEAR(k->buffered);
    Py_CLEAR(k->deliver);
    return 0;
}

static void stream_stack_dealloc(askew_tcp_stack *k)
{
    PyTypeObject *tp = Py_TYPE(k);
    PyObject_GC_UnTrack(k);
    (void)stream_stack_clear(k);
    Py_CLEAR(k->empty);
    for (int i = 0; i < S_COUNT; i++)
        Py_CLEAR(k->str[i]);
    tp->tp_free((PyObject *)k);
    Py_DECREF(tp);
}

static PyType_Slot stream_stack_slots[] = {
    {Py_tp_new, stream_stack_new},
    {Py_tp_dealloc, stream_stack_dealloc},
    {Py_tp_traverse, stream_stack_traverse},
    {Py_tp_clear, stream_stack_clear},
    {Py_tp_doc, "What the streams of one askew/_sockets.py Stack share."},
    {0, NULL},
};

static PyType_Spec stream_stack_spec = {
    .name = "askew._core.StreamStack",
    .basicsize = sizeof(askew_tcp_stack),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .slots = stream_stack_slots,
};

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
    {Py_tp_doc,
     "One segment on the wire (askew/_sockets.py's _Segment subclasses it)."},
    {0, NULL},
};

static PyType_Spec segment_spec = {
    .name = "askew._core.Segment",
    .basicsize = sizeof(askew_segment),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_BASETYPE,
    .slots = segment_slots,
};

/* ---- setup ----------------------------------------------------------- */

static int add_type(PyObject *module, PyType_Spec *spec)
{
    PyObject *tp = PyType_FromModuleAndSpec(module, spec, NULL); // new reference
    if (tp == NULL)
        return -1;
    const int rc = PyModule_AddObjectRef(module, strrchr(spec->name, '.') + 1, tp);
    Py_DECREF(tp);
    return rc;
}

int askew__stream_setup(PyObject *module)
{
    return add_type(module, &segment_spec) < 0 || add_type(module, &stream_spec) < 0 ||
                   add_type(module, &stream_stack_spec) < 0
               ? -1
               : 0;
}
