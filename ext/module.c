/* SPDX-License-Identifier: Apache-2.0 */
/* Module init for askew._core: the module state and its lifetime, the
 * types (Loop, Network, Message, Handle, TimerHandle, Task, ...), the
 * constants of the C-Python contract, and the exception classes handed
 * over by askew/_errors.py. The top of the binding: it calls each unit's
 * set-up and nothing else of theirs, and no unit calls it (what units share
 * of the module, its state, is declared in core.h). */
#include "baton_type.h"
#include "disk_file.h"
#include "disk_route.h"
#include "disk_type.h"
#include "handle.h"
#include "log.h"
#include "loop.h"
#include "loop_type.h"
#include "network_type.h"
#include "node.h"
#include "node_type.h"
#include "patch.h"
#include "preload.h"
#include "stream.h"
#include "stream_type.h"
#include "task.h"

static PyObject *configure_errors(PyObject *module, PyObject *nondeterminism)
{
    struct askew_state *st = PyModule_GetState(module);
    Py_XSETREF(st->nondeterminism_error, Py_NewRef(nondeterminism));
    Py_RETURN_NONE;
}

static PyObject *seed_iteration(PyObject *Py_UNUSED(module), PyObject *args)
{
    unsigned long long base, i;
    if (!PyArg_ParseTuple(args, "KK", &base, &i))
        return NULL;
    return PyLong_FromUnsignedLongLong(askew_seed_iteration(base, i));
}

static PyObject *seed_stream(PyObject *Py_UNUSED(module), PyObject *args)
{
    unsigned long long seed, purpose;
    if (!PyArg_ParseTuple(args, "KK", &seed, &purpose))
        return NULL;
    return PyLong_FromUnsignedLongLong(askew_seed_stream(seed, purpose));
}

static PyMethodDef module_methods[] = {
    {"_configure_errors", configure_errors, METH_O, NULL},
    {"seed_iteration", seed_iteration, METH_VARARGS,
     "seed_iteration(base, i): the seed of iteration i of a sweep based at base."},
    {"seed_stream", seed_stream, METH_VARARGS,
     "seed_stream(seed, purpose): the seed of one of a run's streams."},
    {NULL, NULL, 0, NULL},
};

static int module_exec(PyObject *module)
{
    if (askew__handle_types_init(module) < 0 || askew__task_types_init(module) < 0 ||
        askew__loop_type_init(module) < 0 || askew__log_setup(module) < 0 ||
        askew__node_setup(module) < 0 || askew__network_setup(module) < 0 ||
        askew__node_type_init(module) < 0 || askew__patch_setup(module) < 0 ||
        askew__baton_setup(module) < 0 || askew__preload_setup(module) < 0 ||
        askew__disk_setup(module) < 0 || askew__disk_file_setup(module) < 0 ||
        askew__disk_route_setup(module) < 0 || askew__segment_type_init(module) < 0 ||
        askew__stream_types_init(module) < 0)
        return -1;
    if (PyModule_AddIntConstant(module, "STREAM_USER", ASKEW_STREAM_USER) < 0 ||
        PyModule_AddIntConstant(module, "STREAM_PYRANDOM", ASKEW_STREAM_PYRANDOM) < 0 ||
        PyModule_AddIntConstant(module, "STREAM_BUGGIFY", ASKEW_STREAM_BUGGIFY) < 0 ||
        PyModule_AddIntConstant(module, "STREAM_SWARM", ASKEW_STREAM_SWARM) < 0 ||
        PyModule_AddIntConstant(module, "STREAM_NUMPY", ASKEW_STREAM_NUMPY) < 0 ||
        PyModule_AddIntConstant(module, "WALL_EPOCH", (long)ASKEW_WALL_EPOCH_S) < 0 ||
        PyModule_AddIntConstant(module, "WALL_EPOCH_MAX_NS",
                                (long)ASKEW_WALL_EPOCH_MAX_NS) < 0)
        return -1;
    return 0;
}

static int module_traverse(PyObject *module, visitproc visit, void *arg)
{
    struct askew_state *st = PyModule_GetState(module);
    if (st == NULL)
        return 0;
    Py_VISIT(st->handle_type);
    Py_VISIT(st->timer_handle_type);
    Py_VISIT(st->task_type);
    Py_VISIT(st->network_type);
    Py_VISIT(st->message_type);
    Py_VISIT(st->recv_expire_fn);
    Py_VISIT(st->receive_type);
    Py_VISIT(st->node_base_type);
    Py_VISIT(st->future_type);
    Py_VISIT(st->sim_future_type);
    Py_VISIT(st->future_done);
    Py_VISIT(st->future_cancelled);
    Py_VISIT(st->future_set_result);
    Py_VISIT(st->set_result_unless_cancelled);
    Py_VISIT(st->asyncio_handle_classes[0]);
    Py_VISIT(st->asyncio_handle_classes[1]);
    Py_VISIT(st->nondeterminism_error);
    return 0;
}

static int module_clear(PyObject *module)
{
    struct askew_state *st = PyModule_GetState(module);
    if (st == NULL)
        return 0;
    Py_CLEAR(st->handle_type);
    Py_CLEAR(st->timer_handle_type);
    Py_CLEAR(st->task_type);
    Py_CLEAR(st->network_type);
    Py_CLEAR(st->message_type);
    Py_CLEAR(st->recv_expire_fn);
    Py_CLEAR(st->receive_type);
    Py_CLEAR(st->node_base_type);
    Py_CLEAR(st->future_type);
    Py_CLEAR(st->sim_future_type);
    Py_CLEAR(st->future_done);
    Py_CLEAR(st->future_cancelled);
    Py_CLEAR(st->future_set_result);
    Py_CLEAR(st->set_result_unless_cancelled);
    Py_CLEAR(st->asyncio_handle_classes[0]);
    Py_CLEAR(st->asyncio_handle_classes[1]);
    Py_CLEAR(st->nondeterminism_error);
    Py_CLEAR(st->str_context);
    Py_CLEAR(st->str_context_seen);
    Py_CLEAR(st->str_name);
    Py_CLEAR(st->str_loop);
    Py_CLEAR(st->str_ended);
    Py_CLEAR(st->str_check_live);
    Py_CLEAR(st->str_timeout);
    Py_CLEAR(st->empty_tuple);
    /* The dead handles the free list keeps (handle.c's dealloc put them
     * there, type reference already dropped): only their memory is left. */
    while (st->freelist_len > 0)
        PyObject_GC_Del(st->freelist[--st->freelist_len]);
    return 0;
}

static void module_free(void *module)
{
    (void)module_clear((PyObject *)module);
}

/* One module object per interpreter; reinit (a second import after
 * sys.modules lost it) builds a fresh state. Subinterpreters are refused
 * where Python lets a module say so: the active loop and the preload are
 * process-wide (docs/design.md §1). */
static PyModuleDef_Slot module_slots[] = {
    {Py_mod_exec, module_exec},
#if PY_VERSION_HEX >= 0x030C0000
    {Py_mod_multiple_interpreters, Py_MOD_MULTIPLE_INTERPRETERS_NOT_SUPPORTED},
#endif
    {0, NULL},
};

struct PyModuleDef askew__module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "askew._core",
    .m_doc = "askew's C core: the simulated event loop, its clock and scheduler.",
    .m_size = sizeof(struct askew_state),
    .m_methods = module_methods,
    .m_slots = module_slots,
    .m_traverse = module_traverse,
    .m_clear = module_clear,
    .m_free = module_free,
};

PyMODINIT_FUNC PyInit__core(void)
{
    return PyModuleDef_Init(&askew__module_def);
}
