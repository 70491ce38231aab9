/* SPDX-License-Identifier: Apache-2.0 */
/* The Network type (network_type.c): module init's entry point. Binding
 * files only. */
#ifndef ASKEW_NETWORK_TYPE_H
#define ASKEW_NETWORK_TYPE_H

#include "core.h"

/* recv(node, token, timeout) of Network `net`: the waiting Message, or a
 * future that resolves to one (or None on timeout); NULL with an
 * exception. What a Receive calls when awaited (an askew_receive_fn). */
PyObject *askew__network_recv(PyObject *net, PyObject *const *args, Py_ssize_t nargs);

/* Module init: the Network and Message types, NET_OUTCOME_NAMES. */
int askew__network_setup(PyObject *module);

#endif
