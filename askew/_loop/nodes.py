# SPDX-License-Identifier: Apache-2.0
"""Which node runs: the context variable that names the running node, which
the C loop reads on every step, and the layout of the token it holds
(id << TOKEN_SHIFT | incarnation, ext/node.h). A node's tasks inherit the
variable, so every layer asks it who is calling; the test body has none."""

from __future__ import annotations

import contextvars

from .. import _core

node_var: contextvars.ContextVar[int] = contextvars.ContextVar("askew_node")
TOKEN_SHIFT: int = _core.NODE_TOKEN_SHIFT
