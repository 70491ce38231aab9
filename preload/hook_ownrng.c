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
 * cache, so it needs no atomics; it never allocates on a hit.
 * Some of such an object's draws never reach what it makes: RSA's
 * blinding factor is drawn and divided out again, so a PKCS#1 v1.5
 * signature is the same whatever was drawn. The extension names those
 * functions once per object (hooks->quiet_draws, from the object's symbol
 * table), and a read whose callers include one of them is not refused. */
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

/* Functions of such an object whose draws never reach an output (the
 * extension names them: hooks->quiet_draws), at most QUIET_MAX each. */
#define QUIET_MAX 4

static struct {
    uintptr_t lo, hi; /* the object's loaded extent */
    int own;          /* 1: carries its own OpenSSL generator */
    int nquiet;
    struct askew_code_range quiet[QUIET_MAX];
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

/* Whether `w`, a word on the stack, is a return address: the instruction
 * before it is a call. Only asked of words inside a quiet function, whose
 * code is mapped. */
static int after_call(uintptr_t w, uintptr_t lo)
{
#if defined(__x86_64__)
    const unsigned char *b = (const unsigned char *)w;
    return (w >= lo + 5 && b[-5] == 0xE8) ||                         /* call rel32 */
           (w >= lo + 6 && b[-6] == 0xFF && b[-5] == 0x15) ||        /* call *rip+d */
           (w >= lo + 2 && b[-2] == 0xFF && (b[-1] & 0xF8) == 0xD0); /* call *%reg */
#elif defined(__aarch64__)
    if (w < lo + 4)
        return 0;
    uint32_t insn;
    memcpy(&insn, (const void *)(w - 4), sizeof(insn));
    return (insn & 0xFC000000u) == 0x94000000u || /* bl */
           (insn & 0xFFFFFC1Fu) == 0xD63F0000u;   /* blr */
#else
    (void)w;
    (void)lo;
    return 0;
#endif
}

/* How far up the simulation thread's stack a quiet caller is looked for:
 * OpenSSL's RSA blinding sits a dozen frames above the clock read. */
#define QUIET_SCAN_BYTES 16384

/* Whether one of the entry's quiet functions is among the callers: a word
 * on the stack between this frame and the scan's end that is a return
 * address into one. The objects this is for keep no frame pointers, so the
 * stack is read word by word; the words read are the simulation thread's
 * own, above this frame (always mapped). */
__attribute__((noinline)) static int quiet_caller(int slot)
{
    const uintptr_t from = (uintptr_t)__builtin_frame_address(0);
    uintptr_t to = from + QUIET_SCAN_BYTES;
    if (askew__sim_stack_hi == 0 || from < askew__sim_stack_lo ||
        from >= askew__sim_stack_hi)
        return 0;
    if (to > askew__sim_stack_hi)
        to = askew__sim_stack_hi;
    for (uintptr_t at = from & ~(uintptr_t)(sizeof(uintptr_t) - 1);
         at + sizeof(uintptr_t) <= to; at += sizeof(uintptr_t)) {
        const uintptr_t w = *(const uintptr_t *)at;
        for (int q = 0; q < cache[slot].nquiet; q++)
            if (w > cache[slot].quiet[q].lo && w <= cache[slot].quiet[q].hi &&
                after_call(w, cache[slot].quiet[q].lo))
                return 1;
    }
    return 0;
}

/* The extension names the object's quiet functions, once. */
static void ask_quiet(const struct askew_preload_hooks *h, int slot, uintptr_t pc)
{
    Dl_info info;
    cache[slot].nquiet = 0;
    if (!askew__hooks_have(h, ASKEW_HOOKS_END(quiet_draws)) || h->quiet_draws == NULL ||
        dladdr((void *)pc, &info) == 0 || info.dli_fname == NULL)
        return;
    askew__t_hooks = NULL; /* the hook may read the object's file */
    int n = h->quiet_draws(h->ctx, info.dli_fname, (uintptr_t)info.dli_fbase,
                           cache[slot].quiet, QUIET_MAX);
    askew__t_hooks = h;
    cache[slot].nquiet = n < 0 ? 0 : n > QUIET_MAX ? QUIET_MAX : n;
}

int askew__sim_own_rng(const struct askew_preload_hooks *h, const void *ret)
{
    const uintptr_t pc = (uintptr_t)ret;
    int slot = -1;
    for (int i = 0; i < cache_used && slot < 0; i++)
        if (pc >= cache[i].lo && pc < cache[i].hi)
            slot = i;
    int saved = errno;
    if (slot < 0) {
        struct probe pr = {.pc = pc};
        dl_iterate_phdr(classify, &pr);
        /* This library holds the markers too, in the table above. */
        const uintptr_t self = (uintptr_t)&askew__sim_own_rng;
        const int own = pr.found && pr.marked && !(self >= pr.lo && self < pr.hi) &&
                        !exports_rand_bytes(&pr);
        if (!pr.found) {
            errno = saved;
            return own;
        }
        /* Past OWN_RNG_CACHE objects, the oldest entries make room. */
        slot = cache_used < OWN_RNG_CACHE ? cache_used++ : cache_next++;
        cache_next %= OWN_RNG_CACHE;
        cache[slot].lo = pr.lo;
        cache[slot].hi = pr.hi;
        cache[slot].own = own;
        cache[slot].nquiet = 0;
        if (own)
            ask_quiet(h, slot, pc);
    }
    const int refused =
        cache[slot].own && !(cache[slot].nquiet > 0 && quiet_caller(slot));
    errno = saved;
    return refused;
}
