# SPDX-License-Identifier: Apache-2.0
"""Builds askew._core from ext/ and links libaskew-preload.so from preload/.

The preload is not an Extension: that would give it Python's flags and an
importable name. It is linked with the same compiler object in build_ext,
with the flags in preload/build.mk (which make reads too), and never sees
libpython.
"""

import os
import re
import shlex
from glob import glob
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).parent


def _build_mk() -> dict[str, list[str]]:
    """preload/build.mk's `NAME = words` lines: the flags make uses too."""
    text = (HERE / "preload" / "build.mk").read_text()
    lines = (line.split("=", 1) for line in text.splitlines() if re.match(r"\w+ =", line))
    return {name.strip(): shlex.split(value) for name, value in lines}


BUILD_MK = _build_mk()
WARN = BUILD_MK["ASKEW_WARN"]
DEBUG = os.environ.get("ASKEW_DEBUG_BUILD") == "1"
SANITIZE = os.environ.get("ASKEW_SANITIZE", "")  # e.g. "address,undefined"


def _flags() -> tuple[list[str], list[str]]:
    cflags = WARN + (["-O0", "-g", "-UNDEBUG"] if DEBUG else ["-O2"])
    ldflags: list[str] = []
    if SANITIZE:
        cflags += [f"-fsanitize={SANITIZE}", "-fno-omit-frame-pointer", "-fno-sanitize-recover=all"]
        ldflags += [f"-fsanitize={SANITIZE}"]
    return cflags, ldflags


class BuildExtWithPreload(build_ext):
    def run(self) -> None:
        super().run()
        self._link_preload()

    def _link_preload(self) -> None:
        sources = sorted(glob("preload/*.c"))
        if not sources:
            return
        cflags, ldflags = _flags()
        objects = self.compiler.compile(
            sources,
            output_dir=self.build_temp,
            extra_preargs=BUILD_MK["PRELOAD_CFLAGS"],
            extra_postargs=cflags,
        )
        # The build tree copy, and the in-place copy beside askew/ for `make`.
        target = Path(self.get_ext_fullpath("askew._core")).parent / "libaskew-preload.so"
        target.parent.mkdir(parents=True, exist_ok=True)
        self.compiler.link_shared_object(
            objects,
            str(target),
            extra_preargs=BUILD_MK["PRELOAD_LDFLAGS"],
            extra_postargs=[*ldflags, *BUILD_MK["PRELOAD_LIBS"]],
            target_lang="c",
        )


cflags, ldflags = _flags()
setup(
    ext_modules=[
        Extension(
            "askew._core",
            sources=sorted(glob("ext/*.c")) + sorted(glob("ext/engine/*.c")),
            include_dirs=["ext", "ext/engine", "preload"],
            depends=sorted(glob("ext/*.h") + glob("ext/engine/*.h") + glob("preload/*.h")),
            extra_compile_args=cflags,
            extra_link_args=[*ldflags, "-ldl"],
        )
    ],
    cmdclass={"build_ext": BuildExtWithPreload},
)
