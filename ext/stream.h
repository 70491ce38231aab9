/* SPDX-License-Identifier: Apache-2.0 */
/* The TCP data path in C (stream.c), and the objects it works on: the
 * segment askew/_net/ puts on the wire (askew._core.Segment, made
 * here), the hot state of one endpoint (askew._core.Stream) and what a
 * Stack's streams share (askew._core.StreamStack), whose types live in
 * stream_type.c. A StreamStack makes its network ask the path first about
 * every segment that comes due (askew_network.take_segment). Binding files
 * only. */
#ifndef ASKEW_STREAM_H
#define ASKEW_STREAM_H

#include "network.h"

/* The names the data path calls or reads, interned once per StreamStack. */
enum {
    S_TOKEN,
    S_PROTOCOL,
    S_STATE,
    S_WRITE,
    S_DELIVER_RX,
    S_DELIVER_EOF,
    S_FATAL,
    S_PUMP,
    S_DROPPED,
    S_DATA_RECEIVED,
    S_JOIN,
    S_TCP_SEGMENTS,
    S_TCP_BYTES,
    S_FATAL_TEXT,
    S_COUNT
};

typedef struct askew_tcp_stack {
    PyObject_HEAD askew_network *net; /* the loop's network */
    PyObject *stack;                  /* the Python Stack: _dropped(segment) */
    PyObject *stats;                  /* stack.stats */
    PyObject *segment_type;           /* askew/_net/tcp.py's Segment */
    PyObject *buffered;               /* asyncio.BufferedProtocol */
    PyObject *deliver;                /* deliver(stream): what call_soon runs */
    PyObject *empty;                  /* b"" */
    PyObject *str[S_COUNT];
    long long window;      /* bytes a sender may have unconsumed */
    long long segment_max; /* the largest segment the size draw may choose */
    int data_kind;         /* DATA's kind number */
} askew_tcp_stack;

typedef struct askew_tcp {
    PyObject_HEAD askew_tcp_stack *stack;
    PyObject *ep;   /* the Endpoint (a cycle through ep._s, for the GC) */
    PyObject *slot; /* its node's slot: slot.token is the live incarnation */
    PyObject *ctx;  /* the context its callbacks run in, or None */
    PyObject *peer; /* the peer Endpoint, or NULL */
    struct askew_tcp *peer_s;
    PyObject *rx;  /* the Endpoint's list of arrived chunks (the same list) */
    PyObject *buf; /* its write buffer, a bytearray */
    PyObject *ooo; /* its dict of out-of-order segments */
    long long token;
    long long remote_node;
    long long snd_next;
    long long inflight;
    long long rcv_next;
    long long conn_lost;
    long long rx_ns; /* when a segment last came from the peer (keep-alive) */
    char dead;
    char closing;
    char reading;
    char rx_scheduled;
    char rx_eof;
    char eof_wanted;
} askew_tcp;

typedef struct askew_segment {
    PyObject_HEAD PyObject *src;
    PyObject *dst;
    PyObject *data;
    PyObject *src_addr; /* a datagram's addresses (askew/_net/udp.py) */
    PyObject *to;
    askew_tcp *dst_s; /* dst's state: data the C path sent, else NULL */
    long long seq;
    /* The sender's receive position as it sent this (rcv_next, plus one
     * after the peer's FIN): TCP's ACK field, which a reset answering the
     * segment carries as its sequence number (askew/_net/stack.py). */
    long long ack;
    int kind;
    int tries;
    char acked;
} askew_segment;

/* Whether tp, or a base of it, has this dealloc: the instance check of the
 * stream types, which Python subclasses pass. */
static inline int askew__has_dealloc(PyTypeObject *tp, destructor dealloc)
{
    for (; tp != NULL; tp = tp->tp_base)
        if (tp->tp_dealloc == dealloc)
            return 1;
    return 0;
}

/* Whether `type` is Segment or a subclass of it. */
int askew__segment_type_check(PyObject *type);

/* Schedule the reader if it reads and is not scheduled yet. 0, or -1 with
 * an exception. */
int askew__stream_wake(askew_tcp *s);
/* The next bytes in order: counted, queued for the reader, who is woken. */
int askew__stream_accept(askew_tcp *s, PyObject *data);
/* The reader took n bytes: the sender's window opens by as much. */
int askew__stream_consumed(askew_tcp *s, long long n);
/* Send bytes the window takes whole, as segments of drawn sizes. 0, or -1
 * with an exception. */
int askew__stream_put(askew_tcp *s, PyObject *data);
/* A plain Protocol reads all that has arrived: the byte count; -2 when
 * data_received raised and the connection was aborted; -1 with an
 * exception. */
Py_ssize_t askew__stream_take(askew_tcp *s, PyObject *protocol);
/* What call_soon runs when s is readable: a plain Protocol served here,
 * anything else Endpoint._deliver_rx's. New reference, or NULL. */
PyObject *askew__stream_deliver(askew_tcp *s);
/* The network's take_segment: 1 when the segment was in-order data for a
 * live open socket and is taken, 0 when the stack's Python handler
 * decides, -1 with an exception. */
int askew__stream_take_segment(PyObject *segment, uint32_t outcome);

/* Module init: the Segment type. */
int askew__segment_type_init(PyObject *module);

#endif
