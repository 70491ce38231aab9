/* SPDX-License-Identifier: Apache-2.0 */
/* Temporary names: mkstemp, mkostemp, mkstemps, mkostemps (and the ...64
 * names C code built with _FILE_OFFSET_BITS=64 calls), mkdtemp and mktemp.
 * glibc fills the template's XXXXXX from the kernel's entropy inside libc,
 * where no interposer sees it, so the names would differ in every process.
 * Inside a run the six letters come from the run's entropy stream instead,
 * and the file or directory is made through the open and mkdir
 * interposers, so a template under a node's disk mount lands on its
 * simulated disk. A name that exists already is drawn again, as glibc
 * does, up to glibc's bound (TMP_MAX), so a replay in a directory that
 * still holds the first run's files draws further. Outside a run every
 * call is libc's. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hook_random.h"
#include "internal.h"

/* glibc's alphabet, and its TMP_MAX (62 ** 3 attempts). */
static const char letters[] =
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
#define ATTEMPTS_MAX 238328

enum make { MAKE_FILE, MAKE_DIR, MAKE_NAME };

/* glibc's __gen_tempname with the run's entropy: the fd for a file, 0 for
 * a directory or a name, or -1 and errno (EINVAL for a template without
 * six X before its suffix, EEXIST when every attempt was taken). */
static int sim_temp(const struct askew_preload_hooks *h, char *tmpl, int suffixlen,
                    int flags, enum make make)
{
    const size_t len = ASKEW_LAUNDER(tmpl) != NULL ? strlen(tmpl) : 0;
    if (suffixlen < 0 || len < 6 + (size_t)suffixlen ||
        memcmp(tmpl + len - (size_t)suffixlen - 6, "XXXXXX", 6) != 0) {
        errno = EINVAL;
        return -1;
    }
    char *x = tmpl + len - (size_t)suffixlen - 6;
    for (int attempt = 0; attempt < ATTEMPTS_MAX; attempt++) {
        unsigned char r[6];
        if (askew__sim_getrandom(h, r, sizeof(r), 0) != (long)sizeof(r))
            return -1;
        for (int i = 0; i < 6; i++)
            x[i] = letters[r[i] % (sizeof(letters) - 1)];
        struct stat st;
        switch (make) {
        case MAKE_FILE: {
            int fd = open(tmpl, (flags & ~O_ACCMODE) | O_RDWR | O_CREAT | O_EXCL, 0600);
            if (fd >= 0)
                return fd;
            break;
        }
        case MAKE_DIR:
            if (mkdir(tmpl, 0700) == 0)
                return 0;
            break;
        case MAKE_NAME:
            if (lstat(tmpl, &st) != 0)
                return errno == ENOENT ? 0 : -1;
            errno = EEXIST;
            break;
        }
        if (errno != EEXIST)
            return -1;
    }
    errno = EEXIST;
    return -1;
}

#define TEMP_BODY(name, suffixlen, flags, call_real)                                   \
    const struct askew_preload_hooks *h = askew__t_hooks;                              \
    if (ASKEW_UNLIKELY(h != NULL))                                                     \
        return sim_temp(h, tmpl, (suffixlen), (flags), MAKE_FILE);                     \
    __typeof__(&name) real = REAL(name);                                               \
    if (ASKEW_LIKELY(real != NULL))                                                    \
        return call_real;                                                              \
    errno = EEXIST;                                                                    \
    return -1

ASKEW_EXPORT int mkstemp(char *tmpl)
{
    TEMP_BODY(mkstemp, 0, 0, real(tmpl));
}

ASKEW_EXPORT int mkostemp(char *tmpl, int flags)
{
    TEMP_BODY(mkostemp, 0, flags, real(tmpl, flags));
}

ASKEW_EXPORT int mkstemps(char *tmpl, int suffixlen)
{
    TEMP_BODY(mkstemps, suffixlen, 0, real(tmpl, suffixlen));
}

ASKEW_EXPORT int mkostemps(char *tmpl, int suffixlen, int flags)
{
    TEMP_BODY(mkostemps, suffixlen, flags, real(tmpl, suffixlen, flags));
}

ASKEW_EXPORT char *mkdtemp(char *tmpl)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_UNLIKELY(h != NULL))
        return sim_temp(h, tmpl, 0, 0, MAKE_DIR) == 0 ? tmpl : NULL;
    char *(*real)(char *) = REAL(mkdtemp);
    if (ASKEW_LIKELY(real != NULL))
        return real(tmpl);
    errno = EEXIST;
    return NULL;
}

ASKEW_EXPORT char *mktemp(char *tmpl)
{
    const struct askew_preload_hooks *h = askew__t_hooks;
    if (ASKEW_UNLIKELY(h != NULL)) {
        if (sim_temp(h, tmpl, 0, 0, MAKE_NAME) != 0 && ASKEW_LAUNDER(tmpl) != NULL)
            tmpl[0] = '\0'; /* mktemp's failure */
        return tmpl;
    }
    char *(*real)(char *) = REAL(mktemp);
    if (ASKEW_LIKELY(real != NULL))
        return real(tmpl);
    if (ASKEW_LAUNDER(tmpl) != NULL)
        tmpl[0] = '\0';
    return tmpl;
}

/* The _FILE_OFFSET_BITS=64 names: the same functions on 64-bit targets. */
int askew_mkstemp64(char *tmpl) __asm__("mkstemp64");
int askew_mkostemp64(char *tmpl, int flags) __asm__("mkostemp64");
int askew_mkstemps64(char *tmpl, int suffixlen) __asm__("mkstemps64");
int askew_mkostemps64(char *tmpl, int suffixlen, int flags) __asm__("mkostemps64");

ASKEW_EXPORT int askew_mkstemp64(char *tmpl)
{
    return mkstemp(tmpl);
}

ASKEW_EXPORT int askew_mkostemp64(char *tmpl, int flags)
{
    return mkostemp(tmpl, flags);
}

ASKEW_EXPORT int askew_mkstemps64(char *tmpl, int suffixlen)
{
    return mkstemps(tmpl, suffixlen);
}

ASKEW_EXPORT int askew_mkostemps64(char *tmpl, int suffixlen, int flags)
{
    return mkostemps(tmpl, suffixlen, flags);
}
