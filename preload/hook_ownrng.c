/* SPDX-License-Identifier: Apache-2.0 */
/* Objects that carry their own copy of OpenSSL (cryptography's wheels link
 * it statically): its random generator runs inside the object, where no
 * interposer reaches, and mixes the process id and the thread's address
 * into its nonce, so what it makes (keys, nonces, salts) differs across
 * processes even inside a run.
 * Its calls out to libc do come here: a seed draw (getentropy) at first
 * use, and a clock read (time) on every draw, to decide on a reseed. So on
 * the simulation thread the clock and getentropy interposers ask whether
 * their caller's object carries such a generator, and if so record a
 * refusal (the run fails, naming the object) while still answering from
 * the simulation. An object is classified once, on its first such call in
 * a run, by looking in its read-only segments for OpenSSL's DRBG source
 * names; a shared libcrypto (it exports RAND_bytes, which hook_rand.c
 * serves from the run) is not one. Only the simulation thread uses the
 * cache, so it needs no atomics; it never allocates on a hit. */
#include <dlfcn.h>
#include <link.h>
#include <string.h>

#include "hook_ownrng.h"
#include "internal.h"

/* Source file names OpenSSL compiles into its error records (OPENSSL_FILE):
 * the DRBG's, in 3.x and 4.x, then in 1.1.1. */
static const char *const markers[] = {"providers/implementations/rands/drbg.c",
                                      "crypto/rand/drbg_lib.c"};

#define OWN_RNG_CACHE 64

static struct {
    uintptr_t lo, hi; /* the object's loaded extent */
    int own;          /* 1: carries its own OpenSSL generator */
} cache[OWN_RNG_CACHE];
static int cache_used, cache_next;

struct probe {
    uintptr_t pc;
    uintptr_t lo, hi;
    int found, marked;
};

static int has_marker(const void *p, size_t len)
{
    for (size_t i = 0; i < sizeof(markers) / sizeof(markers[0]); i++)
        if (memmem(p, len, markers[i], strlen(markers[i])) != NULL)
            return 1;
    return 0;
}

/* The object holding pc: its extent, and whether its read-only segments
 * (executable ones too: some linkers put .rodata beside .text) hold a
 * marker. */
static int classify(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct probe *pr = data;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        if (start < lo)
            lo = start;
        if (start + ph->p_memsz > hi)
            hi = start + ph->p_memsz;
    }
    if (pr->pc < lo || pr->pc >= hi)
        return 0;
    pr->lo = lo;
    pr->hi = hi;
    pr->found = 1;
    for (int i = 0; i < info->dlpi_phnum && !pr->marked; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_W) == 0 &&
            (ph->p_flags & PF_R) != 0)
            pr->marked =
                has_marker((const void *)(info->dlpi_addr + ph->p_vaddr), ph->p_filesz);
    }
    return 1;
}

/* A shared libcrypto exports RAND_bytes: its draws come through
 * hook_rand.c's interposers and are the run's. */
static int exports_rand_bytes(const struct probe *pr)
{
    Dl_info info;
    if (dladdr((void *)pr->pc, &info) == 0 || info.dli_fname == NULL ||
        info.dli_fname[0] == '\0')
        return 0;
    void *handle = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    if (handle == NULL)
        return 0;
    uintptr_t sym = (uintptr_t)dlsym(handle, "RAND_bytes");
    dlclose(handle);
    return sym >= pr->lo && sym < pr->hi;
}

int askew__sim_own_rng(const void *ret)
{
    const uintptr_t pc = (uintptr_t)ret;
    for (int i = 0; i < cache_used; i++)
        if (pc >= cache[i].lo && pc < cache[i].hi)
            return cache[i].own;
    int saved = errno;
    struct probe pr = {.pc = pc};
    dl_iterate_phdr(classify, &pr);
    /* This library holds the markers too, in the table above. */
    const uintptr_t self = (uintptr_t)&askew__sim_own_rng;
    const int own = pr.found && pr.marked && !(self >= pr.lo && self < pr.hi) &&
                    !exports_rand_bytes(&pr);
    if (pr.found) {
        /* Past OWN_RNG_CACHE objects, the oldest entries make room. */
        const int slot = cache_used < OWN_RNG_CACHE ? cache_used++ : cache_next++;
        cache_next %= OWN_RNG_CACHE;
        cache[slot].lo = pr.lo;
        cache[slot].hi = pr.hi;
        cache[slot].own = own;
    }
    errno = saved;
    return own;
}
