# SPDX-License-Identifier: Apache-2.0
"""The one table of settings (askew/_loop/settings.py's SETTINGS): every
ASKEW_* variable askew reads is in it, every knob with its keyword, the
plugin's options are made from it, and the documentation's table is
generated from it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from askew._loop.config import RunConfig
from askew._loop.settings import (
    _DEVELOPER_VARIABLES,
    ENV_VARIABLES,
    KNOBS,
    SETTINGS,
    settings_table,
)

REPO = Path(__file__).resolve().parents[2]


def test_every_variable_the_code_reads_is_in_the_table() -> None:
    read: set[str] = set()
    for path in [*(REPO / "askew").rglob("*.py"), *(REPO / "preload").glob("*.c")]:
        text = path.read_text(encoding="utf-8")
        read |= set(
            re.findall(
                r"""(?:environ(?:\.get)?\(|getenv\(|environ\[)\s*["'](ASKEW_[A-Z_]+)""", text
            )
        )
    assert read, "found no ASKEW_* reads"
    listed = {s.variable for s in SETTINGS}
    assert read - listed - _DEVELOPER_VARIABLES == set()
    assert ENV_VARIABLES == listed | _DEVELOPER_VARIABLES
    assert len(listed) == len(SETTINGS)  # each once


def test_every_knob_is_a_setting_with_its_keyword() -> None:
    by_variable = {s.variable: s for s in SETTINGS}
    for field, (variable, _parse) in KNOBS.items():
        assert field in RunConfig.__dataclass_fields__
        setting = by_variable[variable]
        assert setting.keyword == field
        assert setting.option == "--askew-" + field.replace("_", "-")


def test_the_plugin_has_an_option_for_each_setting_that_names_one(
    pytestconfig: pytest.Config,
) -> None:
    for setting in SETTINGS:
        if setting.option is not None:
            dest = setting.option.lstrip("-").replace("-", "_")
            pytestconfig.getoption(dest)  # ValueError if no such option


def test_the_documentation_table_lists_every_setting() -> None:
    table = settings_table()
    rows = [line for line in table.splitlines() if line.startswith("| `ASKEW_")]
    assert [row.split("`")[1] for row in rows] == [s.variable for s in SETTINGS]
    page = (REPO / "docs" / "settings.md").read_text(encoding="utf-8")
    assert "<!-- askew:settings -->" in page
    for row in rows:  # a pipe in a cell would split it
        assert row.count(" | ") == 3, row
