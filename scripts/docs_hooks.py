# SPDX-License-Identifier: Apache-2.0
"""MkDocs hooks for the documentation site (mkdocs.yml names this file).

A page that holds the marker `<!-- askew:settings -->` gets the table of
every ASKEW_* variable and plugin option there, generated at build time
from askew/_loop/settings.py's SETTINGS, so the site never carries a copy
kept by hand.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from askew._loop.settings import settings_table

MARKER = "<!-- askew:settings -->"


def on_page_markdown(markdown: str, **_: Any) -> str:
    return markdown.replace(MARKER, settings_table()) if MARKER in markdown else markdown
