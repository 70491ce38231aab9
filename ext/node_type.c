/* SPDX-License-Identifier: Apache-2.0 */
/* askew._core.NodeBase (see node_type.h): what a node's code is handed,
 * less what askew/_world/node.py's Node adds in Python. It keeps the world,
 * that world's network, the node's id and its token, set once by __init__,
 * so that recv() makes its Receive with no attribute lookup and no Python
 * frame. It owns the Receive type's set-up too (recv.c), its only maker.
 * Never touches the network's state itself: the Receive does, when awaited. */
#include "node_type.h"

#include <stddef.h>
#include <structmember.h> /* after Python.h, which node_type.h brings */

#include "network_type.h"
#include "node.h"
#include "recv.h"

typedef struct {
    PyObject_HEAD PyObject *world;
    PyObject *net;             /* world._wire, an askew._core.Network */
    PyObject *id;              /* the node's id, an int */
    PyObject *token;           /* id << NODE_TOKEN_SHIFT | incarnation, an int */
    struct askew_state *state; /* borrowed: the type holds the module */
} node_base;

/* __init__(world, node_id, incarnation): what World._start makes per
 * incarnation. */
static int node_init(node_base *self, PyObject *args, PyObject *kwds)
{
    PyObject *world;
    long long node;
    unsigned int incarnation;
    static char *kwlist[] = {"world", "node_id", "incarnation", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OLI:Node", kwlist, &world, &node,
                                     &incarnation))
        return -1;
    if (node < 0 || node >= (1LL << (63 - ASKEW_NODE_TOKEN_SHIFT))) {
        PyErr_Format(PyExc_ValueError, "Node: node id %lld out of range", node);
        return -1;
    }
    struct askew_state *st = askew__state_of_type(Py_TYPE(self));
    PyObject *net = PyObject_GetAttrString(world, "_wire"); // new reference
    if (net == NULL)
        return -1;
    if (!Py_IS_TYPE(net, st->network_type)) {
        PyErr_Format(PyExc_TypeError,
                     "Node: world._wire is %R, not an askew._core.Network", net);
        Py_DECREF(net);
        return -1;
    }
    PyObject *id = PyLong_FromLongLong(node); // new reference
    PyObject *token =
        PyLong_FromLongLong(askew__node_token(node, incarnation)); // new reference
    if (id == NULL || token == NULL) {
        Py_XDECREF(id);
        Py_XDECREF(token);
        Py_DECREF(net);
        return -1;
    }
    Py_XSETREF(self->world, Py_NewRef(world));
    Py_XSETREF(self->net, net);
    Py_XSETREF(self->id, id);
    Py_XSETREF(self->token, token);
    self->state = st;
    return 0;
}

/* recv(timeout=None): a Receive of this node (recv.h), which receives when
 * awaited. Parsed by hand: this is the call a node's receive loop makes. */
static PyObject *node_recv(node_base *self, PyObject *const *args, Py_ssize_t nargs,
                           PyObject *kwnames)
{
    PyObject *timeout = Py_None;
    const Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    if (nargs + nkw > 1) {
        PyErr_Format(PyExc_TypeError, "recv() takes at most 1 argument (%zd given)",
                     nargs + nkw);
        return NULL;
    }
    if (nargs == 1) {
        timeout = args[0];
    } else if (nkw == 1) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, 0); // borrowed
        if (key != self->state->str_timeout &&
            PyUnicode_Compare(key, self->state->str_timeout) != 0) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_TypeError,
                             "recv() got an unexpected keyword argument '%S'", key);
            return NULL;
        }
        timeout = args[0];
    }
    if (self->net == NULL) {
        PyErr_SetString(PyExc_RuntimeError,
                        "recv() of a Node that __init__ never set up");
        return NULL;
    }
    PyObject *call[3] = {self->id, self->token, timeout};
    return askew__receive_new(self->state, self->net, askew__network_recv, call,
                              self->world);
}

static PyObject *node_get_id(node_base *self, void *Py_UNUSED(closure))
{
    if (self->id == NULL) {
        PyErr_SetString(PyExc_AttributeError, "id: a Node that __init__ never set up");
        return NULL;
    }
    return Py_NewRef(self->id);
}

static int node_traverse(node_base *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->world);
    Py_VISIT(self->net);
    Py_VISIT(self->id);
    Py_VISIT(self->token);
    return 0;
}

static int node_clear(node_base *self)
{
    Py_CLEAR(self->world);
    Py_CLEAR(self->net);
    Py_CLEAR(self->id);
    Py_CLEAR(self->token);
    return 0;
}

static void node_dealloc(node_base *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    (void)node_clear(self);
    tp->tp_free(self);
    Py_DECREF(tp);
}

static PyMethodDef node_methods[] = {
    {"recv", (PyCFunction)(void (*)(void))node_recv, METH_FASTCALL | METH_KEYWORDS,
     "recv(timeout=None): await it for the next message for this node, or None "
     "after `timeout` seconds. An awaitable, not a coroutine: it receives when "
     "awaited, the message at once if one is waiting, else through the network's "
     "future."},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef node_members[] = {
    {"_askew_world", T_OBJECT_EX, offsetof(node_base, world), READONLY, NULL},
    {"_askew_token", T_OBJECT_EX, offsetof(node_base, token), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyGetSetDef node_getset[] = {
    {"id", (getter)node_get_id, NULL, "This node's id: 0, 1, 2... in spawn order.",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot node_slots[] = {
    /* No Py_tp_new: object's, inherited, gives a subclass's instance its
     * inline attribute values (PyType_GenericNew leaves them out, and every
     * state write, node.leader = ..., then goes through a real dict). */
    {Py_tp_init, node_init},
    {Py_tp_dealloc, node_dealloc},
    {Py_tp_traverse, node_traverse},
    {Py_tp_clear, node_clear},
    {Py_tp_methods, node_methods},
    {Py_tp_members, node_members},
    {Py_tp_getset, node_getset},
    {Py_tp_doc, "The C half of askew's Node: its world, id and token, and recv()."},
    {0, NULL},
};

static PyType_Spec node_spec = {
    .name = "askew._core.NodeBase",
    .basicsize = sizeof(node_base),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_BASETYPE,
    .slots = node_slots,
};

int askew__node_type_init(PyObject *module)
{
    struct askew_state *st = PyModule_GetState(module);
    st->str_timeout = PyUnicode_InternFromString("timeout");
    if (st->str_timeout == NULL || askew__receive_type_init(module, st) < 0)
        return -1;
    st->node_base_type =
        (PyTypeObject *)PyType_FromModuleAndSpec(module, &node_spec, NULL);
    if (st->node_base_type == NULL)
        return -1;
    return PyModule_AddObjectRef(module, "NodeBase", (PyObject *)st->node_base_type);
}
