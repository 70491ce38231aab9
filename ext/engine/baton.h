/* SPDX-License-Identifier: Apache-2.0 */
/* The baton: which of a run's actors (the loop, actor 0, and the threads
 * started inside the run) may run now. One actor holds it at a time; it
 * moves only when the holder hands it on, to an actor drawn from the run's
 * threads stream among the runnable ones, so the order of threads is the
 * seed's whatever the OS and the GIL do. Pure C (pthreads, no Python.h):
 * the binding (ext/baton_type.c) and, later, the preload use it. Functions
 * return 0 or a negative errno. */
#ifndef ASKEW_BATON_H
#define ASKEW_BATON_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An actor's state. Never renumber: the trace records them. */
enum askew_baton_state {
    ASKEW_BATON_RUNNABLE = 0, /* may be given the baton */
    ASKEW_BATON_BLOCKED = 1,  /* waits for another actor (a lock, a join, a timer) */
    ASKEW_BATON_DONE = 2      /* exited, or never to run again */
};

/* The loop: always actor 0, the baton's holder when a run starts. */
#define ASKEW_BATON_HOME 0u
/* No actor: a pick that favours none (the loop offering its threads a turn). */
#define ASKEW_BATON_NOBODY UINT32_MAX
/* The chance that a holder still runnable at a switch point hands over. */
#define ASKEW_BATON_SWITCH_PPM 250000u

/* Each actor waits on a condition variable of its own, so a hand-off wakes
 * exactly one thread; actors are allocated one by one so that growing the
 * table never moves a condition variable a thread waits on. */
struct askew_baton_actor {
    pthread_cond_t wake;
    enum askew_baton_state state;
};

struct askew_baton {
    pthread_mutex_t mu;
    struct askew_rng rng; /* the run's threads stream (ASKEW_STREAM_THREADS) */
    struct askew_baton_actor **actors;
    size_t len;
    size_t cap;
    uint32_t holder;
    uint64_t handoffs; /* hand-offs to another actor this run */
};

int askew_baton_init(struct askew_baton *b);
void askew_baton_free(struct askew_baton *b);
/* A new run seeded `seed`: only the home actor, runnable and holding the
 * baton. -EBUSY (and nothing changed) while a thread of the last run is
 * not done: its waits would outlive its actor. */
int askew_baton_reset(struct askew_baton *b, uint64_t seed);
/* A new actor, blocked until made runnable; its id is the count of actors
 * before it, so ids are creation numbers. */
int askew_baton_add(struct askew_baton *b, uint32_t *id);
/* -EINVAL for an unknown id; a done actor stays done (-EINVAL). */
int askew_baton_set(struct askew_baton *b, uint32_t id, enum askew_baton_state state);
int askew_baton_state_of(struct askew_baton *b, uint32_t id,
                         enum askew_baton_state *out);
/* Draw the next holder among the runnable actors, from the threads
 * stream; with exactly one runnable actor nothing is drawn. When `self` (the
 * holder at a switch point) is among them, it keeps the baton unless a draw
 * with chance ASKEW_BATON_SWITCH_PPM says switch, and then the next holder
 * is uniform among the others, in id order; otherwise (`self` blocked, or
 * ASKEW_BATON_NOBODY) uniform among them all. Every runnable actor can be
 * drawn either way, so every interleaving stays reachable; keeping the
 * baton more often than not spares hand-offs a real scheduler would not
 * make. *runnable is how many could run. -EDEADLK when none can. */
int askew_baton_pick(struct askew_baton *b, uint32_t self, uint32_t *next,
                     uint32_t *runnable);
/* The holder `self` hands the baton to `next` and waits until it is handed
 * back. -EPERM when `self` does not hold it. Giving it to oneself returns
 * at once. */
int askew_baton_give(struct askew_baton *b, uint32_t self, uint32_t next);
/* The holder hands the baton to `next` and returns without waiting (an
 * exiting thread). */
int askew_baton_pass(struct askew_baton *b, uint32_t self, uint32_t next);
/* Wait until `self` holds the baton (a thread's first wait). */
int askew_baton_wait(struct askew_baton *b, uint32_t self);

#ifdef __cplusplus
}
#endif

#endif
