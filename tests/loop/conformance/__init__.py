# SPDX-License-Identifier: Apache-2.0
"""The conformance suite: what asyncio promises about its loop, checked on stock asyncio and on
askew's SimLoop. A package, so that its conftest is `conformance.conftest` beside the suite's
top-level `conftest`."""
