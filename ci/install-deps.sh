#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Everything the tests need on a fresh Debian machine: the C test framework,
# pkg-config, the linters' native parts, and a venv with the dev, cluster and
# sockets (aiohttp, aiodns) extras.
set -euo pipefail
cd "$(dirname "$0")/.."
if command -v apt-get >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq check pkg-config gcc make binutils >/dev/null
    # The timeline test opens a page in a real headless browser.
    $SUDO apt-get install -y -qq chromium >/dev/null
fi
PY=${PYTHON_FOR_VENV:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/pip install -q --upgrade pip setuptools wheel
.venv/bin/pip install -q -e '.[dev,cluster,sockets]'
