/* SPDX-License-Identifier: Apache-2.0 */
/* askew._core.NodeBase: the C half of askew/_world/node.py's Node, so that
 * `await node.recv(timeout=...)`, the one call of a node's receive loop,
 * runs no Python frame of askew's: it keeps the node's world, network and
 * token and makes the Receive (recv.h) of the network (network_type.h)
 * itself. Node adds the rest in Python. Binding files only. */
#ifndef ASKEW_NODE_TYPE_H
#define ASKEW_NODE_TYPE_H

#include "core.h"

/* Module init: the NodeBase type into the module. */
int askew__node_type_init(PyObject *module);

#endif
