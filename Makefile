# SPDX-License-Identifier: Apache-2.0
# The developer's front door: make, make test, make lint, make asan, make bench.

include preload/build.mk

PYTHON ?= .venv/bin/python
CC ?= cc
BUILD := build/c
CHECK_CFLAGS = $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS = $(shell pkg-config --libs check 2>/dev/null)
CFLAGS_C = $(ASKEW_WARN) -O1 -g -Iext/engine -Ipreload $(CHECK_CFLAGS) $(EXTRA_CFLAGS)
LDLIBS_C = $(CHECK_LIBS) -ldl -lpthread $(EXTRA_LDFLAGS)

ENGINE_SRC := $(sort $(wildcard ext/engine/*.c))
ENGINE_HDR := $(wildcard ext/engine/*.h)
CHECK_ENGINE_SRC := $(filter-out tests/c/check_preload%.c,$(sort $(wildcard tests/c/check_*.c)))
C_SOURCES := $(wildcard ext/*.c ext/*.h ext/engine/*.c ext/engine/*.h preload/*.c preload/*.h tests/c/*.c tests/c/*.h)

.PHONY: all build demo docs test test-c test-py test-browser test-installed lint asan bench clean fuzz

all: build

# A fresh checkout: apt packages and the venv with the dev extra.
.venv/bin/python:
	bash ci/install-deps.sh

build: .venv/bin/python
	$(PYTHON) setup.py -q build_ext --inplace

# The quickstart: it must find its bug, and the demo says so with its seed
# and replay line (scripts/demo.py).
demo: build
	$(PYTHON) scripts/demo.py

# The documentation site (mkdocs.yml): docs/ with an API reference read from
# the docstrings and the table of settings generated from the code; any
# warning fails it. The tools are the `docs` extra (ci/install-deps.sh).
docs: build
	NO_MKDOCS_2_WARNING=1 $(PYTHON) -m mkdocs build --strict

# The timeline's tests that open the page in a real headless Chromium (they
# skip, saying why, where there is none): Debian's chromium, then those tests.
test-browser: build
	WITH_CHROMIUM=1 bash ci/install-deps.sh
	$(PYTHON) -m pytest -q tests/report/test_timeline.py

$(BUILD)/check_engine: $(ENGINE_SRC) $(ENGINE_HDR) $(CHECK_ENGINE_SRC) tests/c/hang_guard.h
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS_C) -o $@ $(ENGINE_SRC) $(CHECK_ENGINE_SRC) $(LDLIBS_C)

$(BUILD)/fuzz_engine: $(ENGINE_SRC) $(ENGINE_HDR) tests/c/fuzz_engine.c
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS_C) -o $@ $(ENGINE_SRC) tests/c/fuzz_engine.c $(LDLIBS_C)

test: test-c test-py

# The engine fuzz target runs a bounded number of inputs here; `make fuzz`
# runs many more (FUZZ_ITERATIONS, FUZZ_SEED), under ASan and UBSan.
FUZZ_CI_ITERATIONS ?= 300
test-c: .venv/bin/python $(BUILD)/check_engine $(BUILD)/fuzz_engine
	$(BUILD)/check_engine
	$(BUILD)/fuzz_engine $(FUZZ_CI_ITERATIONS) 1
	@if [ -f tests/c/preload.mk ]; then $(MAKE) -f tests/c/preload.mk PYTHON=$(PYTHON) check-preload; fi

test-py: build
	$(PYTHON) -m pytest -q

# A wheel built and installed into a fresh venv outside the tree, tested there
# (outside, so that neither the checkout nor its pyproject.toml is in sight).
INSTALLED ?= /tmp/askew-test-installed
test-installed: .venv/bin/python
	rm -rf $(INSTALLED) && mkdir -p $(INSTALLED)
	$(PYTHON) -m venv $(INSTALLED)/venv
	$(INSTALLED)/venv/bin/pip install -q pytest pytest-asyncio anyio pytest-timeout pytest-xdist
	$(PYTHON) -m pip wheel -q --no-deps --no-build-isolation -w $(INSTALLED)/dist .
	$(INSTALLED)/venv/bin/pip install -q $(INSTALLED)/dist/*.whl
	cp -r tests examples README.md $(INSTALLED)/
	printf '[pytest]\nasyncio_default_fixture_loop_scope = function\n' > $(INSTALLED)/pytest.ini
	cd $(INSTALLED) && ASKEW_TEST_INSTALLED=1 venv/bin/python -m pytest -q -p no:cacheprovider tests

BIN = $(dir $(PYTHON))
lint: .venv/bin/python
	$(BIN)clang-format --dry-run -Werror $(filter %.c %.h,$(C_SOURCES))
	$(BIN)cppcheck --quiet --library=python --error-exitcode=1 --enable=warning,performance,portability \
		--inline-suppr --suppress=missingIncludeSystem -D__GNUC__ -Iext/engine -Ipreload ext preload tests/c
	$(PYTHON) -m ruff check askew tests bench examples scripts setup.py
	$(PYTHON) -m ruff format --check askew tests bench examples scripts setup.py
	$(PYTHON) -m mypy
	$(PYTHON) scripts/check_includes.py
	$(PYTHON) scripts/check_layers.py

FUZZ_ITERATIONS ?= 200000
FUZZ_SEED ?= $(shell date +%s)
fuzz:
	@mkdir -p $(BUILD)/fuzz
	$(CC) $(CFLAGS_C) -fsanitize=address,undefined -fno-sanitize-recover=all \
		-fno-omit-frame-pointer -o $(BUILD)/fuzz/fuzz_engine $(ENGINE_SRC) tests/c/fuzz_engine.c \
		$(LDLIBS_C) -fsanitize=address,undefined
	$(BUILD)/fuzz/fuzz_engine $(FUZZ_ITERATIONS) $(FUZZ_SEED)

# ASan + UBSan: both suites. The extension needs libasan preloaded before Python.
asan:
	$(MAKE) clean
	$(MAKE) $(BUILD)/check_engine EXTRA_CFLAGS="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer" EXTRA_LDFLAGS="-fsanitize=address,undefined"
	$(BUILD)/check_engine
	rm -rf build/c/preload
	$(MAKE) -f tests/c/preload.mk check-preload EXTRA_CFLAGS="-fsanitize=undefined -fno-sanitize-recover=all" EXTRA_LDFLAGS="-fsanitize=undefined"
	rm -rf build/c/preload
	ASKEW_SANITIZE=address,undefined $(PYTHON) setup.py -q build_ext --inplace --force
	LD_PRELOAD="$$($(CC) -print-file-name=libasan.so) $$($(CC) -print-file-name=libubsan.so)" \
		ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		ASKEW_ASAN=1 $(PYTHON) -m pytest -q -x
	$(MAKE) clean build

bench: build
	$(PYTHON) bench/vs_release.py --rounds 3
	$(PYTHON) bench/run_all.py

clean:
	rm -rf build askew/*.so askew/__pycache__ *.egg-info
