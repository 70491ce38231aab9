/* SPDX-License-Identifier: Apache-2.0 */
/* The core of libaskew-preload.so: the constructor, lock-free lazy
 * resolution of the real libc functions, the raw-syscall fallback, the
 * control API that askew._core finds with dlsym, and the fixed ring of
 * recorded refusals. It never mallocs, locks or prints on a path an
 * interposer can reach (ASKEW_DEBUG output aside), and it knows nothing of
 * Python: policy lives in the extension's hooks. */
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include "hook_death.h"
#include "hook_cthread.h"
#include "hook_fds.h"
#include "hook_rand.h"
#include "hook_random.h"
#include "internal.h"

__thread const struct askew_preload_hooks *askew__t_hooks;

/* t_owner marks the simulation thread even while a hook runs (when
 * askew__t_hooks is cleared). Tiny: a dlopen'ed copy has only the small
 * static-TLS surplus to live in. */
static __thread int t_owner;
static __thread int t_resolving;

/* One simulation per process at a time: the hooks table (copied at enter
 * so the extension may pass a stack object), the ring and the stack bounds
 * below belong to that thread. */
static atomic_int sim_active;
static struct askew_preload_hooks hooks_copy;
uintptr_t askew__sim_stack_lo, askew__sim_stack_hi;

static struct askew_violation ring[ASKEW_VIOLATION_RING];
static _Atomic uint64_t ring_count;

/* Our own code, so the frame walk can skip frames inside the preload. */
static uintptr_t self_text_lo, self_text_hi;
static int debug_on;

_Atomic(void *) askew__fn_real[FN_COUNT];
static atomic_uchar fn_missing[FN_COUNT];

/* fns.def as data: each function's name, slot and self-test column. */
static const struct {
    const char *name;
    unsigned char slot;  /* ASKEW_SLOT_* */
    unsigned char check; /* ASKEW_CHECK_* */
} fns[FN_COUNT] = {
#define ASKEW_FN(name, slot, export, check)                                            \
    [FN_##name] = {#name, ASKEW_SLOT_##slot, ASKEW_CHECK_##check},
#include "fns.def"
#undef ASKEW_FN
};

long askew__raw_syscall(long nr, long a0, long a1, long a2, long a3, long a4, long a5)
{
    long ret;
#if defined(__x86_64__)
    register long r10 __asm__("r10") = a3;
    register long r8 __asm__("r8") = a4;
    register long r9 __asm__("r9") = a5;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"(nr), "D"(a0), "S"(a1), "d"(a2), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
#elif defined(__aarch64__)
    register long x8 __asm__("x8") = nr;
    register long x0 __asm__("x0") = a0;
    register long x1 __asm__("x1") = a1;
    register long x2 __asm__("x2") = a2;
    register long x3 __asm__("x3") = a3;
    register long x4 __asm__("x4") = a4;
    register long x5 __asm__("x5") = a5;
    __asm__ volatile("svc 0"
                     : "+r"(x0)
                     : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
                     : "memory");
    ret = x0;
#else
    /* No inline syscall for this architecture: the fallback (used only
     * while dlsym is re-entered) fails instead. */
    (void)nr;
    (void)a0;
    (void)a1;
    (void)a2;
    (void)a3;
    (void)a4;
    (void)a5;
    ret = -ENOSYS;
#endif
    if ((unsigned long)ret > -4096UL) {
        errno = (int)-ret;
        return -1;
    }
    return ret;
}

void *askew__resolve(enum askew_fn fn)
{
    /* A dlsym that re-enters us (through a malloc that reads the clock, say)
     * must not recurse: that inner call gets NULL and takes the raw path. */
    if (t_resolving || atomic_load_explicit(&fn_missing[fn], memory_order_relaxed))
        return NULL;
    int saved = errno;
    t_resolving = 1;
    void *p = dlsym(RTLD_NEXT, fns[fn].name);
    t_resolving = 0;
    errno = saved;
    if (p == NULL) {
        atomic_store_explicit(&fn_missing[fn], 1, memory_order_relaxed);
        return NULL;
    }
    /* Racing threads store the same address; no lock needed. */
    atomic_store_explicit(&askew__fn_real[fn], p, memory_order_relaxed);
    return p;
}

static void write_str(const char *s)
{
    long rc = askew__raw_syscall(SYS_write, 2, (long)s, (long)strlen(s), 0, 0, 0);
    (void)rc; /* best effort: debug output only */
}

void askew__debug(const char *what, const char *call)
{
    if (!debug_on)
        return;
    int saved = errno;
    write_str("askew-preload: ");
    write_str(what);
    if (call != NULL) {
        write_str(" ");
        write_str(call);
    }
    write_str("\n");
    errno = saved;
}

int askew__hook_now(const struct askew_preload_hooks *h, int realtime,
                    struct timespec *out)
{
    askew__t_hooks = NULL;
    int rc = h->now(h->ctx, realtime, out);
    askew__t_hooks = h;
    return rc;
}

int askew__hook_random(const struct askew_preload_hooks *h, void *buf, size_t len)
{
    askew__t_hooks = NULL;
    int rc = h->random(h->ctx, buf, len);
    askew__t_hooks = h;
    return rc;
}

int askew__hook_handoff(const struct askew_preload_hooks *h, int waiting)
{
    if (h->handoff == NULL)
        return 0;
    askew__t_hooks = NULL;
    int rc = h->handoff(h->ctx, waiting);
    askew__t_hooks = h;
    return rc;
}

int askew__hook_sleep(const struct askew_preload_hooks *h, int64_t ns)
{
    if (h->sleep == NULL)
        return -ENOSYS;
    askew__t_hooks = NULL;
    int rc = h->sleep(h->ctx, ns);
    askew__t_hooks = h;
    return rc;
}

int64_t askew__hook_disk(const struct askew_preload_hooks *h,
                         struct askew_disk_call *call)
{
    if (h->disk == NULL)
        return ASKEW_DISK_PASS;
    askew__t_hooks = NULL;
    int64_t rc = h->disk(h->ctx, call);
    askew__t_hooks = h;
    return rc;
}

int askew__hook_identity(const struct askew_preload_hooks *h,
                         struct askew_identity *out)
{
    if (h->identity == NULL)
        return -ENOSYS;
    askew__t_hooks = NULL;
    int rc = h->identity(h->ctx, out);
    askew__t_hooks = h;
    return rc;
}

int askew__hook_thread(const struct askew_preload_hooks *h,
                       struct askew_thread_call *call)
{
    if (!askew__hooks_have(h, ASKEW_HOOKS_END(own)) || h->thread == NULL)
        return -ENOSYS;
    askew__t_hooks = NULL;
    int rc = h->thread(h->ctx, call);
    askew__t_hooks = h;
    return rc;
}

int askew__interp_caller(const struct askew_preload_hooks *h, const void *ret)
{
    const uintptr_t pc = (uintptr_t)ret;
    for (int i = 0; i < ASKEW_INTERP_RANGES && h->interp[i].hi != 0; i++)
        if (pc >= h->interp[i].lo && pc < h->interp[i].hi)
            return 1;
    return 0;
}

void askew__run_begins(const struct askew_preload_hooks *h)
{
    (void)h;
    askew__fds_run_begins();
    askew__auxv_run_begins();
    askew__cthread_run_begins();
}

int askew__hooks_have(const struct askew_preload_hooks *h, size_t end)
{
    return h->size >= end;
}

const char *askew__first_refusal(void)
{
    const uint64_t n = atomic_load_explicit(&ring_count, memory_order_acquire);
    if (n == 0)
        return NULL;
    return ring[(n > ASKEW_VIOLATION_RING ? n - 1 : 0) % ASKEW_VIOLATION_RING].call;
}

static int in_self(uintptr_t pc)
{
    return pc >= self_text_lo && pc < self_text_hi;
}

/* noinline keeps a frame of our own whose saved frame pointer starts the
 * walk. The walk reads only words strictly above our frame and below the
 * top of the simulation thread's stack, so it cannot fault even when the
 * callers were built without frame pointers; it then yields junk that the
 * extension's dladdr leaves unnamed, which is the best a bounded walk can
 * do without an unwinder (which would malloc). */
__attribute__((noinline)) void askew__refuse(const struct askew_preload_hooks *h,
                                             enum askew_violation_kind kind,
                                             const char *call, long arg0, long arg1,
                                             void *ret)
{
    int saved = errno;
    uint64_t n = atomic_load_explicit(&ring_count, memory_order_relaxed);
    struct askew_violation *v = &ring[n % ASKEW_VIOLATION_RING];
    v->kind = (uint32_t)kind;
    v->call = call;
    v->arg0 = arg0;
    v->arg1 = arg1;
    v->frames[0] = (uintptr_t)ret;
    v->nframes = 1;
    uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
    for (int hops = 0; hops < 64 && v->nframes < ASKEW_VIOLATION_FRAMES; hops++) {
        if (fp < askew__sim_stack_lo ||
            fp + 2 * sizeof(uintptr_t) > askew__sim_stack_hi ||
            (fp & (sizeof(uintptr_t) - 1)) != 0)
            break;
        uintptr_t next = ((const uintptr_t *)fp)[0];
        uintptr_t pc = ((const uintptr_t *)fp)[1];
        if (pc == 0)
            break;
        if (!in_self(pc) && pc != v->frames[v->nframes - 1] && pc != (uintptr_t)ret)
            v->frames[v->nframes++] = pc;
        if (next <= fp)
            break;
        fp = next;
    }
    atomic_store_explicit(&ring_count, n + 1, memory_order_release);
    askew__death_arm(h);
    askew__debug("refused", call);
    if (h->on_violation != NULL) {
        askew__t_hooks = NULL;
        h->on_violation(h->ctx);
        askew__t_hooks = h;
    }
    errno = saved;
}

/* ---- the control API ------------------------------------------------- */

/* The calling thread's stack, found once per thread: for the main thread
 * pthread_getattr_np reads /proc/self/maps, which cost an empty run more
 * than the run itself when it was asked at every enter. A thread's stack
 * does not move while the thread lives (the main thread's may grow down
 * past what was read; the frame walk then stops early, never faults). */
static __thread uintptr_t t_stack_lo, t_stack_hi;

static void stack_bounds(void)
{
    if (t_stack_hi == 0) {
        pthread_attr_t attr;
        void *addr = NULL;
        size_t size = 0;
        if (pthread_getattr_np(pthread_self(), &attr) == 0) {
            if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
                t_stack_lo = (uintptr_t)addr;
                t_stack_hi = (uintptr_t)addr + size;
            }
            pthread_attr_destroy(&attr);
        }
    }
    askew__sim_stack_lo = t_stack_lo;
    askew__sim_stack_hi = t_stack_hi;
}

static int api_enter(const struct askew_preload_hooks *hooks)
{
    size_t need = offsetof(struct askew_preload_hooks, random) + sizeof(hooks->random);
    if (hooks == NULL || hooks->size < need || hooks->now == NULL ||
        hooks->random == NULL)
        return -EINVAL;
    if (t_owner)
        return -EBUSY;
    int expected = 0;
    if (!atomic_compare_exchange_strong(&sim_active, &expected, 1))
        return -EBUSY;
    memset(&hooks_copy, 0, sizeof(hooks_copy));
    memcpy(&hooks_copy, hooks,
           hooks->size < sizeof(hooks_copy) ? hooks->size : sizeof(hooks_copy));
    /* The size the extension knows stays: what it did not know is zero,
     * and the behaviour of its ABI (askew__hooks_have) goes with it. */
    if (hooks_copy.size > sizeof(hooks_copy))
        hooks_copy.size = sizeof(hooks_copy);
    /* Outside any interposer: allowed to allocate and read /proc. */
    stack_bounds();
    atomic_store_explicit(&ring_count, 0, memory_order_relaxed);
    if (askew__hooks_have(&hooks_copy, ASKEW_HOOKS_END(quiet_draws))) {
        if (hooks_copy.new_run)
            askew__run_begins(&hooks_copy);
        askew__libc_rng_enter(hooks_copy.new_run, hooks_copy.libc_seed);
    }
    askew__cthread_enter();
    t_owner = 1;
    askew__t_hooks = &hooks_copy;
    askew__debug("enter", NULL);
    return 0;
}

static void api_leave(void)
{
    if (!t_owner)
        return;
    askew__t_hooks = NULL;
    t_owner = 0;
    askew__libc_rng_leave();
    askew__death_disarm();
    atomic_store(&sim_active, 0);
    askew__debug("leave", NULL);
}

static uint64_t api_violations(void)
{
    return atomic_load_explicit(&ring_count, memory_order_acquire);
}

static int api_violation_get(uint64_t index, struct askew_violation *out)
{
    uint64_t n = atomic_load_explicit(&ring_count, memory_order_acquire);
    if (out == NULL || index >= n || n - index > ASKEW_VIOLATION_RING)
        return -ERANGE;
    *out = ring[index % ASKEW_VIOLATION_RING];
    return 0;
}

/* Sanitizer runtimes come first by necessity and forward to the next
 * definition with RTLD_NEXT, which is ours: being behind one is fine. */
static int is_forwarding_runtime(const char *path)
{
    static const char *const names[] = {"libasan", "libubsan", "libtsan",
                                        "liblsan", "libmsan",  "libclang_rt"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (path != NULL && strstr(path, names[i]) != NULL)
            return 1;
    return 0;
}

/* The rows of fns.def marked SELF (one per family, and the hot ones) must
 * resolve, from the program's global scope, into this library's own text:
 * then our definition comes first in lookup order. */
static int api_self_test(char *msg, size_t len)
{
    size_t count = 0;
    for (int fn = 0; fn < FN_COUNT; fn++) {
        if (fns[fn].check != ASKEW_CHECK_SELF)
            continue;
        count++;
        void *found = dlsym(RTLD_DEFAULT, fns[fn].name);
        if (found != NULL && in_self((uintptr_t)found))
            continue;
        Dl_info info;
        const char *where = "nowhere";
        if (found != NULL && dladdr(found, &info) != 0 && info.dli_fname != NULL)
            where = info.dli_fname;
        if (found != NULL && is_forwarding_runtime(where))
            continue;
        if (msg != NULL && len > 0) {
            const char *why = "another LD_PRELOAD library comes first";
            if (strstr(where, "libc.so") != NULL)
                why = "the preload was loaded with dlopen, not LD_PRELOAD";
            snprintf(msg, len, "%s resolves to %s, not to libaskew-preload.so: %s",
                     fns[fn].name, where, why);
        }
        return -1;
    }
    if (msg != NULL && len > 0)
        snprintf(msg, len, "ok: %zu interposers come first in lookup order", count);
    return 0;
}

static const struct askew_preload_api api = {
    .size = sizeof(struct askew_preload_api),
    .abi_minor = ASKEW_PRELOAD_ABI_MINOR,
    .enter = api_enter,
    .leave = api_leave,
    .violations = api_violations,
    .violation_get = api_violation_get,
    .self_test = api_self_test,
};

ASKEW_EXPORT const struct askew_preload_api *askew_preload_get_api(uint32_t abi_major)
{
    return abi_major == ASKEW_PRELOAD_ABI_MAJOR ? &api : NULL;
}

/* ---- start-up ---------------------------------------------------------- */

/* A forked child is a different process: whatever the forking thread was
 * doing, the child starts outside any simulation and may enter its own. */
static void atfork_child(void)
{
    askew__t_hooks = NULL;
    t_owner = 0;
    atomic_store(&sim_active, 0);
}

static int find_self_text(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    uintptr_t base = (uintptr_t)data;
    if ((uintptr_t)info->dlpi_addr != base)
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) != 0) {
            self_text_lo = base + ph->p_vaddr;
            self_text_hi = self_text_lo + ph->p_memsz;
        }
    }
    return 1;
}

/* A test's switch: ASKEW_PRELOAD_UNRESOLVED=poll,select makes those slots
 * behave as if dlsym had found nothing, so that the fallback paths run
 * (tests/c/probe_fallback.c). Read once, before the table is warmed. */
static void mark_unresolved(const char *list)
{
    for (int fn = 0; list != NULL && fn < FN_COUNT; fn++) {
        const size_t len = strlen(fns[fn].name);
        for (const char *p = list; *p != '\0'; p += strcspn(p, ","), p += *p == ',') {
            if (strncmp(p, fns[fn].name, len) == 0 && (p[len] == ',' || p[len] == '\0'))
                atomic_store_explicit(&fn_missing[fn], 1, memory_order_relaxed);
        }
    }
}

__attribute__((constructor)) static void preload_init(void)
{
    const char *dbg = getenv("ASKEW_DEBUG");
    debug_on = dbg != NULL && dbg[0] != '\0' && strcmp(dbg, "0") != 0;
    mark_unresolved(getenv("ASKEW_PRELOAD_UNRESOLVED"));
    for (int fn = 0; fn < FN_COUNT; fn++)
        if (fns[fn].slot == ASKEW_SLOT_EAGER)
            (void)askew__real((enum askew_fn)fn); /* warm the table */
    Dl_info info;
    if (dladdr((void *)&askew__refuse, &info) != 0)
        dl_iterate_phdr(find_self_text, info.dli_fbase);
    pthread_atfork(NULL, NULL, atfork_child);
    askew__debug("loaded", NULL);
}
