/* SPDX-License-Identifier: Apache-2.0 */
/* A stand-in for libaskew-preload.so from another ABI major: it exports
 * the control API's entry point and answers only for major 2 (as 2.0),
 * interposing nothing. askew._core must find it, name both versions and
 * this file's path, and refuse to enter a run rather than run without
 * one. Built by tests/test_preload.py. */
#include "askew_preload.h"

static const struct askew_preload_api api_2 = {
    .size = sizeof(struct askew_preload_api),
    .abi_minor = 0,
};

__attribute__((visibility("default"))) const struct askew_preload_api *
askew_preload_get_api(uint32_t abi_major)
{
    return abi_major == 2 ? &api_2 : NULL;
}
