# SPDX-License-Identifier: Apache-2.0
"""Reports and the timeline: what a failed run says, and the page that draws a run.
Imports exploration and below.
"""
