/* SPDX-License-Identifier: Apache-2.0 */
/* Module init for askew._core: the types (Loop, Network, Message, Handle,
 * TimerHandle, Task) and the constants of the C-Python contract,
 * the exception classes handed over by askew/_errors.py, and the one helper
 * that turns engine codes into exceptions. */
#include <errno.h>
#include <string.h>

#include "handle.h"
#include "log.h"
#include "loop.h"
#include "network.h"
#include "node.h"
#include "task.h"

PyObject *askew__NondeterminismError;

int askew__patch_setup(PyObject *module);

PyObject *askew__raise_engine(int rc, const char *what)
{
    if (rc == -ENOMEM)
        return PyErr_NoMemory();
    PyErr_Format(rc == -EINVAL ? PyExc_ValueError : PyExc_RuntimeError, "%s failed: %s",
                 what, strerror(-rc));
    return NULL;
}

static PyObject *configure_errors(PyObject *Py_UNUSED(module), PyObject *nondeterminism)
{
    Py_XSETREF(askew__NondeterminismError, Py_NewRef(nondeterminism));
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
        askew__patch_setup(module) < 0 || askew__preload_setup(module) < 0)
        return -1;
    if (PyModule_AddIntConstant(module, "STREAM_USER", ASKEW_STREAM_USER) < 0 ||
        PyModule_AddIntConstant(module, "STREAM_PYRANDOM", ASKEW_STREAM_PYRANDOM) < 0 ||
        PyModule_AddIntConstant(module, "WALL_EPOCH", (long)ASKEW_WALL_EPOCH_S) < 0)
        return -1;
    return 0;
}

static PyModuleDef_Slot module_slots[] = {
    {Py_mod_exec, module_exec},
    {0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "askew._core",
    .m_doc = "askew's C core: the simulated event loop, its clock and scheduler.",
    .m_size = 0,
    .m_methods = module_methods,
    .m_slots = module_slots,
};

PyMODINIT_FUNC PyInit__core(void)
{
    return PyModuleDef_Init(&module_def);
}
