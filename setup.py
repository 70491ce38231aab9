# SPDX-License-Identifier: Apache-2.0
"""Builds askew._core from ext/ and links libaskew-preload.so from preload/.

The preload is not an Extension: that would give it Python's flags and an
importable name. It is linked with the same compiler object in build_ext,
with -Wl,-z,defs and the version script, and never sees libpython.
"""

import os
from glob import glob
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).parent
WARN = ["-Wall", "-Wextra", "-Werror", "-std=c11", "-D_GNU_SOURCE"]
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
            extra_preargs=["-fPIC", "-fvisibility=hidden", "-ftls-model=initial-exec"],
            extra_postargs=cflags,
        )
        # The build tree copy, and the in-place copy beside askew/ for `make`.
        target = Path(self.get_ext_fullpath("askew._core")).parent / "libaskew-preload.so"
        target.parent.mkdir(parents=True, exist_ok=True)
        self.compiler.link_shared_object(
            objects,
            str(target),
            extra_preargs=[
                "-shared",
                "-Wl,--version-script=preload/preload.map",
                "-Wl,-z,defs",
                "-Wl,-z,now",
                "-Wl,-z,relro",
            ],
            extra_postargs=[*ldflags, "-ldl", "-lpthread"],
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
