/* SPDX-License-Identifier: Apache-2.0 */
/* Prints askew's self_test message and exits 0 (passed), 1 (failed) or 2
 * (no API found). With an argument, dlopens that path with RTLD_GLOBAL
 * first, the way a ctypes.CDLL load would, instead of relying on
 * LD_PRELOAD. */
#include <dlfcn.h>
#include <stdio.h>

#include "askew_preload.h"

int main(int argc, char **argv)
{
    if (argc > 1 && dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL) == NULL) {
        printf("dlopen failed: %s\n", dlerror());
        return 2;
    }
    askew_preload_get_api_fn get =
        (askew_preload_get_api_fn)dlsym(RTLD_DEFAULT, ASKEW_PRELOAD_GET_API);
    const struct askew_preload_api *api = get ? get(ASKEW_PRELOAD_ABI_MAJOR) : NULL;
    if (api == NULL) {
        printf("no preload API\n");
        return 2;
    }
    char msg[512];
    int rc = api->self_test(msg, sizeof(msg));
    printf("%s\n", msg);
    return rc == 0 ? 0 : 1;
}
