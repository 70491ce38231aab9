/* SPDX-License-Identifier: Apache-2.0 */
/* askew._core.Receive (see recv.h). Awaited once: its __await__ receives
 * and returns either itself, an iterator that ends at once with the
 * message, or the network's future's own iterator, so the task waits on
 * that future exactly as it did behind `await got` in a coroutine. Never
 * schedules anything itself. Made by NodeBase.recv (node_type.c). */
#include "recv.h"

typedef struct {
    PyObject_HEAD PyObject *net;
    PyObject *world;
    PyObject *args[3]; /* node, token, timeout */
    PyObject *result;  /* the message, once awaited and one was waiting */
    askew_receive_fn fn;
    char awaited;
} receive_object;

PyObject *askew__receive_new(const struct askew_state *st, PyObject *net,
                             askew_receive_fn fn, PyObject *const *args,
                             PyObject *world)
{
    receive_object *self = PyObject_GC_New(receive_object, st->receive_type);
    if (self == NULL)
        return NULL;
    self->net = Py_NewRef(net);
    self->world = Py_NewRef(world);
    for (int i = 0; i < 3; i++)
        self->args[i] = Py_NewRef(args[i]);
    self->result = NULL;
    self->fn = fn;
    self->awaited = 0;
    PyObject_GC_Track(self);
    return (PyObject *)self;
}

static int receive_traverse(receive_object *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->net);
    Py_VISIT(self->world);
    for (int i = 0; i < 3; i++)
        Py_VISIT(self->args[i]);
    Py_VISIT(self->result);
    return 0;
}

static int receive_clear(receive_object *self)
{
    Py_CLEAR(self->net);
    Py_CLEAR(self->world);
    for (int i = 0; i < 3; i++)
        Py_CLEAR(self->args[i]);
    Py_CLEAR(self->result);
    return 0;
}

static void receive_dealloc(receive_object *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    receive_clear(self);
    tp->tp_free(self);
    Py_DECREF(tp);
}

/* What Node.recv's body did first: a world whose run has ended refuses. */
static int check_live(receive_object *self)
{
    const struct askew_state *st = askew__state_of_type(Py_TYPE(self));
    PyObject *ended = PyObject_GetAttr(self->world, st->str_ended); // new reference
    if (ended == NULL)
        return -1;
    const int truth = PyObject_IsTrue(ended);
    Py_DECREF(ended);
    if (truth <= 0)
        return truth;
    PyObject *res = PyObject_CallMethodNoArgs(self->world, st->str_check_live);
    Py_XDECREF(res);
    return res == NULL ? -1 : 0;
}

static PyObject *receive_await(receive_object *self)
{
    if (self->awaited) {
        PyErr_SetString(PyExc_RuntimeError, "cannot reuse an already awaited recv()");
        return NULL;
    }
    self->awaited = 1;
    if (check_live(self) < 0)
        return NULL;
    PyObject *got = self->fn(self->net, self->args, 3); // new reference
    if (got == NULL)
        return NULL;
    const struct askew_state *st = askew__state_of_type(Py_TYPE(self));
    if (Py_IS_TYPE(got, st->message_type)) {
        self->result = got;
        return Py_NewRef((PyObject *)self);
    }
    /* A future: its own iterator, which yields it to the task. */
    PyAsyncMethods *am = Py_TYPE(got)->tp_as_async;
    PyObject *it = am != NULL && am->am_await != NULL ? am->am_await(got) : NULL;
    if (it == NULL && !PyErr_Occurred())
        PyErr_Format(PyExc_TypeError, "recv(): the network handed out %R", got);
    Py_DECREF(got);
    return it;
}

/* 3.11's await of an iterator with am_send: the message as the return
 * value, with no StopIteration made. */
static PySendResult receive_send(receive_object *self, PyObject *Py_UNUSED(arg),
                                 PyObject **result)
{
    if (self->result == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "recv() already returned its message");
        *result = NULL;
        return PYGEN_ERROR;
    }
    *result = self->result; /* the reference moves to the caller */
    self->result = NULL;
    return PYGEN_RETURN;
}

/* Elsewhere: StopIteration carrying the message (a tuple, so wrapped in
 * the exception rather than passed as its arguments). */
static PyObject *receive_next(receive_object *self)
{
    PyObject *msg;
    if (receive_send(self, Py_None, &msg) == PYGEN_ERROR)
        return NULL;
    PyObject *stop = PyObject_CallOneArg(PyExc_StopIteration, msg); // new reference
    Py_DECREF(msg);
    if (stop == NULL)
        return NULL;
    PyErr_SetObject(PyExc_StopIteration, stop);
    Py_DECREF(stop);
    return NULL;
}

static PyObject *receive_repr(receive_object *self)
{
    return PyUnicode_FromFormat("<askew recv of node %R%s>", self->args[0],
                                self->awaited ? "" : ", not awaited");
}

static PyType_Slot receive_slots[] = {
    {Py_tp_dealloc, receive_dealloc},
    {Py_tp_traverse, receive_traverse},
    {Py_tp_clear, receive_clear},
    {Py_tp_repr, receive_repr},
    {Py_am_await, receive_await},
    {Py_am_send, receive_send},
    {Py_tp_iter, PyObject_SelfIter},
    {Py_tp_iternext, receive_next},
    {Py_tp_doc, "What node.recv() returns: await it for the next message (or None on "
                "timeout)."},
    {0, NULL},
};

static PyType_Spec receive_spec = {
    .name = "askew._core.Receive",
    .basicsize = sizeof(receive_object),
    .flags =
        Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = receive_slots,
};

int askew__receive_type_init(PyObject *module, struct askew_state *st)
{
    st->str_ended = PyUnicode_InternFromString("_ended");
    st->str_check_live = PyUnicode_InternFromString("_check_live");
    if (st->str_ended == NULL || st->str_check_live == NULL)
        return -1;
    st->receive_type =
        (PyTypeObject *)PyType_FromModuleAndSpec(module, &receive_spec, NULL);
    if (st->receive_type == NULL)
        return -1;
    return PyModule_AddObjectRef(module, "Receive", (PyObject *)st->receive_type);
}
