# SPDX-License-Identifier: Apache-2.0
"""The host's disks: a node's simulated disk and the file calls routed to it. Built on the
loop; imports only askew._loop below it.
"""
