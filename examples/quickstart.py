import askew

async def node_main(node, index):
    node.leader = None
    while True:
        msg = await node.recv(timeout=5)
        if msg is None:
            node.leader = node.id            # timed out, claim leadership
            await node.broadcast(("claim", node.id))
        elif msg.payload[0] == "claim":
            node.leader = max(node.leader or -1, msg.payload[1])

@askew.simulate(seed=1337, iterations=10_000)
async def test_leader_election(world):
    nodes = [world.spawn(node_main, i) for i in range(5)]

    async with world.partition({0, 1}, {2, 3, 4}):
        await world.clock.advance(seconds=30)

    await world.clock.advance(seconds=30)
    assert len({n.leader for n in nodes}) == 1
