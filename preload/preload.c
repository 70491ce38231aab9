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

#include "internal.h"

__thread const struct askew_preload_hooks *askew__t_hooks;

/* The hooks table is copied at enter so the extension may pass a stack
 * object; t_owner marks the simulation thread even while a hook runs (when
 * askew__t_hooks is cleared). Both are tiny: a dlopen'ed copy has only the
 * small static-TLS surplus to live in. */
static __thread struct askew_preload_hooks t_hooks_copy;
static __thread int t_owner;
static __thread int t_resolving;

/* One simulation per process at a time: the ring and the stack bounds
 * below belong to that thread. */
static atomic_int sim_active;
static uintptr_t sim_stack_lo, sim_stack_hi;

static struct askew_violation ring[ASKEW_VIOLATION_RING];
static _Atomic uint64_t ring_count;

/* Our own code, so the frame walk can skip frames inside the preload. */
static uintptr_t self_text_lo, self_text_hi;
static int debug_on;

_Atomic(void *) askew__fn_real[FN_COUNT];
static atomic_uchar fn_missing[FN_COUNT];

static const char *const fn_names[FN_COUNT] = {
    [FN_clock_gettime] = "clock_gettime",
    [FN_clock_getres] = "clock_getres",
    [FN_gettimeofday] = "gettimeofday",
    [FN_time] = "time",
    [FN_timespec_get] = "timespec_get",
    [FN_clock] = "clock",
    [FN_times] = "times",
    [FN_getrusage] = "getrusage",
    [FN_getrandom] = "getrandom",
    [FN_getentropy] = "getentropy",
    [FN_syscall] = "syscall",
    [FN_pthread_create] = "pthread_create",
    [FN_sem_post] = "sem_post",
    [FN_sem_wait] = "sem_wait",
    [FN_sem_trywait] = "sem_trywait",
    [FN_fork] = "fork",
    [FN_posix_spawn] = "posix_spawn",
    [FN_posix_spawnp] = "posix_spawnp",
    [FN_execve] = "execve",
    [FN_execv] = "execv",
    [FN_execvp] = "execvp",
    [FN_execvpe] = "execvpe",
    [FN_fexecve] = "fexecve",
    [FN_system] = "system",
    [FN_popen] = "popen",
    [FN_socket] = "socket",
    [FN_connect] = "connect",
    [FN_bind] = "bind",
    [FN_getaddrinfo] = "getaddrinfo",
    [FN_gethostbyname] = "gethostbyname",
    [FN_gethostbyname2] = "gethostbyname2",
    [FN_gethostbyname_r] = "gethostbyname_r",
    [FN_gethostbyaddr] = "gethostbyaddr",
    [FN_gethostbyaddr_r] = "gethostbyaddr_r",
    [FN_getnameinfo] = "getnameinfo",
    [FN_send] = "send",
    [FN_recv] = "recv",
    [FN_sendto] = "sendto",
    [FN_recvfrom] = "recvfrom",
    [FN_sendmsg] = "sendmsg",
    [FN_recvmsg] = "recvmsg",
    [FN_sendmmsg] = "sendmmsg",
    [FN_recvmmsg] = "recvmmsg",
    [FN_read] = "read",
    [FN_write] = "write",
    [FN_readv] = "readv",
    [FN_writev] = "writev",
    [FN_accept] = "accept",
    [FN_accept4] = "accept4",
    [FN___read_chk] = "__read_chk",
    [FN___recv_chk] = "__recv_chk",
    [FN___recvfrom_chk] = "__recvfrom_chk",
    [FN_daemon] = "daemon",
    [FN_nanosleep] = "nanosleep",
    [FN_clock_nanosleep] = "clock_nanosleep",
    [FN_usleep] = "usleep",
    [FN_sleep] = "sleep",
    [FN_sem_timedwait] = "sem_timedwait",
    [FN_sem_clockwait] = "sem_clockwait",
    [FN_pthread_cond_timedwait] = "pthread_cond_timedwait",
    [FN_pthread_cond_clockwait] = "pthread_cond_clockwait",
    [FN_poll] = "poll",
    [FN_ppoll] = "ppoll",
    [FN_select] = "select",
    [FN_pselect] = "pselect",
    [FN_epoll_wait] = "epoll_wait",
    [FN_epoll_pwait] = "epoll_pwait",
    [FN_open] = "open",
    [FN_open64] = "open64",
    [FN___open_2] = "__open_2",
    [FN___open64_2] = "__open64_2",
    [FN_openat] = "openat",
    [FN_openat64] = "openat64",
    [FN_fopen] = "fopen",
    [FN_fopen64] = "fopen64",
    [FN_arc4random] = "arc4random",
    [FN_arc4random_buf] = "arc4random_buf",
    [FN_arc4random_uniform] = "arc4random_uniform",
    [FN_forkpty] = "forkpty",
    [FN__Fork] = "_Fork",
    [FN_vfork] = "vfork",
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
    void *p = dlsym(RTLD_NEXT, fn_names[fn]);
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
        if (fp < sim_stack_lo || fp + 2 * sizeof(uintptr_t) > sim_stack_hi ||
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
    askew__debug("refused", call);
    if (h->on_violation != NULL) {
        askew__t_hooks = NULL;
        h->on_violation(h->ctx);
        askew__t_hooks = h;
    }
    errno = saved;
}

/* ---- the control API ------------------------------------------------- */

static void stack_bounds(void)
{
    pthread_attr_t attr;
    void *addr = NULL;
    size_t size = 0;
    sim_stack_lo = sim_stack_hi = 0;
    if (pthread_getattr_np(pthread_self(), &attr) != 0)
        return;
    if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
        sim_stack_lo = (uintptr_t)addr;
        sim_stack_hi = (uintptr_t)addr + size;
    }
    pthread_attr_destroy(&attr);
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
    memset(&t_hooks_copy, 0, sizeof(t_hooks_copy));
    memcpy(&t_hooks_copy, hooks,
           hooks->size < sizeof(t_hooks_copy) ? hooks->size : sizeof(t_hooks_copy));
    t_hooks_copy.size = sizeof(t_hooks_copy);
    /* Outside any interposer: allowed to allocate and read /proc. */
    stack_bounds();
    atomic_store_explicit(&ring_count, 0, memory_order_relaxed);
    t_owner = 1;
    askew__t_hooks = &t_hooks_copy;
    askew__debug("enter", NULL);
    return 0;
}

static void api_leave(void)
{
    if (!t_owner)
        return;
    askew__t_hooks = NULL;
    t_owner = 0;
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

/* The interposers whose place in lookup order self_test checks: one per
 * family, plus the hot ones. The askew__self_ aliases bind inside the
 * library, so they are our definitions whoever comes first. */
#define SELF_DECL(name) extern __typeof__(name) askew__self_##name ASKEW_HIDDEN
SELF_DECL(clock_gettime);
SELF_DECL(gettimeofday);
SELF_DECL(time);
SELF_DECL(getrandom);
SELF_DECL(getentropy);
SELF_DECL(syscall);
SELF_DECL(pthread_create);
SELF_DECL(fork);
SELF_DECL(socket);
SELF_DECL(getaddrinfo);
SELF_DECL(nanosleep);
SELF_DECL(clock_nanosleep);
SELF_DECL(open);
SELF_DECL(read);
SELF_DECL(send);

static const struct {
    const char *name;
    void *self;
} self_table[] = {
#define SELF(name) {#name, (void *)&askew__self_##name}
    SELF(clock_gettime),  SELF(gettimeofday), SELF(time),
    SELF(getrandom),      SELF(getentropy),   SELF(syscall),
    SELF(pthread_create), SELF(fork),         SELF(socket),
    SELF(getaddrinfo),    SELF(nanosleep),    SELF(clock_nanosleep),
    SELF(open),           SELF(read),         SELF(send),
#undef SELF
};

static int api_self_test(char *msg, size_t len)
{
    size_t count = sizeof(self_table) / sizeof(self_table[0]);
    for (size_t i = 0; i < count; i++) {
        const __typeof__(self_table[0]) *e = &self_table[i];
        void *found = dlsym(RTLD_DEFAULT, e->name);
        if (found == e->self)
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
                     e->name, where, why);
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

__attribute__((constructor)) static void preload_init(void)
{
    const char *dbg = getenv("ASKEW_DEBUG");
    debug_on = dbg != NULL && dbg[0] != '\0' && strcmp(dbg, "0") != 0;
    for (int fn = 0; fn < FN_FIRST_OPTIONAL; fn++)
        (void)askew__real((enum askew_fn)fn); /* warm the table */
    Dl_info info;
    if (dladdr((void *)&askew__refuse, &info) != 0)
        dl_iterate_phdr(find_self_text, info.dli_fbase);
    pthread_atfork(NULL, NULL, atfork_child);
    askew__debug("loaded", NULL);
}
