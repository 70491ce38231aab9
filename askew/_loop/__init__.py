# SPDX-License-Identifier: Apache-2.0
"""The loop: SimLoop's Python half, the patches of time, random and entropy, refusals,
the preload's control, and a run's configuration. Imports only askew._core and askew.errors.
"""
