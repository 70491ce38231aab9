/* SPDX-License-Identifier: Apache-2.0 */
/* Library PRNGs that keep their own state: OpenSSL's RAND_bytes,
 * RAND_priv_bytes and their _ex forms, SQLite's sqlite3_randomness
 * (random(), randomblob(), temporary names), and libc's own global
 * generators (rand/srand/random/srandom, the drand48 family). OpenSSL mixes
 * the pid, the thread's address and the time into its DRBG, and SQLite
 * seeds once per process, so neither replays even when first used inside a
 * run. Inside a run every byte comes from the run's entropy stream instead;
 * outside it each call goes to the library's own function. Both libraries
 * call these through their PLT, so their internal draws (key generation,
 * handshakes, SQL random()) come here too. A copy linked statically into
 * another object is not seen here: hook_ownrng.c refuses cryptography's
 * wheels (their own OpenSSL); a vendored SQLite stays unseen.
 * libc's generators are not interposed but swapped: at each run's start
 * the run gets a state of its own seeded from its stream (so iteration 1 of
 * a sweep draws what the same seed draws alone), kept across the run's
 * enters, and the host's state comes back at every leave. rand_r,
 * random_r, erand48 and the other calls whose state the caller holds are
 * the caller's. */
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hook_rand.h"
#include "internal.h"

/* fns.def's CALLER rows: these libraries usually arrive with a dlopen'ed
 * extension module (RTLD_LOCAL), outside the global scope that
 * dlsym(RTLD_NEXT) searches. The real function is found from the caller's
 * own object instead (the module, or the library itself for its internal
 * calls), whose dependency tree holds the library; the preload is in
 * nobody's. */
#define CALLER_ROW_CALLER(...) __VA_ARGS__
#define CALLER_ROW_EAGER(...)
#define CALLER_ROW_LATE(...)
#define CALLER_ROW_NONE(...)

enum rand_fn {
#define ASKEW_FN(name, slot, export, check) CALLER_ROW_##slot(R_##name, )
#include "fns.def"
#undef ASKEW_FN
    R_COUNT
};

static const char *const rand_names[R_COUNT] = {
#define ASKEW_FN(name, slot, export, check) CALLER_ROW_##slot([R_##name] = #name, )
#include "fns.def"
#undef ASKEW_FN
};

/* Which library a caller reaches depends on the caller: a wheel may bundle
 * its own libcrypto beside the system's, and an OSSL_LIB_CTX of one must
 * never reach the other. So the real function is remembered per calling
 * object (its load address), in a small table; past it, looked up anew
 * each time. Resolution runs once per object and function and may
 * allocate, as dlsym does; the table is never freed. */
#define RAND_CACHE 32
static struct {
    _Atomic(uintptr_t) base; /* the caller's object; 0 while unused */
    _Atomic(void *) real;
} rand_cache[R_COUNT][RAND_CACHE];

static void *lookup(enum rand_fn fn, const Dl_info *info)
{
    void *p = NULL;
    void *handle = dlopen(info->dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    if (handle != NULL) {
        p = dlsym(handle, rand_names[fn]);
        dlclose(handle);
    }
    return p != NULL ? p : dlsym(RTLD_NEXT, rand_names[fn]);
}

static void *real_for(enum rand_fn fn, void *caller)
{
    int saved = errno;
    void *p = NULL;
    Dl_info info;
    if (dladdr(caller, &info) == 0 || info.dli_fname == NULL) {
        p = dlsym(RTLD_NEXT, rand_names[fn]);
        errno = saved;
        return p;
    }
    const uintptr_t base = (uintptr_t)info.dli_fbase;
    for (int i = 0; i < RAND_CACHE; i++) {
        uintptr_t b =
            atomic_load_explicit(&rand_cache[fn][i].base, memory_order_acquire);
        if (b == base && (p = atomic_load_explicit(&rand_cache[fn][i].real,
                                                   memory_order_relaxed)) != NULL) {
            errno = saved;
            return p;
        }
        if (b != 0)
            continue;
        p = lookup(fn, &info);
        uintptr_t expected = 0;
        if (p != NULL &&
            atomic_compare_exchange_strong(&rand_cache[fn][i].base, &expected, base))
            atomic_store_explicit(&rand_cache[fn][i].real, p, memory_order_relaxed);
        errno = saved;
        return p;
    }
    p = lookup(fn, &info);
    errno = saved;
    return p;
}

/* OpenSSL's convention: 1 on success, 0 (or -1) on failure. */
static int sim_bytes(const struct askew_preload_hooks *h, unsigned char *buf,
                     size_t num)
{
    if (num == 0)
        return 1;
    return askew__hook_random(h, buf, num) >= 0 ? 1 : 0;
}

/* The two shapes of OpenSSL's RAND calls, each serving both the public and
 * the private generator: `caller` is the interposer's return address, for
 * real_for to find the right library's symbol. */
static int rand_int(enum rand_fn which, void *caller, unsigned char *buf, int num)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_UNLIKELY(h != NULL) && num >= 0)
        return sim_bytes(h, buf, (size_t)num);
    int (*real)(unsigned char *, int) =
        (int (*)(unsigned char *, int))real_for(which, caller);
    return real != NULL ? real(buf, num) : 0;
}

static int rand_ex(enum rand_fn which, void *caller, void *libctx, unsigned char *buf,
                   size_t num, unsigned int strength)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_UNLIKELY(h != NULL))
        return sim_bytes(h, buf, num);
    int (*real)(void *, unsigned char *, size_t, unsigned int) =
        (int (*)(void *, unsigned char *, size_t, unsigned int))real_for(which, caller);
    return real != NULL ? real(libctx, buf, num, strength) : 0;
}

ASKEW_EXPORT int RAND_bytes(unsigned char *buf, int num)
{
    return rand_int(R_RAND_bytes, __builtin_return_address(0), buf, num);
}

ASKEW_EXPORT int RAND_priv_bytes(unsigned char *buf, int num)
{
    return rand_int(R_RAND_priv_bytes, __builtin_return_address(0), buf, num);
}

ASKEW_EXPORT int RAND_bytes_ex(void *libctx, unsigned char *buf, size_t num,
                               unsigned int strength)
{
    return rand_ex(R_RAND_bytes_ex, __builtin_return_address(0), libctx, buf, num,
                   strength);
}

ASKEW_EXPORT int RAND_priv_bytes_ex(void *libctx, unsigned char *buf, size_t num,
                                    unsigned int strength)
{
    return rand_ex(R_RAND_priv_bytes_ex, __builtin_return_address(0), libctx, buf, num,
                   strength);
}

/* N <= 0 or a NULL buffer resets SQLite's generator: the library's own
 * business, inside a run or not. */
ASKEW_EXPORT void sqlite3_randomness(int n, void *buf)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_UNLIKELY(h != NULL) && n > 0 && buf != NULL) {
        if (askew__hook_random(h, buf, (size_t)n) < 0) {
            unsigned char *p = buf; /* cannot fail: still deterministic */
            for (int i = 0; i < n; i++)
                p[i] = 0;
        }
        return;
    }
    void (*real)(int, void *) = (void (*)(int, void *))real_for(
        R_sqlite3_randomness, __builtin_return_address(0));
    if (real != NULL)
        real(n, buf);
}

/* ---- libc's global generators ----------------------------------------- */

/* random()'s state during runs: 128 bytes, glibc's default (TYPE_3), so a
 * seed draws what srandom() would draw; the host's state is what setstate
 * handed back. drand48's 48-bit state is three shorts either side. Touched
 * at enter and leave only, on the simulation thread. */
static char run_random_state[128];
static char *host_random_state;
static unsigned short run_x48[3], host_x48[3];
static int run_seeded, swapped;

void askew__libc_rng_enter(int new_run, uint64_t seed)
{
    if (!new_run && !run_seeded)
        return; /* no run of ours has begun: nothing to swap in */
    if (new_run) {
        /* What srandom(seed) and srand48(seed >> 32) would set. */
        host_random_state =
            initstate((unsigned)seed, run_random_state, sizeof(run_random_state));
        run_x48[0] = 0x330E;
        run_x48[1] = (unsigned short)(seed >> 32);
        run_x48[2] = (unsigned short)(seed >> 48);
        run_seeded = 1;
    } else {
        host_random_state = setstate(run_random_state);
    }
    const unsigned short *host = seed48(run_x48);
    memcpy(host_x48, host, sizeof(host_x48));
    swapped = 1;
}

void askew__libc_rng_leave(void)
{
    if (!swapped)
        return;
    if (host_random_state != NULL)
        (void)setstate(host_random_state); /* saves the run's place in its buffer */
    const unsigned short *run = seed48(host_x48);
    memcpy(run_x48, run, sizeof(run_x48));
    swapped = 0;
}
