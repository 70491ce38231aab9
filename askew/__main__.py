# SPDX-License-Identifier: Apache-2.0
"""`python -m askew`: the `askew` command (askew sweep ...); see askew._sweep."""

import sys

from ._run.sweep import main

if __name__ == "__main__":
    sys.exit(main())
