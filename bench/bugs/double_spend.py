# SPDX-License-Identifier: Apache-2.0
"""Double spend across a retry: a withdrawal applied twice.

A client withdraws 10 three times from an account of 100; each request
waits 30 ms for the bank's reply and is sent again on a timeout. The
network loses 2% of messages. When the bank's reply is lost, the retry
withdraws again. Fixed: each request carries an id, and the bank answers a
repeated id from what it did the first time. The check: the balance is
100 less 10 per withdrawal the client made.
"""

from __future__ import annotations

from typing import Any

PCT = {"pct_depth": 2, "pct_steps": 200}
PEERS = None

LOSS, WITHDRAWALS = 0.02, 3


async def bank(node: Any, fixed: bool) -> None:
    node.balance = 100
    done: dict[int, int] = {}
    while True:
        msg = await node.recv()
        request, amount = msg.payload
        if not (fixed and request in done):
            node.balance -= amount
            done[request] = node.balance
        node.send(msg.src, (request, done[request]))


async def client(node: Any, bank_id: int) -> None:
    node.withdrawn = 0
    for request in range(WITHDRAWALS):
        while True:
            node.send(bank_id, (request, 10))
            msg = await node.recv(timeout=0.03)
            if msg is not None and msg.payload[0] == request:
                break
        node.withdrawn += 10


async def scenario(world: Any, fixed: bool) -> None:
    world.net.configure(loss=LOSS)
    b = world.spawn(bank, fixed)
    c = world.spawn(client, b.id)
    await world.clock.advance(2)
    assert c.withdrawn == 10 * WITHDRAWALS, f"withdrew {c.withdrawn}"
    assert b.balance == 100 - c.withdrawn, f"double spend: withdrew {c.withdrawn}, left {b.balance}"
