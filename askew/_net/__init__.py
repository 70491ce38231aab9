# SPDX-License-Identifier: Apache-2.0
"""The host's network: simulated TCP, names, servers, raw sockets, UDP, TLS, the aiodns
shim and real sockets in wrap mode. Built on the loop; imports only askew._loop below it.
"""
