# SPDX-License-Identifier: Apache-2.0
"""Exploration and checking: buggify, swarm, coverage steering, shrinking and the
linearizability checker (askew.check). Imports the world and below.
"""
