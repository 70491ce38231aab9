# SPDX-License-Identifier: Apache-2.0
"""Where libaskew-preload.so lives, and whether this process runs under it.

Finds the packaged library in askew's directory, refuses a path that
LD_PRELOAD cannot carry (glibc splits the variable on spaces and colons),
and builds the LD_PRELOAD value askew-exec hands on. It never loads the
library itself: a dlopen'ed copy would interpose nothing. It also carries
what the preload needs of Python and what it leaves for Python: the note
a death after a refusal prints (`note_test`), the records such a death
leaves (`take_crash_records`), the names of C frames (`symbolize`), and the
functions of an object with its own OpenSSL whose draws reach no output
(`quiet_draws`).
"""

from __future__ import annotations

import bisect
import functools
import importlib
import os
import struct

TYPE_CHECKING = False  # not typing's, which askew-exec's start-up would pay for
if TYPE_CHECKING:
    from typing import Any

LIBRARY_NAME = "libaskew-preload.so"

__all__ = [
    "CRASH_DIR",
    "LIBRARY_NAME",
    "PreloadPathError",
    "check_preload_path",
    "keep_stderr",
    "ld_preload_with",
    "library_path",
    "note_test",
    "preload_active",
    "preload_status",
    "quiet_draws",
    "symbolize",
    "take_crash_records",
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
    # In the package's top directory, as importlib.resources.files("askew") would find it
    # for any installation LD_PRELOAD can use (a zip cannot be preloaded),
    # without the 5 ms importlib.resources costs askew-exec's start.
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.path.join(package, LIBRARY_NAME)
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


def _core_module() -> Any:
    """askew._core, or None where the extension is not built."""
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
    core = _core_module()
    if core is None or not hasattr(core, "preload_active"):
        return False
    return bool(core.preload_active())


def preload_status() -> dict[str, Any]:
    """What askew._core found: found, active, path and the self-test message."""
    core = _core_module()
    if core is None or not hasattr(core, "preload_status"):
        return {
            "found": False,
            "active": False,
            "path": None,
            "self_test": "askew._core is not built",
        }
    return dict(core.preload_status())


# ---- a death after a refusal ------------------------------------------------------

# Under the seed database's directory: the records the preload leaves when a
# process dies of a fatal signal after a refusal (preload/hook_death.c).
CRASH_DIR = "crashes"


def keep_stderr() -> int | None:
    """A copy of stderr as it is now, for a death report to reach when fd 2
    is captured later (pytest captures it after loading its plugins, and the
    capture dies with the process); None when it cannot be had."""
    try:
        return os.dup(2)
    except OSError:
        return None


def note_test(
    nodeid: str | None,
    replay: str = "",
    directory: str | None = None,
    report_fd: int | None = None,
) -> None:
    """What a death after a refusal reports, from now until the next call:
    the test's node id, its replay command ("{seed}" stands for the seed),
    the directory the record goes to (None: printed only) and the fd the
    report is written to (None: 2). None as the node id: nothing but the
    seed, on fd 2. A no-op without the extension."""
    core = _core_module()
    if core is None or not hasattr(core, "_preload_note"):
        return
    if nodeid is None:
        core._preload_note(None)
        return
    lines = [f"test={nodeid}", f"replay={replay}"]
    if directory is not None:
        lines.append(f"dir={directory}")
    if report_fd is not None:
        lines.append(f"fd={report_fd}")
    text = "\n".join(line.replace("\n", " ") for line in lines) + "\n"
    try:
        core._preload_note(text)
    except ValueError:  # a note too long for the preload's buffer: the seed alone
        core._preload_note(None)


def take_crash_records(directory: str) -> list[dict[str, str]]:
    """The records deaths after a refusal left in `directory`, oldest first,
    each removed once read: "seed", "signal", "refused", and (when the test
    was noted) "test" and "replay". A record that cannot be read is skipped;
    a missing directory has none."""
    try:
        entries = [e for e in os.scandir(directory) if e.name.startswith("crash-")]
    except OSError:
        return []
    records: list[dict[str, str]] = []
    for entry in sorted(entries, key=lambda e: (e.stat().st_mtime_ns, e.name)):
        if not entry.name.endswith(".txt"):
            continue
        try:
            with open(entry.path, encoding="utf-8", errors="replace") as f:
                text = f.read()
            os.unlink(entry.path)
        except OSError:
            continue
        record = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
        if record.get("seed", "").isdigit():
            records.append(record)
    return records


# ---- naming C callers ---------------------------------------------------------

_SHT_SYMTAB = 2
_STT_FUNC = 2
_ET_EXEC = 2
_PT_LOAD = 1


@functools.lru_cache(maxsize=64)
def _functions(path: str) -> tuple[list[int], list[tuple[int, int, str]]]:
    """Sorted (start, size, name) of every function in `path`'s .symtab, static
    ones included, with addresses relative to the load base; empty when the file
    is stripped, is not a 64-bit little-endian ELF file, or cannot be read."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return [], []
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return [], []
    e_type = struct.unpack_from("<H", data, 16)[0]
    e_phoff, e_shoff = struct.unpack_from("<QQ", data, 32)
    e_phentsize, e_phnum, e_shentsize, e_shnum = struct.unpack_from("<HHHH", data, 54)
    base = 0
    if e_type == _ET_EXEC:  # not position-independent: dladdr's base is the first load
        loads = [
            struct.unpack_from("<Q", data, e_phoff + i * e_phentsize + 16)[0]
            for i in range(e_phnum)
            if struct.unpack_from("<I", data, e_phoff + i * e_phentsize)[0] == _PT_LOAD
        ]
        base = min(loads, default=0) & ~0xFFF
    sections = [
        struct.unpack_from("<IIQQQQIIQQ", data, e_shoff + i * e_shentsize) for i in range(e_shnum)
    ]
    funcs: list[tuple[int, int, str]] = []
    for sh in sections:
        if sh[1] != _SHT_SYMTAB:
            continue
        offset, size, link, entsize = sh[4], sh[5], sh[6], sh[9] or 24
        strtab = sections[link][4]
        for at in range(offset, offset + size, entsize):
            name, info, _other, shndx, value, sym_size = struct.unpack_from("<IBBHQQ", data, at)
            if info & 0xF != _STT_FUNC or shndx == 0 or value == 0:
                continue
            end = data.index(b"\0", strtab + name)
            funcs.append((value - base, sym_size, data[strtab + name : end].decode()))
    funcs.sort()
    return [start for start, _, _ in funcs], funcs


def symbolize(path: str, address: int) -> str | None:
    """ "function+0x1f" for a return address `address` bytes past `path`'s load
    base, from the file's own symbol table (so static functions, which dladdr
    cannot name, are named too); None when the table does not cover it."""
    starts, funcs = _functions(path)
    i = bisect.bisect_right(starts, address - 1) - 1
    if i < 0:
        return None
    start, size, name = funcs[i]
    if size and address - 1 >= start + size:
        return None
    return f"{name}+{address - start:#x}"


# Functions of an object carrying its own OpenSSL whose random draws never
# reach what it makes: RSA's blinding factor is drawn and divided out again,
# so a PKCS#1 v1.5 signature is the same whatever was drawn. A clock or
# entropy read with one of them among its C callers is not refused
# (preload/hook_ownrng.c asks ext/preload.c, which asks here).
QUIET_DRAWS = frozenset({"BN_BLINDING_create_param"})


def quiet_draws(path: str) -> list[tuple[int, int]]:
    """(start, size) past `path`'s load base of each of its QUIET_DRAWS
    functions, from its symbol table; empty when it has none."""
    _starts, funcs = _functions(path)
    return [(start, size) for start, size, name in funcs if name in QUIET_DRAWS and size]
