/* SPDX-License-Identifier: Apache-2.0 */
/* The control ABI between libaskew-preload.so and askew._core: the one
 * header the two share, and nothing at link time. The extension finds the
 * preload with dlsym(RTLD_DEFAULT, "askew_preload_get_api") and hands it a
 * hooks table on the simulation thread; the preload calls the hooks for
 * virtual time and entropy and records refusals. Plain C, no Python. */
#ifndef ASKEW_PRELOAD_H
#define ASKEW_PRELOAD_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ASKEW_PRELOAD_ABI_MAJOR 1u
#define ASKEW_PRELOAD_ABI_MINOR 2u
#define ASKEW_PRELOAD_GET_API   "askew_preload_get_api"

/* Virtual time at the Unix epoch offset below: 2020-01-01T00:00:00Z. The
 * wall clock inside a run is this plus virtual time (plus the node's skew). */
#define ASKEW_WALL_EPOCH_S 1577836800LL

/* The clocks `now` answers. CPU time is the running node's: the CPU time
 * the scheduler charged to the steps it ran. */
#define ASKEW_CLOCK_MONOTONIC 0
#define ASKEW_CLOCK_REALTIME  1
#define ASKEW_CLOCK_CPUTIME   2

/* What the extension provides; every hook runs on the simulation thread,
 * possibly without the GIL, and must not call Python or any interposed
 * function. Each returns 0 or a negative errno. The table only grows at its
 * end, with a minor ABI bump: `size` says which hooks a caller knows, and
 * the preload treats every hook past it as NULL. */
struct askew_preload_hooks {
    uint32_t size; /* sizeof(struct askew_preload_hooks) */
    void *ctx;
    /* realtime is an ASKEW_CLOCK_* kind: the running node's wall clock, its
     * monotonic clock, or CPU time. */
    int (*now)(void *ctx, int realtime, struct timespec *out);
    int (*random)(void *ctx, void *buf, size_t len);
    /* Called once per recorded refusal, after it is recorded; may schedule
     * a pending call so a spinning caller still sees the error. */
    void (*on_violation)(void *ctx);
    /* Since ABI 1.1. A blocking sleep on the simulation thread: let `ns`
     * (> 0) nanoseconds of the running node's clock pass, as the sleep would
     * on a real loop. A negative errno when the simulation cannot let that
     * much time pass (-EOVERFLOW: past the end of virtual time; -ETIME: past
     * the run's time budget); the preload then refuses and records the
     * sleep, which is what it does with every sleep when this is NULL. */
    int (*sleep)(void *ctx, int64_t ns);
    /* Since ABI 1.2. The simulation thread releases a semaphore (sem_post,
     * which may wake another thread) or is about to wait for another thread
     * (a sem_wait that would block): 1 when that hands work to another
     * thread and must be refused, 0 when it may go on unrecorded. Called on
     * every sem_post inside a run (after the post: the semaphore is never
     * held while the hook runs), so it must be cheap. `waiting` is 1 for
     * the sem_wait; then it may take the GIL. When NULL, no handoff is ever
     * recorded. */
    int (*handoff)(void *ctx, int waiting);
};

enum askew_violation_kind {
    ASKEW_VIOLATION_THREAD = 1,    /* pthread_create */
    ASKEW_VIOLATION_PROCESS = 2,   /* fork, vfork, posix_spawn, exec* */
    ASKEW_VIOLATION_SOCKET = 3,    /* socket, connect, bind on real families */
    ASKEW_VIOLATION_DNS = 4,       /* getaddrinfo of a real name */
    ASKEW_VIOLATION_SLEEP = 5,     /* timed waits, poll; sleeps the hook cannot take */
    ASKEW_VIOLATION_DEVRANDOM = 6, /* opening /dev/urandom or /dev/random */
    ASKEW_VIOLATION_HANDOFF =
        7, /* work handed to another thread (sem_post, sem_wait) */
    /* A clock or entropy read from an object carrying its own OpenSSL (its
     * generator cannot replay); the call itself is answered as usual. */
    ASKEW_VIOLATION_OWN_RNG = 8
};

#define ASKEW_VIOLATION_FRAMES 8

struct askew_violation {
    uint32_t kind;
    const char *call;                         /* a static string: "pthread_create" */
    uintptr_t frames[ASKEW_VIOLATION_FRAMES]; /* return addresses, caller first */
    uint32_t nframes;
    long arg0;
    long arg1;
};

struct askew_preload_api {
    uint32_t size; /* sizeof(struct askew_preload_api) */
    uint32_t abi_minor;
    /* Activate on the calling thread; -EBUSY if it is active already. */
    int (*enter)(const struct askew_preload_hooks *hooks);
    void (*leave)(void);
    /* Refusals recorded since enter; the newest ASKEW_VIOLATION_RING kept. */
    uint64_t (*violations)(void);
    int (*violation_get)(uint64_t index, struct askew_violation *out);
    /* 0 when the interposers come first in lookup order; else -1 and a
     * message naming what shadows them. */
    int (*self_test)(char *msg, size_t len);
};

#define ASKEW_VIOLATION_RING 16u

/* NULL when abi_major differs. The only non-interposer the library exports. */
const struct askew_preload_api *askew_preload_get_api(uint32_t abi_major);
typedef const struct askew_preload_api *(*askew_preload_get_api_fn)(uint32_t);

#ifdef __cplusplus
}
#endif
#endif
