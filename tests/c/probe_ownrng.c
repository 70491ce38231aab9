/* SPDX-License-Identifier: Apache-2.0 */
/* Looks, to the preload, like an object carrying its own OpenSSL: the DRBG
 * source name OpenSSL compiles into its error records is in its read-only
 * data, and it reads the clock and draws entropy itself, as that
 * generator does. check_preload dlopens it. */
#include <time.h>
#include <unistd.h>

__attribute__((used)) const char probe_ownrng_marker[] =
    "providers/implementations/rands/drbg.c";

__attribute__((visibility("default"))) time_t probe_ownrng_time(void)
{
    return time(NULL);
}

__attribute__((visibility("default"))) int probe_ownrng_getentropy(void *buf,
                                                                   size_t len)
{
    return getentropy(buf, len);
}
