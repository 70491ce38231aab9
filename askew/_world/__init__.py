# SPDX-License-Identifier: Apache-2.0
"""The world: nodes, the clock, faults, the log, the network and disk facades, its
monitors and operation history. Imports the host's resources and the loop.
"""
