/* SPDX-License-Identifier: Apache-2.0 */
/* Node identity: which node, and which incarnation of it, a context runs as
 * (a token in the context variable the world sets), whether that
 * incarnation is the live one, and the one check of a node id. The loop
 * reads it on every handle it makes, the network on every send. Binding
 * files only; it holds no state of its own beyond the variable. */
#ifndef ASKEW_NODE_H
#define ASKEW_NODE_H

#include "core.h"
#include "net.h"

#include <limits.h> /* after Python.h, which core.h brings */

/* A node's token is id << ASKEW_NODE_TOKEN_SHIFT | incarnation; exported as
 * _core.NODE_TOKEN_SHIFT for askew/_world/, which makes them. */
#define ASKEW_NODE_TOKEN_SHIFT 32

static inline long long askew__node_token(int64_t node, uint32_t incarnation)
{
    return (long long)((uint64_t)node << ASKEW_NODE_TOKEN_SHIFT | incarnation);
}

/* A token from a Python int (-1 with an exception, as PyLong_AsLongLong).
 * Where long is 64 bits, PyLong_AsLong: a token spans three of CPython's
 * 30-bit digits, which PyLong_AsLongLong converts through
 * _PyLong_AsByteArray (~160 instructions) and PyLong_AsLong in a short
 * loop; the loop reads one per handle it makes (issue 23). */
static inline long long askew__token_as_long(PyObject *token)
{
#if LONG_MAX == LLONG_MAX
    return PyLong_AsLong(token);
#else
    return PyLong_AsLongLong(token);
#endif
}

static inline int64_t askew__node_of(long long token)
{
    return (int64_t)(token >> ASKEW_NODE_TOKEN_SHIFT);
}

#define ASKEW_NODE_SEEN 8

/* The context variable of tokens (a contextvars.ContextVar), or NULL when
 * no world runs: callbacks then carry no node and nothing is gated.
 *
 * `seen` remembers the last contexts other than the running one that a
 * lookup answered (asyncio's Task passes its own context on every step and
 * wake-up, mostly from outside it: a delivery, a timer), each by weak
 * reference with the token it runs as, so that the next lookup of one is a
 * pointer comparison rather than two searches of its mapping (issue 23).
 * Weak, so no context lives a moment longer for being seen (nor anything
 * it holds); right, because askew sets its variable only in a context no
 * handle has run in yet (a fresh copy: World._start, SimLoop._detach, the
 * threads' _context_of), so a context's token never changes once seen.
 * Replaced in turn, so what is remembered follows the run, never
 * addresses; cleared with the variable. */
struct askew_node_gate {
    PyObject *var;
    struct {
        PyObject *ref; /* a weakref to the context, or NULL */
        long long token;
    } seen[ASKEW_NODE_SEEN];
    unsigned seen_next;
};

/* Set the variable (None: no world). 0, or -1 with TypeError. */
int askew__node_gate_set(struct askew_node_gate *gate, PyObject *var);
/* Drop the variable and what `seen` remembers. */
void askew__node_gate_clear(struct askew_node_gate *gate);
/* The node (-1 for the world) and incarnation `context` runs as; NULL is
 * the running context. 0, or -1 with an exception. */
int askew__node_context(struct askew_node_gate *gate, PyObject *context, int64_t *node,
                        uint32_t *incarnation);
/* Whether that incarnation is the live one (the world, -1, always is). */
int askew__node_alive(const struct askew_net *net, int64_t node, uint32_t incarnation);
/* Whether a token's incarnation is live; its node id goes to *node. */
int askew__node_token_alive(const struct askew_net *net, long long token,
                            uint32_t *node);
/* 0 if `node` names a node of `net`, else -1 with ValueError "unknown node
 * id" (prefixed by "what: " unless what is NULL). The one check of an id. */
int askew__node_check(const struct askew_net *net, long long node, const char *what);
/* As askew__node_check for a Python int, however large; TypeError if `id`
 * is not an int. */
int askew__node_check_object(const struct askew_net *net, PyObject *id,
                             const char *what);
/* Module init: NODE_TOKEN_SHIFT. */
int askew__node_setup(PyObject *module);

#endif
