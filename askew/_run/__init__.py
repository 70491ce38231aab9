# SPDX-License-Identifier: Apache-2.0
"""Running: simulate and Replay, the seed database, sweeps, the pytest plugin, wrap mode
and the askew / askew-exec commands. The top: imports any layer below.
"""
