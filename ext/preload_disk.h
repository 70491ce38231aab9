/* SPDX-License-Identifier: Apache-2.0 */
/* The extension's side of the preload's disk hook (ABI 1.3): which node's
 * disk is mounted where, for the simulated fds the preload hands to C code.
 * preload.c puts askew__preload_disk_call in the hooks table; the Python
 * layer registers each node's disk with _core._preload_disk_mount. Binding
 * files only. */
#ifndef ASKEW_PRELOAD_DISK_H
#define ASKEW_PRELOAD_DISK_H

#include "loop.h"

/* The disk hook: ctx is the running loop. Never calls Python, never takes
 * the GIL, never calls an interposed function (the preload has the switch
 * off while a hook runs). */
int64_t askew__preload_disk_call(void *ctx, struct askew_disk_call *call);
/* A run starts: the mounts of another loop's world are dropped. */
void askew__preload_disk_enter(struct askew_loop_state *loop);
/* Module init: _preload_disk_mount, _preload_disk_unmount, _preload_disk_routed. */
int askew__preload_disk_setup(PyObject *module);

#endif
