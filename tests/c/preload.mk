# SPDX-License-Identifier: Apache-2.0
# Builds libaskew-preload.so with the flags setup.py uses (preload/build.mk), the Check suite
# for it and its probe programs, and runs the suite under LD_PRELOAD (set on
# the test binary's command only, never for make itself). Called by
# `make test-c` as `$(MAKE) -f tests/c/preload.mk check-preload`.

PYTHON ?= python3
CC ?= cc
OUT := build/c/preload
LIB := $(OUT)/libaskew-preload.so
PRELOAD_SRC := $(sort $(wildcard preload/*.c))
PRELOAD_HDR := $(wildcard preload/*.h)
include preload/build.mk
LIB_CFLAGS := $(ASKEW_WARN) $(PRELOAD_CFLAGS) $(EXTRA_CFLAGS)
LIB_LDFLAGS := $(PRELOAD_LDFLAGS) $(EXTRA_LDFLAGS)
CHECK_CFLAGS := $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS := $(shell pkg-config --libs check 2>/dev/null)
TEST_CFLAGS := $(ASKEW_WARN) -O1 -g -fno-omit-frame-pointer -Ipreload $(EXTRA_CFLAGS)

PROBES := $(OUT)/probe_ctor $(OUT)/probe_selftest $(OUT)/probe_fallback $(OUT)/probe_shadow.so $(OUT)/probe_inert.so \
	$(OUT)/probe_ownrng.so

.PHONY: check-preload preload-lib

preload-lib: $(LIB)

$(LIB): $(PRELOAD_SRC) $(PRELOAD_HDR) preload/fns.def preload/preload.map preload/build.mk
	@mkdir -p $(OUT)
	$(CC) $(LIB_CFLAGS) $(LIB_LDFLAGS) -o $@ $(PRELOAD_SRC) $(PRELOAD_LIBS)

$(OUT)/check_preload $(OUT)/check_preload_hermetic $(OUT)/check_preload_threads: $(OUT)/%: tests/c/%.c tests/c/preload_fixture.h tests/c/hang_guard.h preload/askew_preload.h
	@mkdir -p $(OUT)
	$(CC) $(TEST_CFLAGS) $(CHECK_CFLAGS) -rdynamic -o $@ $< $(CHECK_LIBS) -ldl -lpthread

$(OUT)/libprobe_ctor.so: tests/c/probe_ctor_lib.c
	@mkdir -p $(OUT)
	$(CC) $(TEST_CFLAGS) -fPIC -shared -o $@ $< -lpthread

$(OUT)/probe_ctor: tests/c/probe_ctor.c $(OUT)/libprobe_ctor.so
	$(CC) $(TEST_CFLAGS) -o $@ $< -L$(OUT) -lprobe_ctor -Wl,-rpath,'$$ORIGIN'

$(OUT)/probe_selftest $(OUT)/probe_fallback: $(OUT)/%: tests/c/%.c preload/askew_preload.h
	@mkdir -p $(OUT)
	$(CC) $(TEST_CFLAGS) -o $@ $< -ldl

$(OUT)/%.so: tests/c/%.c
	@mkdir -p $(OUT)
	$(CC) $(TEST_CFLAGS) -fPIC -shared -o $@ $< -ldl

check-preload: $(LIB) $(OUT)/check_preload $(OUT)/check_preload_hermetic $(OUT)/check_preload_threads $(PROBES)
	LD_PRELOAD=$(abspath $(LIB)) ASKEW_PROBE_DIR=$(abspath $(OUT)) $(OUT)/check_preload
	LD_PRELOAD=$(abspath $(LIB)) $(OUT)/check_preload_hermetic
	LD_PRELOAD=$(abspath $(LIB)) $(OUT)/check_preload_threads
