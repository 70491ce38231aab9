/* SPDX-License-Identifier: Apache-2.0 */
/* Who each node is (ABI 1.4's identity hook): its hostname, as the world
 * names it, and a pid, a parent pid and a thread identity seeded from the
 * run's seed and the node's incarnation. preload.c puts
 * askew__preload_identity in the hooks table; askew/_loop/identity.py asks
 * _core._identity() for Python's os.getpid, socket.gethostname, ... and the
 * world names each node with _core._name_node. Binding files only. */
#ifndef ASKEW_PRELOAD_IDENTITY_H
#define ASKEW_PRELOAD_IDENTITY_H

#include "loop.h"

/* The identity hook: the running node's (the test body's when none runs).
 * ctx is the loop. Never calls Python, never takes the GIL. Returns 0. */
int askew__preload_identity(void *ctx, struct askew_identity *out);
/* Module init: _identity, _name_node. */
int askew__preload_identity_setup(PyObject *module);

#endif
