/* SPDX-License-Identifier: Apache-2.0 */
/* askew._core.Baton: the engine's baton bound to one loop. Every wait
 * releases the GIL, so the actor handed the baton can take it; whoever
 * holds the baton is the simulation thread (active.h) while it holds it,
 * so the patched clocks and the preload serve it as they serve the loop.
 * Each pick is folded into the loop's trace. Never decides who runs
 * itself: askew/_loop/threads.py says which actors are runnable and asks
 * for the draw. */
#include "baton_type.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>

#include "active.h"
#include "baton.h"
#include "errors.h"
#include "loop.h"

typedef struct {
    PyObject_HEAD struct askew_baton baton;
    int ready;      /* askew_baton_init succeeded */
    PyObject *loop; /* strong: whose trace the picks go to */
} baton_object;

static PyObject *baton_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *loop;
    static char *kwlist[] = {"loop", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O:Baton", kwlist, &loop))
        return NULL;
    PyObject *loop_type = PyObject_GetAttrString(PyType_GetModule(type), "Loop");
    if (loop_type == NULL)
        return NULL;
    const int is_loop = PyObject_TypeCheck(loop, (PyTypeObject *)loop_type);
    Py_DECREF(loop_type);
    if (!is_loop)
        return PyErr_Format(PyExc_TypeError, "Baton(loop): %R is not an askew loop",
                            loop);
    baton_object *self = (baton_object *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    if (askew_baton_init(&self->baton) < 0) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    self->ready = 1;
    self->loop = Py_NewRef(loop);
    return (PyObject *)self;
}

static int baton_traverse(baton_object *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->loop);
    return 0;
}

static void baton_dealloc(baton_object *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    if (self->ready)
        askew_baton_free(&self->baton);
    Py_CLEAR(self->loop);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

static int check(int rc, const char *what)
{
    if (rc >= 0)
        return 0;
    if (rc == -EPERM)
        PyErr_Format(PyExc_RuntimeError, "Baton.%s: the caller does not hold the baton",
                     what);
    else if (rc == -EBUSY)
        PyErr_Format(PyExc_RuntimeError,
                     "Baton.%s: a thread of the last run is not done yet", what);
    else if (rc == -EINVAL)
        PyErr_Format(PyExc_ValueError, "Baton.%s: no such actor, or it is done", what);
    else
        askew__raise_engine(rc, what);
    return -1;
}

/* The caller now holds the baton: it is the simulation thread while it does. */
static void took_baton(baton_object *self)
{
    struct askew_loop_state *loop = (struct askew_loop_state *)self->loop;
    if (askew__active == loop)
        askew__active_thread = PyThread_get_thread_ident();
}

static PyObject *b_reset(baton_object *self, PyObject *seed)
{
    const unsigned long long s = PyLong_AsUnsignedLongLong(seed);
    if (s == (unsigned long long)-1 && PyErr_Occurred())
        return NULL;
    if (check(askew_baton_reset(&self->baton, s), "reset") < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *b_add(baton_object *self, PyObject *Py_UNUSED(a))
{
    uint32_t id;
    if (check(askew_baton_add(&self->baton, &id), "add") < 0)
        return NULL;
    return PyLong_FromUnsignedLong(id);
}

static PyObject *b_set(baton_object *self, PyObject *args)
{
    unsigned int id, state;
    if (!PyArg_ParseTuple(args, "II:set", &id, &state))
        return NULL;
    if (check(askew_baton_set(&self->baton, id, (enum askew_baton_state)state), "set") <
        0)
        return NULL;
    Py_RETURN_NONE;
}

/* pick(me) -> the actor to hand the baton to, or None when none can run;
 * me is the holder at its switch point, -1 for none (baton.h). */
static PyObject *b_pick(baton_object *self, PyObject *me_obj)
{
    const long me = PyLong_AsLong(me_obj);
    if (me == -1 && PyErr_Occurred())
        return NULL;
    uint32_t next = 0, runnable = 0;
    const uint32_t holder = me < 0 ? ASKEW_BATON_NOBODY : (uint32_t)me;
    const int rc = askew_baton_pick(&self->baton, holder, &next, &runnable);
    if (rc == -EDEADLK)
        Py_RETURN_NONE;
    if (check(rc, "pick") < 0)
        return NULL;
    /* Only a choice is an event: a pick with one actor runnable draws
     * nothing, so a run whose loop takes locks but starts no thread hashes
     * as it did before threads. */
    struct askew_loop_state *loop = (struct askew_loop_state *)self->loop;
    if (runnable > 1)
        askew_trace_record(&loop->sched.trace, loop->sched.now_ns, ASKEW_EV_BATON,
                           (int32_t)loop->node_current, next, runnable);
    return PyLong_FromUnsignedLong(next);
}

static PyObject *b_give(baton_object *self, PyObject *args)
{
    unsigned int me, next;
    if (!PyArg_ParseTuple(args, "II:give", &me, &next))
        return NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = askew_baton_give(&self->baton, me, next);
    Py_END_ALLOW_THREADS if (check(rc, "give") < 0) return NULL;
    took_baton(self);
    Py_RETURN_NONE;
}

static PyObject *b_pass(baton_object *self, PyObject *args)
{
    unsigned int me, next;
    if (!PyArg_ParseTuple(args, "II:pass_on", &me, &next))
        return NULL;
    if (check(askew_baton_pass(&self->baton, me, next), "pass_on") < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *b_wait(baton_object *self, PyObject *id)
{
    const unsigned long me = PyLong_AsUnsignedLong(id);
    if (me == (unsigned long)-1 && PyErr_Occurred())
        return NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = askew_baton_wait(&self->baton, (uint32_t)me);
    Py_END_ALLOW_THREADS if (check(rc, "wait") < 0) return NULL;
    took_baton(self);
    Py_RETURN_NONE;
}

/* A thread of the run is made with libc's pthread_create, found past the
 * preload (RTLD_NEXT from this object): the preload refuses a thread that
 * would run outside the seed's order, and this one runs only with the
 * baton. Process-wide by nature: one libc per process. */
typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *),
                         void *);
static create_fn real_create;

static void *actor_main(void *arg)
{
    PyGILState_STATE gil = PyGILState_Ensure();
    PyObject *fn = arg; // the reference b_start gave this thread
    PyObject *res = PyObject_CallNoArgs(fn);
    if (res == NULL)
        PyErr_WriteUnraisable(fn);
    Py_XDECREF(res);
    Py_DECREF(fn);
    PyGILState_Release(gil);
    return NULL;
}

/* start(fn): a new OS thread that calls fn() with the GIL (detached). */
static PyObject *b_start(baton_object *Py_UNUSED(self), PyObject *fn)
{
    if (!PyCallable_Check(fn))
        return PyErr_Format(PyExc_TypeError, "Baton.start(fn): %R is not callable", fn);
    if (real_create == NULL) {
        real_create = (create_fn)dlsym(RTLD_NEXT, "pthread_create");
        if (real_create == NULL)
            real_create = pthread_create;
    }
    pthread_attr_t attr;
    if (pthread_attr_init(&attr) != 0)
        return PyErr_NoMemory();
    (void)pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t thread;
    const int rc = real_create(&thread, &attr, actor_main, Py_NewRef(fn));
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        Py_DECREF(fn);
        errno = rc;
        return PyErr_SetFromErrno(PyExc_RuntimeError);
    }
    Py_RETURN_NONE;
}

static PyObject *b_get_handoffs(baton_object *self, void *Py_UNUSED(c))
{
    return PyLong_FromUnsignedLongLong(self->baton.handoffs);
}

static PyObject *b_get_holder(baton_object *self, void *Py_UNUSED(c))
{
    return PyLong_FromUnsignedLong(self->baton.holder);
}

static PyMethodDef baton_methods[] = {
    {"reset", (PyCFunction)b_reset, METH_O,
     "reset(seed): a new run, only the loop (actor 0) holding the baton"},
    {"add", (PyCFunction)b_add, METH_NOARGS, "add() -> a new actor's id, blocked"},
    {"set", (PyCFunction)b_set, METH_VARARGS, "set(id, state): a BATON_* state"},
    {"pick", (PyCFunction)b_pick, METH_O,
     "pick(me) -> the next holder, drawn among the runnable actors (me, the holder "
     "at its switch point, mostly keeps it; -1 favours none); None if none"},
    {"give", (PyCFunction)b_give, METH_VARARGS,
     "give(me, next): hand the baton on and wait until it comes back"},
    {"pass_on", (PyCFunction)b_pass, METH_VARARGS,
     "pass_on(me, next): hand the baton on and return (an exiting thread)"},
    {"wait", (PyCFunction)b_wait, METH_O, "wait(me): until me holds the baton"},
    {"start", (PyCFunction)b_start, METH_O,
     "start(fn): a new OS thread (past the preload) that calls fn()"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef baton_getset[] = {
    {"handoffs", (getter)b_get_handoffs, NULL, "hand-offs this run", NULL},
    {"holder", (getter)b_get_holder, NULL, "the actor holding the baton", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot baton_slots[] = {
    {Py_tp_new, baton_new},
    {Py_tp_getset, baton_getset},
    {Py_tp_dealloc, baton_dealloc},
    {Py_tp_traverse, baton_traverse},
    {Py_tp_methods, baton_methods},
    {Py_tp_doc, "Baton(loop): which of a run's threads runs (ext/engine/baton.h)."},
    {0, NULL},
};

static PyType_Spec baton_spec = {
    .name = "askew._core.Baton",
    .basicsize = sizeof(baton_object),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .slots = baton_slots,
};

int askew__baton_setup(PyObject *module)
{
    PyObject *type = PyType_FromModuleAndSpec(module, &baton_spec, NULL);
    if (type == NULL)
        return -1;
    const int rc = PyModule_AddObjectRef(module, "Baton", type);
    Py_DECREF(type);
    if (rc < 0 ||
        PyModule_AddIntConstant(module, "BATON_RUNNABLE", ASKEW_BATON_RUNNABLE) < 0 ||
        PyModule_AddIntConstant(module, "BATON_BLOCKED", ASKEW_BATON_BLOCKED) < 0 ||
        PyModule_AddIntConstant(module, "BATON_DONE", ASKEW_BATON_DONE) < 0)
        return -1;
    return 0;
}
