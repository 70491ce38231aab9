/* SPDX-License-Identifier: Apache-2.0 */
/* askew._core.Stream, the hot state of one TCP Endpoint (sequence numbers,
 * window, the flags the data path tests), which the Endpoint reads through
 * properties, and askew._core.StreamStack, what a Stack's streams share:
 * their construction, attributes, GC support and methods. Each method is
 * one step of the data path (stream.c); making a StreamStack makes its
 * network ask that path first about every segment that comes due. Module
 * init (module.c) calls askew__stream_types_init. */
#include <stddef.h>
#include <string.h>

#include "stream.h"
#include "stream_type.h"

#include <structmember.h> /* after Python.h, which stream.h brings */

/* The text of each S_* name (stream.h), interned once per StreamStack. */
static const char *const names[S_COUNT] = {
    "token",       "protocol",
    "_s",          "_write",
    "_deliver_rx", "_deliver_eof",
    "_fatal",      "_pump",
    "_dropped",    "data_received",
    "join",        "tcp_segments",
    "tcp_bytes",   "Fatal error: protocol.data_received() call failed.",
};

static void stream_dealloc(askew_tcp *s);
static void stream_stack_dealloc(askew_tcp_stack *k);

/* What call_soon runs when a socket is readable (StreamStack.deliver):
 * the data path's delivery, for a Stream. */
static PyObject *deliver(PyObject *Py_UNUSED(module), PyObject *arg)
{
    if (!askew__has_dealloc(Py_TYPE(arg), (destructor)stream_dealloc)) {
        PyErr_SetString(PyExc_TypeError, "deliver(stream)");
        return NULL;
    }
    return askew__stream_deliver((askew_tcp *)arg);
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
            return askew__stream_put(s, data) < 0 ? NULL : Py_NewRef(Py_None);
    }
    return PyObject_CallMethodOneArg(s->ep, s->stack->str[S_WRITE], data);
}

static PyObject *stream_put(askew_tcp *s, PyObject *data)
{
    return askew__stream_put(s, data) < 0 ? NULL : Py_NewRef(Py_None);
}

static PyObject *stream_accept(askew_tcp *s, PyObject *data)
{
    return askew__stream_accept(s, data) < 0 ? NULL : Py_NewRef(Py_None);
}

static PyObject *stream_wake(askew_tcp *s, PyObject *Py_UNUSED(ignored))
{
    return askew__stream_wake(s) < 0 ? NULL : Py_NewRef(Py_None);
}

static PyObject *stream_consumed(askew_tcp *s, PyObject *arg)
{
    const long long n = PyLong_AsLongLong(arg);
    if ((n == -1 && PyErr_Occurred()) || askew__stream_consumed(s, n) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *stream_take(askew_tcp *s, PyObject *protocol)
{
    const Py_ssize_t n = askew__stream_take(s, protocol);
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
        if (!askew__has_dealloc(Py_TYPE(st), (destructor)stream_dealloc)) {
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
    if (!askew__has_dealloc(Py_TYPE(stack), (destructor)stream_stack_dealloc)) {
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
    {Py_tp_doc,
     "The hot state of one TCP endpoint (askew/_net/endpoint.py's Endpoint._s)."},
    {0, NULL},
};

static PyType_Spec stream_spec = {
    .name = "askew._core.Stream",
    .basicsize = sizeof(askew_tcp),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .slots = stream_slots,
};

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
    if (!askew__segment_type_check(segment_type) || !PyType_Check(buffered) ||
        window < 1 || segment_max < 1) {
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
    k->net->take_segment = askew__stream_take_segment;
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
    {Py_tp_doc, "What the streams of one askew/_net/stack.py Stack share."},
    {0, NULL},
};

static PyType_Spec stream_stack_spec = {
    .name = "askew._core.StreamStack",
    .basicsize = sizeof(askew_tcp_stack),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .slots = stream_stack_slots,
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

int askew__stream_types_init(PyObject *module)
{
    return add_type(module, &stream_spec) < 0 ||
                   add_type(module, &stream_stack_spec) < 0
               ? -1
               : 0;
}
