/* SPDX-License-Identifier: Apache-2.0 */
/* The TCP data path in C (ext/stream.c): askew._core.Segment, the segment
 * askew/_sockets.py puts on the wire, and askew._core.Stream, the hot state
 * of one endpoint (sequence numbers, window, the flags the data path
 * tests). The network binding calls askew__stream_arrive for every segment
 * that comes due. Binding files only. */
#ifndef ASKEW_STREAM_H
#define ASKEW_STREAM_H

#include "core.h"

/* Module init: Segment, Stream and StreamStack into the module. */
int askew__stream_setup(PyObject *module);
/* Whether `type` is askew._core.Segment or a subclass of it. */
int askew__segment_type_check(PyObject *type);
/* A segment of the stack's segment type came due with `outcome`: 1 when it
 * was in-order data for a live open socket and is taken (appended, its
 * reader scheduled), 0 when the stack's Python handler must decide, -1
 * with an exception. */
int askew__stream_arrive(PyObject *segment, uint32_t outcome);

#endif
