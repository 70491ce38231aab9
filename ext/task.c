/* SPDX-License-Identifier: Apache-2.0 */
/* askew._core.Task and askew._core.Future: asyncio's own C Task and Future
 * with a few fields more. Their creation number in the run, which is also
 * their hash: asyncio iterates sets of tasks and futures (TaskGroup abort,
 * all_tasks, wait); with identity hashes their order would follow memory
 * addresses and differ between processes, and between a seed run alone and
 * the same seed deep in a sweep. The epoch of the run that made them, so
 * that one of an earlier run surfacing later (a finalizer, a callback) is
 * told apart and dropped. And a Task's owner, the node token (id << 32 |
 * incarnation, -1 for the world) its context ran as when it was made, so
 * that a crash takes exactly that incarnation's tasks. The loop passes them
 * to askew__task_make, which sets them before Task.__init__ registers the
 * task anywhere, and to askew__future_make. */
#include "active.h"
#include "task.h"

/* Where our fields start: after _asyncio.Task's (Future's) own, 8-byte
 * aligned. Static, not module state: they are facts of the _asyncio layout
 * this process was built against, the same for every module object, and the
 * hashes read them on every set operation. */
static Py_ssize_t seq_offset;
static Py_ssize_t future_offset;

/* The fields, in this order, at either offset (a Future has no owner). */
struct fields {
    uint64_t seq;
    uint64_t epoch; /* 0: made outside a loop's create_task / create_future */
    int64_t owner;
};

static inline struct fields *task_fields(PyObject *self)
{
    return (struct fields *)((char *)self + seq_offset);
}

static inline struct fields *future_fields(PyObject *self)
{
    return (struct fields *)((char *)self + future_offset);
}

static inline void set_fields(PyObject *self, uint64_t seq, uint64_t epoch,
                              int64_t owner)
{
    struct fields *f = task_fields(self);
    f->seq = seq;
    f->epoch = epoch;
    f->owner = owner;
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
        set_fields(self, 0, 0, -1);
    return self;
}

PyObject *askew__task_make(const struct askew_state *st, PyObject *args, PyObject *kwds,
                           uint64_t seq, uint64_t epoch, int64_t owner)
{
    /* What calling the type does, with the fields set between tp_new and
     * tp_init: __init__ registers the task in sets, which hash it. */
    PyTypeObject *type = st->task_type;
    PyObject *self = type->tp_base->tp_new(type, args, kwds); // new reference
    if (self == NULL)
        return NULL;
    set_fields(self, seq, epoch, owner);
    if (type->tp_init(self, args, kwds) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    return self;
}

PyObject *askew__future_make(const struct askew_state *st, PyObject *kwds, uint64_t seq,
                             uint64_t epoch)
{
    /* Future.__init__ puts the future in no set: the fields may follow it. */
    PyObject *self = PyObject_Call((PyObject *)st->sim_future_type, st->empty_tuple,
                                   kwds); // new reference
    if (self != NULL) {
        struct fields *f = future_fields(self);
        f->seq = seq;
        f->epoch = epoch;
        f->owner = -1;
    }
    return self;
}

uint64_t askew__made_epoch(const struct askew_state *st, PyObject *obj)
{
    if (Py_IS_TYPE(obj, st->sim_future_type))
        return future_fields(obj)->epoch;
    if (Py_IS_TYPE(obj, st->task_type))
        return task_fields(obj)->epoch;
    return 0;
}

static Py_hash_t seq_hash(PyObject *self, const struct fields *f)
{
    if (f->seq == 0)
        return PyBaseObject_Type.tp_hash(self); /* made outside a loop */
    const Py_hash_t h = (Py_hash_t)(f->seq & (uint64_t)PY_SSIZE_T_MAX);
    return h == -1 ? -2 : h;
}

static Py_hash_t task_hash(PyObject *self)
{
    return seq_hash(self, task_fields(self));
}

static Py_hash_t future_hash(PyObject *self)
{
    return seq_hash(self, future_fields(self));
}

static PyObject *task_get_seq(PyObject *self, void *Py_UNUSED(closure))
{
    return PyLong_FromUnsignedLongLong(task_fields(self)->seq);
}

static PyObject *task_get_epoch(PyObject *self, void *Py_UNUSED(closure))
{
    return PyLong_FromUnsignedLongLong(task_fields(self)->epoch);
}

static PyObject *task_get_owner(PyObject *self, void *Py_UNUSED(closure))
{
    return PyLong_FromLongLong(task_fields(self)->owner);
}

static PyObject *future_get_seq(PyObject *self, void *Py_UNUSED(closure))
{
    return PyLong_FromUnsignedLongLong(future_fields(self)->seq);
}

static PyObject *future_get_epoch(PyObject *self, void *Py_UNUSED(closure))
{
    return PyLong_FromUnsignedLongLong(future_fields(self)->epoch);
}

#define SEQ_DOC                                                                        \
    "Creation number in its run (0: made outside a loop; hashes by identity)."
#define EPOCH_DOC "The epoch of the run that made it (0: unknown)."

static PyGetSetDef task_getset[] = {
    {"_askew_seq", task_get_seq, NULL, SEQ_DOC, NULL},
    {"_askew_epoch", task_get_epoch, NULL, EPOCH_DOC, NULL},
    {"_askew_owner", task_get_owner, NULL,
     "The node token it was made under (id << 32 | incarnation), -1 for the world.",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyGetSetDef future_getset[] = {
    {"_askew_seq", future_get_seq, NULL, SEQ_DOC, NULL},
    {"_askew_epoch", future_get_epoch, NULL, EPOCH_DOC, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/* A Future made by calling askew._core.Future directly: no number, no epoch. */
static PyObject *future_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyTypeObject *base = type->tp_base;
    while (base->tp_new == future_new)
        base = base->tp_base;
    PyObject *self = base->tp_new(type, args, kwds); // new reference
    if (self != NULL) {
        struct fields *f = future_fields(self);
        f->seq = f->epoch = 0;
        f->owner = -1;
    }
    return self;
}

/* askew._core.Future: the type create_future returns. */
static int future_type_init(PyObject *module, struct askew_state *st)
{
    const Py_ssize_t base_size = ((PyTypeObject *)st->future_type)->tp_basicsize;
    future_offset = (base_size + 7) & ~(Py_ssize_t)7;
    PyType_Slot slots[] = {
        {Py_tp_new, future_new},
        {Py_tp_hash, future_hash},
        {Py_tp_getset, future_getset},
        {Py_tp_doc, "asyncio.Future, hashed by its creation number in the run."},
        {0, NULL},
    };
    PyType_Spec spec = {
        .name = "askew._core.Future",
        .basicsize = (int)(future_offset + (Py_ssize_t)sizeof(struct fields)),
        .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
        .slots = slots,
    };
    st->sim_future_type =
        (PyTypeObject *)PyType_FromModuleAndSpec(module, &spec, st->future_type);
    if (st->sim_future_type == NULL)
        return -1;
    return PyModule_AddObjectRef(module, "Future", (PyObject *)st->sim_future_type);
}

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
    if (task_base == NULL || st->future_type == NULL || future_methods_init(st) < 0 ||
        future_type_init(module, st) < 0)
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
        .basicsize = (int)(seq_offset + (Py_ssize_t)sizeof(struct fields)),
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
