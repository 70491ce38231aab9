#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Everything the tests need on a fresh Debian machine: the C test framework,
# pkg-config, the linters' native parts, and a venv with the dev, cluster,
# sockets (aiohttp, aiodns) and docs (MkDocs) extras; with WITH_CHROMIUM=1,
# Chromium too.
set -euo pipefail
cd "$(dirname "$0")/.."
if command -v apt-get >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq check pkg-config gcc make binutils >/dev/null
    # The timeline's browser tests open a page in a real headless Chromium:
    # installed only when asked (CI and `make test-browser` set WITH_CHROMIUM=1);
    # elsewhere those tests skip and say why.
    if [ "${WITH_CHROMIUM:-0}" = 1 ]; then
        $SUDO apt-get install -y -qq chromium >/dev/null
    fi
fi
PY=${PYTHON_FOR_VENV:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/pip install -q --upgrade pip setuptools wheel
.venv/bin/pip install -q -e '.[dev,cluster,sockets,docs]'
