/* SPDX-License-Identifier: Apache-2.0 */
/* askew._core.Task: asyncio's own C Task with two fields more. Its creation
 * number in the run, which is also its hash: asyncio iterates sets of tasks
 * (TaskGroup abort, all_tasks, wait); with identity hashes their order would
 * follow memory addresses and differ between processes. And its owner, the
 * node token (id << 32 | incarnation, -1 for the world) its context ran as
 * when it was made, so that a crash takes exactly that incarnation's tasks.
 * The loop passes both to askew__task_make, which sets them before
 * Task.__init__ registers the task anywhere. */
#include "active.h"
#include "task.h"

/* Where the two fields start: after _asyncio.Task's own, 8-byte aligned.
 * Static, not module state: it is a fact of the _asyncio.Task layout this
 * process was built against, the same for every module object, and
 * task_hash reads it on every set operation. */
static Py_ssize_t seq_offset;

static inline void set_fields(PyObject *self, uint64_t seq, int64_t owner)
{
    *(uint64_t *)((char *)self + seq_offset) = seq;
    *(int64_t *)((char *)self + seq_offset + sizeof(uint64_t)) = owner;
}

/* A Task made by Python code directly (`askew._core.Task(coro, loop=...)`,
 * a user's task factory): no creation number, so it hashes by identity, and
 * the world owns it. */
static PyObject *task_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    /* Our type and any subclass of it sit on _asyncio.Task: the walk ends. */
    PyTypeObject *base = type->tp_base;
    while (base->tp_new == task_new)
        base = base->tp_base;
    PyObject *self = base->tp_new(type, args, kwds); // new reference
    if (self != NULL)
        set_fields(self, 0, -1);
    return self;
}

PyObject *askew__task_make(const struct askew_state *st, PyObject *args, PyObject *kwds,
                           uint64_t seq, int64_t owner)
{
    /* What calling the type does, with the fields set between tp_new and
     * tp_init: __init__ registers the task in sets, which hash it. */
    PyTypeObject *type = st->task_type;
    PyObject *self = type->tp_base->tp_new(type, args, kwds); // new reference
    if (self == NULL)
        return NULL;
    set_fields(self, seq, owner);
    if (type->tp_init(self, args, kwds) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    return self;
}

static Py_hash_t task_hash(PyObject *self)
{
    const uint64_t seq = *(uint64_t *)((char *)self + seq_offset);
    if (seq == 0)
        return PyBaseObject_Type.tp_hash(self); /* made outside a loop's create_task */
    const Py_hash_t h = (Py_hash_t)(seq & (uint64_t)PY_SSIZE_T_MAX);
    return h == -1 ? -2 : h;
}

static PyObject *task_get_seq(PyObject *self, void *Py_UNUSED(closure))
{
    return PyLong_FromUnsignedLongLong(*(uint64_t *)((char *)self + seq_offset));
}

static PyObject *task_get_owner(PyObject *self, void *Py_UNUSED(closure))
{
    return PyLong_FromLongLong(
        *(int64_t *)((char *)self + seq_offset + sizeof(uint64_t)));
}

static PyGetSetDef task_getset[] = {
    {"_askew_seq", task_get_seq, NULL, "Creation number in its run.", NULL},
    {"_askew_owner", task_get_owner, NULL,
     "The node token it was made under (id << 32 | incarnation), -1 for the world.",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static int call_truth(PyObject *method, PyObject *fut)
{
    PyObject *res = PyObject_Vectorcall(method, &fut, 1, NULL); // new reference
    if (res == NULL)
        return -1;
    const int truth = PyObject_IsTrue(res);
    Py_DECREF(res);
    return truth;
}

static int call_set_result(PyObject *method, PyObject *fut, PyObject *value)
{
    PyObject *args[2] = {fut, value};
    PyObject *res = PyObject_Vectorcall(method, args, 2, NULL); // new reference
    if (res == NULL)
        return -1;
    Py_DECREF(res);
    return 0;
}

/* Outside a run there is no state at hand: the method by name (the same
 * method, found by a lookup). */
int askew__future_done(PyObject *fut)
{
    const struct askew_state *st = askew__state_active();
    if (st != NULL)
        return call_truth(st->future_done, fut);
    PyObject *res = PyObject_CallMethod(fut, "done", NULL); // new reference
    if (res == NULL)
        return -1;
    const int truth = PyObject_IsTrue(res);
    Py_DECREF(res);
    return truth;
}

int askew__future_set_result(PyObject *fut, PyObject *value)
{
    const struct askew_state *st = askew__state_active();
    if (st != NULL)
        return call_set_result(st->future_set_result, fut, value);
    PyObject *res = PyObject_CallMethod(fut, "set_result", "O", value); // new reference
    if (res == NULL)
        return -1;
    Py_DECREF(res);
    return 0;
}

int askew__future_set_result_unless_cancelled(const struct askew_state *st,
                                              PyObject *fut, PyObject *value)
{
    const int cancelled = call_truth(st->future_cancelled, fut);
    if (cancelled != 0)
        return cancelled < 0 ? -1 : 0;
    return call_set_result(st->future_set_result, fut, value);
}

static int future_methods_init(struct askew_state *st)
{
    PyObject *futures = PyImport_ImportModule("asyncio.futures"); // new reference
    if (futures == NULL)
        return -1;
    st->set_result_unless_cancelled =
        PyObject_GetAttrString(futures, "_set_result_unless_cancelled");
    Py_DECREF(futures);
    st->future_done = PyObject_GetAttrString(st->future_type, "done");
    st->future_cancelled = PyObject_GetAttrString(st->future_type, "cancelled");
    st->future_set_result = PyObject_GetAttrString(st->future_type, "set_result");
    return st->set_result_unless_cancelled && st->future_done && st->future_cancelled &&
                   st->future_set_result
               ? 0
               : -1;
}

int askew__task_types_init(PyObject *module)
{
    struct askew_state *st = PyModule_GetState(module);
    PyObject *asyncio_c = PyImport_ImportModule("_asyncio"); // new reference
    if (asyncio_c == NULL)
        return -1;
    PyObject *task_base = PyObject_GetAttrString(asyncio_c, "Task"); // new reference
    st->future_type = PyObject_GetAttrString(asyncio_c, "Future");   // new reference
    Py_DECREF(asyncio_c);
    if (task_base == NULL || st->future_type == NULL || future_methods_init(st) < 0)
        goto fail;
    const Py_ssize_t base_size = ((PyTypeObject *)task_base)->tp_basicsize;
    /* Keep the field 8-byte aligned whatever the base's size. */
    seq_offset = (base_size + 7) & ~(Py_ssize_t)7;
    PyType_Slot slots[] = {
        {Py_tp_new, task_new},
        {Py_tp_hash, task_hash},
        {Py_tp_getset, task_getset},
        {Py_tp_doc, "asyncio.Task, hashed by its creation number in the run."},
        {0, NULL},
    };
    PyType_Spec spec = {
        .name = "askew._core.Task",
        .basicsize =
            (int)(seq_offset + (Py_ssize_t)(sizeof(uint64_t) + sizeof(int64_t))),
        .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
        .slots = slots,
    };
    st->task_type = (PyTypeObject *)PyType_FromModuleAndSpec(module, &spec, task_base);
    Py_DECREF(task_base);
    if (st->task_type == NULL)
        return -1;
    if (PyModule_AddObjectRef(module, "Task", (PyObject *)st->task_type) < 0)
        return -1;
    return 0;
fail:
    Py_XDECREF(task_base);
    return -1;
}
