/* SPDX-License-Identifier: Apache-2.0 */
/* What the files of libaskew-preload.so share and nothing outside it sees:
 * the thread-local activation pointer, the lazily resolved real_* table,
 * the raw-syscall fallback, the refusal recorder and the hook calls, all
 * defined in preload.c. What one hook family offers the others (the
 * simulated clocks, the disk, ...) is declared in that family's own header
 * (hook_time.h, hook_disk.h, ...). Everything here is hidden; only the
 * interposers (ASKEW_EXPORT) and askew_preload_get_api leave the library.
 * Nothing here may malloc, lock or print on the pass-through path. */
#ifndef ASKEW_PRELOAD_INTERNAL_H
#define ASKEW_PRELOAD_INTERNAL_H

#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "askew_preload.h"

#define ASKEW_EXPORT      __attribute__((visibility("default")))
#define ASKEW_HIDDEN      __attribute__((visibility("hidden")))
#define ASKEW_LIKELY(x)   __builtin_expect(!!(x), 1)
#define ASKEW_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define ASKEW_STR_(x)     #x
#define ASKEW_STR(x)      ASKEW_STR_(x)

/* glibc marks some pointer parameters nonnull that the kernel accepts as
 * NULL (gettimeofday's tv, say); hiding the value from the optimizer keeps
 * our NULL checks from being deleted on that promise. */
#define ASKEW_LAUNDER(p)                                                               \
    __extension__({                                                                    \
        __typeof__(p) launder_ = (p);                                                  \
        __asm__("" : "+r"(launder_));                                                  \
        launder_;                                                                      \
    })

/* The on/off switch: non-NULL only on the thread running a simulation, and
 * only outside a hook call (the dispatcher clears it while a hook runs so a
 * hook that reaches an interposed function gets the real one). Static TLS:
 * one %fs-relative load, no __tls_get_addr, async-signal-safe. */
extern __thread const struct askew_preload_hooks *askew__t_hooks
    __attribute__((tls_model("initial-exec"), visibility("hidden")));

/* Every function in preload/fns.def, in its order. Only rows with a slot
 * (EAGER, LATE) are ever resolved through askew__fn_real; the others have
 * an index so that every table made from fns.def has one shape. */
enum askew_fn {
#define ASKEW_FN(name, slot, export, check) FN_##name,
#include "fns.def"
#undef ASKEW_FN
    FN_COUNT
};

/* fns.def's columns as values, for the tables preload.c makes from it. */
#define ASKEW_SLOT_NONE    0
#define ASKEW_SLOT_EAGER   1
#define ASKEW_SLOT_LATE    2
#define ASKEW_SLOT_CALLER  3
#define ASKEW_CHECK_NOSELF 0
#define ASKEW_CHECK_SELF   1

/* The resolved real functions, filled by the constructor or on first use.
 * A slot only ever goes from NULL to libc's address, and the code it points
 * at was mapped before the store, so a relaxed load is enough. */
extern _Atomic(void *) askew__fn_real[FN_COUNT] ASKEW_HIDDEN;

/* Resolve one slot: NULL while this thread is already inside dlsym
 * (re-entrant resolution) or when libc has no such symbol. Callers then
 * fall back to a raw syscall or fail with the call's own error. */
void *askew__resolve(enum askew_fn fn) ASKEW_HIDDEN;

/* The pass-through fast path: one load and one well-predicted branch. */
static inline void *askew__real(enum askew_fn fn)
{
    void *p = atomic_load_explicit(&askew__fn_real[fn], memory_order_relaxed);
    if (ASKEW_LIKELY(p != NULL))
        return p;
    return askew__resolve(fn);
}

#define REAL(name) ((__typeof__(&name))askew__real(FN_##name))

/* A system call that never goes through an interposer (ours included). */
long askew__raw_syscall(long nr, long a0, long a1, long a2, long a3, long a4,
                        long a5) ASKEW_HIDDEN;

/* Record a refusal in the ring and tell the extension. `ret` is the
 * interposer's return address (the C caller). Preserves errno. */
void askew__refuse(const struct askew_preload_hooks *h, enum askew_violation_kind kind,
                   const char *call, long arg0, long arg1, void *ret) ASKEW_HIDDEN;

/* The one way an interposer refuses a call that reports errors in errno:
 * record it and fail as libc would, -1 with errno = err. `ret` is the
 * interposer's return address. A call that reports its error another way
 * (an error code, NULL, h_errno) records with ASKEW_RECORD and returns that;
 * timed waits that merely time out record without failing. */
static inline int askew__refuse_errno(const struct askew_preload_hooks *h,
                                      enum askew_violation_kind kind, const char *call,
                                      long arg0, long arg1, void *ret, int err)
{
    askew__refuse(h, kind, call, arg0, arg1, ret);
    errno = err;
    return -1;
}

/* The same, in an interposer's own body, naming its caller. */
#define ASKEW_REFUSE(h, kind, call, a0, a1, err)                                       \
    askew__refuse_errno((h), (kind), (call), (a0), (a1), __builtin_return_address(0),  \
                        (err))
#define ASKEW_RECORD(h, kind, call, a0, a1)                                            \
    askew__refuse((h), (kind), (call), (a0), (a1), __builtin_return_address(0))

/* Call a hook with the switch off, so anything the hook reaches is real. */
int askew__hook_now(const struct askew_preload_hooks *h, int realtime,
                    struct timespec *out) ASKEW_HIDDEN;
int askew__hook_random(const struct askew_preload_hooks *h, void *buf,
                       size_t len) ASKEW_HIDDEN;
/* 1 when the extension says a wake-up or wait is a handoff to refuse; 0
 * without a handoff hook (a table from before ABI 1.2). */
int askew__hook_handoff(const struct askew_preload_hooks *h, int waiting) ASKEW_HIDDEN;
/* -ENOSYS when the extension gave no sleep hook (a table from ABI 1.0). */
int askew__hook_sleep(const struct askew_preload_hooks *h, int64_t ns) ASKEW_HIDDEN;
/* ASKEW_DISK_PASS without a disk hook (a table from before ABI 1.3). */
int64_t askew__hook_disk(const struct askew_preload_hooks *h,
                         struct askew_disk_call *call) ASKEW_HIDDEN;

/* ABI 1.5's thread hook, with the switch off: its answer (0 or a negative
 * errno, askew_preload.h); -ENOSYS without the hook. */
int askew__hook_thread(const struct askew_preload_hooks *h,
                       struct askew_thread_call *call) ASKEW_HIDDEN;

/* ABI 1.4's identity hook: 0 with *out filled, or a negative errno
 * (-ENOSYS without the hook), and then the call sees the host's. */
int askew__hook_identity(const struct askew_preload_hooks *h,
                         struct askew_identity *out) ASKEW_HIDDEN;
/* 1 when `ret` (an interposer's return address) lies in the interpreter's
 * own code (hooks->interp): the host's bookkeeping, not the code under test. */
int askew__interp_caller(const struct askew_preload_hooks *h,
                         const void *ret) ASKEW_HIDDEN;
/* Whether the extension's table reaches `end` bytes (ASKEW_HOOKS_END): the
 * behaviour of its ABI minor goes with what it knows. */
int askew__hooks_have(const struct askew_preload_hooks *h, size_t end) ASKEW_HIDDEN;
#define ASKEW_HOOKS_END(field)                                                         \
    (offsetof(struct askew_preload_hooks, field) +                                     \
     sizeof(((struct askew_preload_hooks *)0)->field))
/* The call of the run's first refusal still in the ring (else the newest),
 * NULL when none was recorded since enter. Async-signal-safe. */
const char *askew__first_refusal(void) ASKEW_HIDDEN;
/* The simulation thread's stack, [lo, hi), while a run is entered. */
extern uintptr_t askew__sim_stack_lo ASKEW_HIDDEN, askew__sim_stack_hi ASKEW_HIDDEN;
/* A new run begins (hooks->new_run): each family forgets the last run's
 * state (preload.c calls the families' resets). */
void askew__run_begins(const struct askew_preload_hooks *h) ASKEW_HIDDEN;

/* Debug output under ASKEW_DEBUG only, to fd 2 with an "askew-preload: "
 * prefix; a no-op otherwise. No stdio, no malloc. */
void askew__debug(const char *what, const char *call) ASKEW_HIDDEN;

#endif
