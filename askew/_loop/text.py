# SPDX-License-Identifier: Apache-2.0
"""Text made from user objects, safely: a repr that survives any __repr__,
its short form, and the digest of a log text that feeds the trace hash.
Every layer's reports and log entries go through these; they never raise."""

from __future__ import annotations

import zlib
from collections.abc import Callable


def safe_repr(obj: object, convert: Callable[[object], object] = repr) -> str:
    """repr(obj) (or str(obj), with convert=str), or a stand-in naming its
    type when the user's __repr__/__str__ raises or returns a non-str: a
    failure report must never be replaced by an error in it."""
    try:
        text = convert(obj)
        if isinstance(text, str):
            return text
        problem = f"returned {type(text).__name__}"
    except Exception as exc:  # any user __repr__, whatever it raises
        problem = f"raised {type(exc).__name__}"
    method = "__str__" if convert is str else "__repr__"
    return f"<{type(obj).__name__} object; its {method} {problem}>"


def short_repr(obj: object, limit: int = 48) -> str:
    text = safe_repr(obj)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def digest(text: str) -> int:
    """A digest of a log text for the trace hash: the same in every process
    (Python's own hash of a str is not)."""
    return zlib.crc32(text.encode("utf-8", "backslashreplace"))
