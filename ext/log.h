/* SPDX-License-Identifier: Apache-2.0 */
/* The world log: one ring of the run's recent events per loop (sends and
 * deliveries from the network binding, the world's own events from
 * askew/_world/), whose details (payloads, texts) are kept as objects and
 * formatted only when someone reads them. The trace hash, not this ring,
 * is what determinism is checked by. Binding files only. */
#ifndef ASKEW_LOG_H
#define ASKEW_LOG_H

#include "core.h"

/* Entries the ring keeps (exported as _core.LOG_KEPT). */
#define ASKEW_LOG_KEPT 10000u

/* Kinds written in C; askew/_world/ numbers its own from
 * ASKEW_LOG_KIND_WORLD_BASE up (exported as _core.LOG_KIND_*). */
enum askew_log_kind {
    ASKEW_LOG_KIND_SEND = 1,
    ASKEW_LOG_KIND_DELIVERY = 2,
    ASKEW_LOG_KIND_WORLD_BASE = 16
};

struct askew_log_entry {
    int64_t t_ns;
    uint32_t kind;
    int32_t node;
    int32_t peer;
    uint32_t outcome;
    PyObject *detail;
};

struct askew_log {
    struct askew_log_entry *ring; /* made on first use */
    size_t cap;
    size_t want;    /* entries the next ring keeps; 0: ASKEW_LOG_KEPT */
    uint64_t count; /* entries ever recorded since the last clear */
    PyObject *hook; /* called after each entry is recorded, or NULL (Loop._log_hook) */
};

/* Record an event; detail is borrowed (the ring takes its own reference).
 * Without memory the entry is lost, never the run. */
void askew__log_record(struct askew_log *log, int64_t t_ns, uint32_t kind, int32_t node,
                       int32_t peer, uint32_t outcome, PyObject *detail);
/* Forget every entry (a new run); may run a detail's __del__. */
void askew__log_clear(struct askew_log *log);
void askew__log_free(struct askew_log *log);
int askew__log_traverse(const struct askew_log *log, visitproc visit, void *arg);
/* Loop._log_emit(kind, node, detail, digest): a world event, logged and
 * mixed into the trace of `sched`. */
PyObject *askew__log_emit(struct askew_log *log, struct askew_sched *sched,
                          PyObject *args);
/* Loop._log_recent(n): up to n newest entries, oldest first, as tuples
 * (t_ns, kind, node, peer, outcome, detail). */
PyObject *askew__log_recent(const struct askew_log *log, PyObject *n);
/* Loop._log_keep(n): keep the newest n entries from the next run on (a
 * timeline's run keeps all of it); forgets the ring. */
PyObject *askew__log_keep(struct askew_log *log, PyObject *n);
/* Loop._log_hook(fn or None): fn() is called after each entry is recorded,
 * with that entry the newest (a timeline's await sites,
 * askew/_report/timeline.py); it must not log. */
PyObject *askew__log_hook(struct askew_log *log, PyObject *fn);
/* Module init: LOG_KEPT and the LOG_KIND_* constants. */
int askew__log_setup(PyObject *module);

#endif
