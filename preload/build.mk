# SPDX-License-Identifier: Apache-2.0
# The preload's build flags, and the warnings every C file of askew is built
# with, in one place: the Makefile and tests/c/preload.mk include this file
# and setup.py reads it. Keep to `NAME = words` lines (no make functions, no
# references): setup.py splits each value like a shell would, nothing more.

ASKEW_WARN = -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror
# Hidden by default (preload.map exports the interposers), static TLS.
PRELOAD_CFLAGS = -O2 -fPIC -fvisibility=hidden -ftls-model=initial-exec
PRELOAD_LDFLAGS = -shared -Wl,--version-script=preload/preload.map -Wl,-z,defs -Wl,-z,now -Wl,-z,relro
PRELOAD_LIBS = -ldl -lpthread
