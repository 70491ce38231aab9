/* SPDX-License-Identifier: Apache-2.0 */
/* askew._core.Receive: what Node.recv() returns, an awaitable that
 * receives when it is awaited (as the coroutine it replaces did, so a recv
 * handed to ensure_future still receives in its task's first step): the
 * message at once if one is waiting, else the wait on the future the
 * network hands out, with no Python frame of askew's in between. Made by
 * NodeBase.recv (node_type.c), which hands it the network's receive
 * function (network_type.h). Binding files only. */
#ifndef ASKEW_RECV_H
#define ASKEW_RECV_H

#include "core.h"

/* What a Receive calls when awaited: the network's recv(node, token,
 * timeout), a Message or a future; NULL with an exception. */
typedef PyObject *(*askew_receive_fn)(PyObject *net, PyObject *const *args,
                                      Py_ssize_t nargs);

/* Module init: the Receive type into the module state. */
int askew__receive_type_init(PyObject *module, struct askew_state *st);
/* A Receive of `net` for args (node, token, timeout), which first checks
 * `world` is live (world._ended, world._check_live()). New reference, or
 * NULL with an exception. */
PyObject *askew__receive_new(const struct askew_state *st, PyObject *net,
                             askew_receive_fn fn, PyObject *const *args,
                             PyObject *world);

#endif
