/* SPDX-License-Identifier: Apache-2.0 */
/* Simulated descriptors and the patched os functions (disk_route.c): the
 * run whose descriptors decode, and the error path a call by descriptor
 * takes. Binding files only. */
#ifndef ASKEW_DISK_ROUTE_H
#define ASKEW_DISK_ROUTE_H

#include "core.h"

/* An error of a call by descriptor: an injected EIO is logged first (by
 * askew/_disk/, which owns the world log), then raised as OSError; NULL
 * (with the logger's exception if it raised). */
PyObject *askew__disk_fail(PyObject *nd, int64_t rc, const char *what);
/* Whether a world is running whose descriptors decode and it has not
 * ended: 1, 0, or -1 with an exception. */
int askew__disk_route_live(void);
/* Module init: disk_route_init/_begin/_end, disk_fd_route and the patched
 * os functions (disk_fsync, disk_read, ...). */
int askew__disk_route_setup(PyObject *module);

#endif
