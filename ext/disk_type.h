/* SPDX-License-Identifier: Apache-2.0 */
/* askew._core.Disk (disk_type.c): the object that holds a node's engine
 * disk and its loop, the OSError its calls raise, the latency each call
 * charges, and the by-handle calls the patched os functions share with the
 * Disk methods. Binding files only. */
#ifndef ASKEW_DISK_TYPE_H
#define ASKEW_DISK_TYPE_H

#include "core.h"

#if PY_VERSION_HEX < 0x030D0000
#define PyObject_GetOptionalAttr _PyObject_LookupAttr
#endif

struct askew_disk;

typedef struct {
    PyObject_HEAD struct askew_disk *disk;
    PyObject *loop; /* strong: the scheduler the engine borrows */
} askew_disk_object;

/* The Disk type, once module init made it (borrowed). */
extern PyTypeObject *askew__disk_type;

/* OSError for -errno rc, with path (bytes) as its filename if not NULL;
 * returns NULL. */
PyObject *askew__disk_raise_errno(int64_t rc, PyObject *path);
/* After each call: the latency the call drew passes on the node's clock.
 * 0, or -1 with RuntimeError past the time budget or the end of time. */
int askew__disk_settle(askew_disk_object *self);

/* The by-handle calls the patched os.read/write/pread/pwrite/lseek reach
 * too (disk_route.c): each takes the Disk method's arguments (handle
 * first), settles, and returns NULL with no exception and *rc < 0 for the
 * engine's error, which its caller raises (logging an EIO first). */
typedef PyObject *(*askew_disk_handle_call)(askew_disk_object *, PyObject *, int64_t *);
PyObject *askew__disk_pread_call(askew_disk_object *self, PyObject *args, int64_t *rc);
PyObject *askew__disk_pwrite_call(askew_disk_object *self, PyObject *args, int64_t *rc);
PyObject *askew__disk_lseek_call(askew_disk_object *self, PyObject *args, int64_t *rc);

/* Module init: the Disk type, STREAM_DISK and the DISK_* constants. */
int askew__disk_setup(PyObject *module);

#endif
