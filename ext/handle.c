/* SPDX-License-Identifier: Apache-2.0 */
/* The Handle and TimerHandle types of askew._core: a callback, up to three
 * arguments stored inline (no tuple on the hot path), and the context to run
 * it in. They duck-type asyncio.Handle and asyncio.TimerHandle (cancel,
 * cancelled, when, get_context), as uvloop's do. Cancelling a timer removes
 * it from its loop's heap at once, through what the loop handed down
 * (struct askew_handle_loop): this file never calls the loop's units. A dead
 * handle goes to the module state's free list, which module.c empties. */
#include "handle.h"
#include "task.h"

#include <structmember.h>

static inline askew_handle *handle_new(struct askew_state *st, int timer,
                                       PyObject *loop, PyObject *callback,
                                       PyObject *const *args, Py_ssize_t nargs,
                                       PyObject *context)
{
    PyTypeObject *type = timer ? st->timer_handle_type : st->handle_type;
    askew_handle *h;
    if (st->freelist_len > 0) {
        /* Only the exact types are kept, and both have one size. */
        h = st->freelist[--st->freelist_len];
        (void)PyObject_Init((PyObject *)h, type); /* also takes a type reference */
    } else {
        h = PyObject_GC_New(askew_handle, type);
        if (h == NULL)
            return NULL;
    }
    h->timer.deadline_ns = 0;
    h->timer.seq = 0;
    h->timer.index = ASKEW_TIMER_IDLE;
    h->timer.kind = ASKEW_TIMER_KIND_HANDLE;
    h->callback = Py_NewRef(callback);
    h->context = Py_NewRef(context);
    h->loop = Py_NewRef(loop);
    h->state = st;
    h->nargs = nargs;
    h->args_tuple = NULL;
    for (int i = 0; i < ASKEW_HANDLE_ARGS_INLINE; i++)
        h->args_inline[i] = NULL;
    if (nargs <= ASKEW_HANDLE_ARGS_INLINE) {
        for (Py_ssize_t i = 0; i < nargs; i++)
            h->args_inline[i] = Py_NewRef(args[i]);
    } else {
        h->args_tuple = PyTuple_New(nargs); // new reference
        if (h->args_tuple == NULL) {
            h->nargs = 0;
            Py_DECREF(h);
            return NULL;
        }
        for (Py_ssize_t i = 0; i < nargs; i++)
            PyTuple_SET_ITEM(h->args_tuple, i, Py_NewRef(args[i]));
    }
    h->seq = 0;
    h->node = -1;
    h->incarnation = 0;
    h->cancelled = 0;
    h->is_timer = (char)(timer != 0);
    h->queued = 0;
    h->weakreflist = NULL;
    PyObject_GC_Track(h);
    return h;
}

/* Two entry points rather than a flag: six arguments pass in registers. */
askew_handle *askew__handle_new(struct askew_state *st, PyObject *loop,
                                PyObject *callback, PyObject *const *args,
                                Py_ssize_t nargs, PyObject *context)
{
    return handle_new(st, /* timer */ 0, loop, callback, args, nargs, context);
}

askew_handle *askew__timer_handle_new(struct askew_state *st, PyObject *loop,
                                      PyObject *callback, PyObject *const *args,
                                      Py_ssize_t nargs, PyObject *context)
{
    return handle_new(st, /* timer */ 1, loop, callback, args, nargs, context);
}

void askew__handle_clear_call(askew_handle *h)
{
    Py_CLEAR(h->callback);
    for (int i = 0; i < ASKEW_HANDLE_ARGS_INLINE; i++)
        Py_CLEAR(h->args_inline[i]);
    Py_CLEAR(h->args_tuple);
    h->nargs = 0;
}

int askew__handle_run(askew_handle *h)
{
    const struct askew_state *st = h->state;
    if (h->callback == NULL)
        return 0; /* cancelled while queued */
    if (PyContext_Enter(h->context) < 0)
        return -1;
    /* A handle runs once: take its arguments out (and hold the callback), so
     * that the callback cancelling its own handle frees nothing in use. */
    PyObject *callback = Py_NewRef(h->callback);
    PyObject *args[ASKEW_HANDLE_ARGS_INLINE];
    PyObject *args_tuple = h->args_tuple;
    const Py_ssize_t nargs = h->nargs;
    for (int i = 0; i < ASKEW_HANDLE_ARGS_INLINE; i++) {
        args[i] = h->args_inline[i];
        h->args_inline[i] = NULL;
    }
    h->args_tuple = NULL;
    h->nargs = 0;
    PyObject *res;
    if (callback == st->set_result_unless_cancelled && nargs == 2 &&
        args_tuple == NULL &&
        (Py_IS_TYPE(args[0], st->sim_future_type) ||
         Py_IS_TYPE(args[0], (PyTypeObject *)st->future_type)))
        /* asyncio.sleep's timer: the same two checks, without a frame */
        res = askew__future_set_result_unless_cancelled(st, args[0], args[1]) < 0
                  ? NULL
                  : Py_NewRef(Py_None);
    else if (args_tuple != NULL)
        res = PyObject_Call(callback, args_tuple, NULL);
    else
        res = PyObject_Vectorcall(callback, args, (size_t)nargs, NULL);
    Py_DECREF(callback);
    Py_XDECREF(args_tuple);
    for (int i = 0; i < ASKEW_HANDLE_ARGS_INLINE; i++)
        Py_XDECREF(args[i]);
    /* Exiting cannot fail for a context we entered; keep the callback's error. */
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    if (PyContext_Exit(h->context) < 0)
        PyErr_Clear();
    PyErr_Restore(type, value, tb);
    if (res == NULL)
        return -1;
    Py_DECREF(res);
    return 0;
}

static int handle_traverse(askew_handle *h, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(h));
    Py_VISIT(h->callback);
    Py_VISIT(h->context);
    Py_VISIT(h->loop);
    for (int i = 0; i < ASKEW_HANDLE_ARGS_INLINE; i++)
        Py_VISIT(h->args_inline[i]);
    Py_VISIT(h->args_tuple);
    return 0;
}

static int handle_clear(askew_handle *h)
{
    askew__handle_clear_call(h);
    Py_CLEAR(h->context);
    Py_CLEAR(h->loop);
    return 0;
}

static void handle_dealloc(askew_handle *h)
{
    PyTypeObject *tp = Py_TYPE(h);
    PyObject_GC_UnTrack(h);
    if (h->weakreflist != NULL)
        PyObject_ClearWeakRefs((PyObject *)h);
    (void)handle_clear(h);
    struct askew_state *st = h->state;
    if (st->freelist_len < ASKEW_HANDLE_FREELIST_MAX &&
        (tp == st->handle_type || tp == st->timer_handle_type))
        st->freelist[st->freelist_len++] = h;
    else
        PyObject_GC_Del(h);
    Py_DECREF(tp);
}

void askew__handle_cancel(askew_handle *h)
{
    if (!h->cancelled) {
        h->cancelled = 1;
        askew__handle_clear_call(h);
        if (h->is_timer && h->timer.index != ASKEW_TIMER_IDLE && h->loop != NULL)
            h->state->handle_loop->timer_cancelled(h->loop, h);
    }
}

static PyObject *handle_cancel(askew_handle *h, PyObject *Py_UNUSED(ignored))
{
    askew__handle_cancel(h);
    Py_RETURN_NONE;
}

static PyObject *handle_cancelled(askew_handle *h, PyObject *Py_UNUSED(ignored))
{
    return PyBool_FromLong(h->cancelled);
}

static PyObject *handle_get_context(askew_handle *h, PyObject *Py_UNUSED(ignored))
{
    return Py_NewRef(h->context ? h->context : Py_None);
}

static PyObject *handle_when(askew_handle *h, PyObject *Py_UNUSED(ignored))
{
    return PyFloat_FromDouble(h->state->handle_loop->when(h->loop, h));
}

static PyObject *handle_get_callback(askew_handle *h, void *Py_UNUSED(closure))
{
    return Py_NewRef(h->callback ? h->callback : Py_None);
}

static PyObject *handle_get_args(askew_handle *h, void *Py_UNUSED(closure))
{
    if (h->callback == NULL)
        Py_RETURN_NONE;
    if (h->args_tuple != NULL)
        return Py_NewRef(h->args_tuple);
    PyObject *t = PyTuple_New(h->nargs); // new reference
    if (t == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < h->nargs; i++)
        PyTuple_SET_ITEM(t, i, Py_NewRef(h->args_inline[i]));
    return t;
}

/* By creation number, never by address, so sets of handles iterate alike in
 * every process. */
static Py_hash_t handle_hash(askew_handle *h)
{
    const Py_hash_t v = (Py_hash_t)(h->seq & (uint64_t)PY_SSIZE_T_MAX);
    return v == -1 ? -2 : v;
}

static PyObject *handle_repr(askew_handle *h)
{
    const char *name = h->is_timer ? "TimerHandle" : "Handle";
    const char *state = h->cancelled ? " cancelled" : "";
    if (h->is_timer)
        return PyUnicode_FromFormat("<%s%s when=%lld ns %R>", name, state,
                                    (long long)h->timer.deadline_ns,
                                    h->callback ? h->callback : Py_None);
    return PyUnicode_FromFormat("<%s%s %R>", name, state,
                                h->callback ? h->callback : Py_None);
}

/* Timer handles order like asyncio's: by when. */
static PyObject *handle_richcompare(PyObject *a, PyObject *b, int op)
{
    if (!PyObject_TypeCheck(b, ((askew_handle *)a)->state->timer_handle_type))
        Py_RETURN_NOTIMPLEMENTED;
    const int64_t x = ((askew_handle *)a)->timer.deadline_ns;
    const int64_t y = ((askew_handle *)b)->timer.deadline_ns;
    switch (op) {
    case Py_LT:
        return PyBool_FromLong(x < y);
    case Py_LE:
        return PyBool_FromLong(x <= y || a == b);
    case Py_GT:
        return PyBool_FromLong(x > y);
    case Py_GE:
        return PyBool_FromLong(x >= y || a == b);
    case Py_EQ:
        return PyBool_FromLong(a == b);
    case Py_NE:
        return PyBool_FromLong(a != b);
    default:
        Py_RETURN_NOTIMPLEMENTED;
    }
}

static PyMethodDef handle_methods[] = {
    {"cancel", (PyCFunction)handle_cancel, METH_NOARGS, "Cancel the call."},
    {"cancelled", (PyCFunction)handle_cancelled, METH_NOARGS,
     "Whether it was cancelled."},
    {"get_context", (PyCFunction)handle_get_context, METH_NOARGS,
     "The context it runs in."},
    {NULL, NULL, 0, NULL},
};

static PyMethodDef timer_methods[] = {
    {"when", (PyCFunction)handle_when, METH_NOARGS,
     "The scheduled time, loop seconds."},
    {NULL, NULL, 0, NULL},
};

/* asyncio.Handle and asyncio.TimerHandle (kept in the module state): what
 * `__class__` reports, so that isinstance(h, asyncio.TimerHandle) holds as on
 * asyncio's own loops (code checks it) while type(h) stays the C type that
 * makes a step cheap. */
static PyObject *handle_get_class(askew_handle *h, void *Py_UNUSED(c))
{
    return Py_NewRef(h->state->asyncio_handle_classes[h->is_timer ? 1 : 0]);
}

static PyGetSetDef handle_getset[] = {
    {"__class__", (getter)handle_get_class, NULL, NULL, NULL},
    {"_callback", (getter)handle_get_callback, NULL, NULL, NULL},
    {"_args", (getter)handle_get_args, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMemberDef handle_members[] = {
    {"_cancelled", T_BOOL, offsetof(askew_handle, cancelled), READONLY, NULL},
    {"__weaklistoffset__", T_PYSSIZET, offsetof(askew_handle, weakreflist), READONLY,
     NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot handle_slots[] = {
    {Py_tp_dealloc, handle_dealloc},
    {Py_tp_traverse, handle_traverse},
    {Py_tp_clear, handle_clear},
    {Py_tp_repr, handle_repr},
    {Py_tp_hash, handle_hash},
    {Py_tp_methods, handle_methods},
    {Py_tp_getset, handle_getset},
    {Py_tp_members, handle_members},
    {Py_tp_doc, "A callback scheduled on an askew loop."},
    {0, NULL},
};

static PyType_Spec handle_spec = {
    .name = "askew._core.Handle",
    .basicsize = sizeof(askew_handle),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_BASETYPE |
             Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = handle_slots,
};

static PyType_Slot timer_slots[] = {
    {Py_tp_methods, timer_methods},
    {Py_tp_richcompare, handle_richcompare},
    {Py_tp_hash, handle_hash},
    {Py_tp_doc, "A callback scheduled for a virtual time on an askew loop."},
    {0, NULL},
};

static PyType_Spec timer_spec = {
    .name = "askew._core.TimerHandle",
    .basicsize = sizeof(askew_handle),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION, /* GC inherited */
    .slots = timer_slots,
};

int askew__handle_types_init(PyObject *module)
{
    struct askew_state *st = PyModule_GetState(module);
    PyObject *events = PyImport_ImportModule("asyncio.events"); // new reference
    if (events == NULL)
        return -1;
    st->asyncio_handle_classes[0] = PyObject_GetAttrString(events, "Handle");
    st->asyncio_handle_classes[1] = PyObject_GetAttrString(events, "TimerHandle");
    Py_DECREF(events);
    if (st->asyncio_handle_classes[0] == NULL || st->asyncio_handle_classes[1] == NULL)
        return -1;
    st->handle_type =
        (PyTypeObject *)PyType_FromModuleAndSpec(module, &handle_spec, NULL);
    if (st->handle_type == NULL)
        return -1;
    st->timer_handle_type = (PyTypeObject *)PyType_FromModuleAndSpec(
        module, &timer_spec, (PyObject *)st->handle_type);
    if (st->timer_handle_type == NULL)
        return -1;
    if (PyModule_AddObjectRef(module, "Handle", (PyObject *)st->handle_type) < 0 ||
        PyModule_AddObjectRef(module, "TimerHandle",
                              (PyObject *)st->timer_handle_type) < 0)
        return -1;
    return 0;
}
