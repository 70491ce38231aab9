/* SPDX-License-Identifier: Apache-2.0 */
/* The TCP data path in C (ext/stream.c): askew._core.Segment, the segment
 * askew/_sockets.py puts on the wire, and askew._core.Stream, the hot state
 * of one endpoint (sequence numbers, window, the flags the data path
 * tests). A StreamStack makes its network ask it first about every segment
 * that comes due (askew_network.take_segment). Binding files only. */
#ifndef ASKEW_STREAM_H
#define ASKEW_STREAM_H

#include "core.h"

/* Module init: Segment, Stream and StreamStack into the module. */
int askew__stream_setup(PyObject *module);

#endif
