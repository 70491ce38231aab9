/* SPDX-License-Identifier: Apache-2.0 */
/* Node identity (see node.h): the token a context carries, the live check
 * of an incarnation against the engine's network, and the check of a node
 * id whose error text users see. Never changes the network; called by the
 * loop (handles, the run loop) and by the network binding (sends, recv). */
#include "node.h"

void askew__node_gate_clear(struct askew_node_gate *gate)
{
    Py_CLEAR(gate->var);
    for (int i = 0; i < ASKEW_NODE_SEEN; i++)
        Py_CLEAR(gate->seen[i].ref);
    gate->seen_next = 0;
}

int askew__node_gate_set(struct askew_node_gate *gate, PyObject *var)
{
    if (var != Py_None && !PyContextVar_CheckExact(var)) {
        PyErr_SetString(PyExc_TypeError, "expected a contextvars.ContextVar or None");
        return -1;
    }
    askew__node_gate_clear(gate);
    gate->var = var == Py_None ? NULL : Py_NewRef(var);
    return 0;
}

/* The token a context other than the running one runs as (-1: none), from
 * `seen` or its mapping. 0, or -1 with an exception. */
static int token_of_context(struct askew_node_gate *gate, PyObject *context,
                            long long *token)
{
    for (int i = 0; i < ASKEW_NODE_SEEN; i++) {
        /* The referent's pointer, read from the weakref (None once it
         * died): `context` is alive, so equal means the same object. */
        const PyObject *ref = gate->seen[i].ref;
        if (ref != NULL && ((const PyWeakReference *)ref)->wr_object == context) {
            *token = gate->seen[i].token;
            return 0;
        }
    }
    PyObject *var = gate->var, *value = NULL;
    const int has = PySequence_Contains(context, var);
    if (has < 0)
        return -1;
    if (has && (value = PyObject_GetItem(context, var)) == NULL)
        return -1;
    *token = -1;
    if (value != NULL) {
        *token = askew__token_as_long(value);
        Py_DECREF(value);
        if (*token == -1 && PyErr_Occurred())
            return -1;
    }
    PyObject *ref = PyWeakref_NewRef(context, NULL); // new reference
    if (ref == NULL) {
        PyErr_Clear(); /* not one to remember (no weakrefs): asked again next time */
        return 0;
    }
    const unsigned slot = gate->seen_next++ % ASKEW_NODE_SEEN;
    Py_XSETREF(gate->seen[slot].ref, ref);
    gate->seen[slot].token = *token;
    return 0;
}

int askew__node_context(struct askew_node_gate *gate, PyObject *context, int64_t *node,
                        uint32_t *incarnation)
{
    *node = -1;
    *incarnation = 0;
    PyObject *var = gate->var;
    if (var == NULL)
        return 0;
    long long token = -1;
    /* The running context answers from the variable's cache; any other
     * from `seen` or its mapping (a future resolved for another task). */
    if (context == NULL || context == PyThreadState_Get()->context) {
        PyObject *value = NULL;
        if (PyContextVar_Get(var, NULL, &value) < 0)
            return -1;
        if (value == NULL)
            return 0; /* the world's own code */
        token = askew__token_as_long(value);
        Py_DECREF(value);
        if (token == -1 && PyErr_Occurred())
            return -1;
    } else if (token_of_context(gate, context, &token) < 0) {
        return -1;
    }
    if (token < 0)
        return 0; /* the world's own code */
    *node = askew__node_of(token);
    *incarnation = (uint32_t)token;
    return 0;
}

/* A crashed incarnation runs nothing and sends nothing. */
int askew__node_token_alive(const struct askew_net *net, long long token,
                            uint32_t *node)
{
    *node = (uint32_t)askew__node_of(token);
    int alive = 0;
    uint32_t incarnation = 0;
    if (askew_net_node_state(net, *node, &alive, &incarnation) < 0)
        return 0;
    return alive && incarnation == (uint32_t)token;
}

int askew__node_alive(const struct askew_net *net, int64_t node, uint32_t incarnation)
{
    uint32_t id;
    return node < 0 ||
           askew__node_token_alive(net, askew__node_token(node, incarnation), &id);
}

/* The error users see for an id that names no node (id is borrowed). */
static int unknown_node(const struct askew_net *net, PyObject *id, const char *what)
{
    const char *sep = what == NULL ? "" : ": ";
    if (what == NULL)
        what = "";
    if (net->nodes_len == 0)
        PyErr_Format(PyExc_ValueError,
                     "%s%sunknown node id %S (this world's nodes: none yet)", what, sep,
                     id);
    else
        PyErr_Format(PyExc_ValueError,
                     "%s%sunknown node id %S (this world's nodes: 0..%lld)", what, sep,
                     id, (long long)net->nodes_len - 1);
    return -1;
}

int askew__node_check(const struct askew_net *net, long long node, const char *what)
{
    if (node >= 0 && (unsigned long long)node < net->nodes_len)
        return 0;
    PyObject *id = PyLong_FromLongLong(node); // new reference
    if (id == NULL)
        return -1;
    unknown_node(net, id, what);
    Py_DECREF(id);
    return -1;
}

int askew__node_check_object(const struct askew_net *net, PyObject *id,
                             const char *what)
{
    const long long node = PyLong_AsLongLong(id);
    if (node == -1 && PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError))
            return -1;
        PyErr_Clear(); /* too large to name a node */
        return unknown_node(net, id, what);
    }
    return askew__node_check(net, node, what);
}

int askew__node_setup(PyObject *module)
{
    return PyModule_AddIntConstant(module, "NODE_TOKEN_SHIFT", ASKEW_NODE_TOKEN_SHIFT);
}
