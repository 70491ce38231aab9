# SPDX-License-Identifier: Apache-2.0
"""Where libaskew-preload.so lives, and whether this process runs under it.

Finds the packaged library with importlib.resources, refuses a path that
LD_PRELOAD cannot carry (glibc splits the variable on spaces and colons),
and builds the LD_PRELOAD value askew-exec hands on. It never loads the
library itself: a dlopen'ed copy would interpose nothing.
"""

from __future__ import annotations

import importlib
import importlib.resources
import os
from typing import Any

LIBRARY_NAME = "libaskew-preload.so"

__all__ = [
    "LIBRARY_NAME",
    "PreloadPathError",
    "check_preload_path",
    "ld_preload_with",
    "library_path",
    "preload_active",
    "preload_status",
]


class PreloadPathError(RuntimeError):
    """The packaged preload is missing, or sits at a path LD_PRELOAD cannot carry."""


def check_preload_path(path: str) -> str:
    """Return `path` if LD_PRELOAD can carry it; raise PreloadPathError naming it if not."""
    for ch, name in ((" ", "a space"), (":", "a colon"), ("\t", "a tab"), ("\n", "a newline")):
        if ch in path:
            raise PreloadPathError(
                f"askew's preload is installed at {path!r}, which contains {name}; "
                "LD_PRELOAD splits on spaces and colons, so it cannot be preloaded from "
                "there. Install askew into an environment whose path has neither."
            )
    return path


def library_path() -> str:
    """The absolute path of the packaged libaskew-preload.so, checked for LD_PRELOAD."""
    resource = importlib.resources.files("askew") / LIBRARY_NAME
    path = os.path.abspath(os.fspath(resource))  # type: ignore[call-overload]
    if not os.path.isfile(path):
        raise PreloadPathError(
            f"askew's preload is missing: expected {path!r}. Reinstall askew, or run "
            "`make` in a source checkout to build it in place."
        )
    return check_preload_path(path)


def ld_preload_with(existing: str | None, library: str) -> str:
    """LD_PRELOAD with `library` after any existing entries (a sanitizer runtime stays first)."""
    entries = [e for e in (existing or "").replace(":", " ").split() if e]
    if library not in entries:
        entries.append(library)
    return ":".join(entries)


def _core() -> Any:
    try:
        return importlib.import_module("askew._core")
    except ImportError:
        return None


def preload_active() -> bool:
    """True when libaskew-preload.so is loaded into this process and comes first in lookup.

    Then C code (third-party extensions included) sees virtual time and seeded
    entropy inside a simulation, and its threads, processes, sockets and
    sleeps are refused. Run under `askew-exec` to make this true.
    """
    core = _core()
    if core is None or not hasattr(core, "preload_active"):
        return False
    return bool(core.preload_active())


def preload_status() -> dict[str, Any]:
    """What askew._core found: found, active, path and the self-test message."""
    core = _core()
    if core is None or not hasattr(core, "preload_status"):
        return {
            "found": False,
            "active": False,
            "path": None,
            "self_test": "askew._core is not built",
        }
    return dict(core.preload_status())
