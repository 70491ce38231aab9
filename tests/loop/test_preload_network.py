# SPDX-License-Identifier: Apache-2.0
"""What C code reaches over the network from inside a run, under
askew-exec: an AF_UNIX server started before the run stays outside it
(issue 24 item 15), and glibc's resolver calls, which query DNS themselves
or in threads of their own, are refused (item 21). Every run happens in a
child."""

from __future__ import annotations

from pathlib import Path

from preload_child import needs_preload, run_json

pytestmark = needs_preload

# C's socket calls through ctypes (Python's socket module is the simulated
# network's inside a run), with a server process started before the run.
_UNIX = """
import ctypes, json, os, socket, subprocess, sys, time, askew
libc = ctypes.CDLL(None, use_errno=True)
tmp = sys.argv[1]
class Addr(ctypes.Structure):
    _fields_ = [("family", ctypes.c_ushort), ("path", ctypes.c_char * 108)]
def addr(path):
    return Addr(socket.AF_UNIX, path.encode())
def c_socket(kind=socket.SOCK_STREAM):
    return libc.socket(socket.AF_UNIX, kind, 0)
def c_connect(fd, path):
    a = addr(path)
    rc = libc.connect(fd, ctypes.byref(a), ctypes.sizeof(a))
    return 0 if rc == 0 else ctypes.get_errno()
server_path = os.path.join(tmp, "server.sock")
server = subprocess.Popen([sys.executable, "-c", '''
import socket, sys
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(8)
d = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); d.bind(sys.argv[1] + ".dgram")
print("up", flush=True)
while True:
    c, _ = s.accept(); c.sendall(b"real time")
''', server_path], stdout=subprocess.PIPE)
assert server.stdout.readline().strip() == b"up"
before = c_socket()  # connected before the run, read inside it
assert c_connect(before, server_path) == 0
time.sleep(0.2)
def connect_server():
    return c_connect(c_socket(), server_path)
def read_before():
    buf = ctypes.create_string_buffer(16)
    return libc.recv(before, buf, 16, 0)
def send_datagram():
    fd = c_socket(socket.SOCK_DGRAM)
    a = addr(server_path + ".dgram")
    return libc.sendto(fd, b"x", 1, 0, ctypes.byref(a), ctypes.sizeof(a))
def own_server():
    # Bound inside the run: a connect to it, by any spelling, stays inside.
    own = os.path.join(tmp, "own.sock")
    s = c_socket()
    a = addr(own)
    assert libc.bind(s, ctypes.byref(a), ctypes.sizeof(a)) == 0
    assert libc.listen(s, 1) == 0
    c = c_socket()
    rc = c_connect(c, os.path.join(tmp, ".", "own.sock"))
    peer = libc.accept(s, None, None)
    sent = libc.send(c, b"hi", 2, 0)
    buf = ctypes.create_string_buffer(2)
    got = libc.recv(peer, buf, 2, 0)
    return [rc, sent, got, buf.raw.decode()]
out = {name: run_once(lambda w: body()) for name, body in (
    ("connect", connect_server), ("read_before", read_before),
    ("datagram", send_datagram), ("own", own_server))}
server.kill()
print(json.dumps(out))
"""


def test_c_reaches_no_af_unix_server_outside_the_run_and_its_own_inside(
    tmp_path: Path,
) -> None:
    out = run_json(_UNIX, str(tmp_path))
    assert "connect() was refused inside the simulation" in out["connect"]["refused"]
    assert "recv() was refused inside the simulation" in out["read_before"]["refused"]
    assert "sendto() was refused inside the simulation" in out["datagram"]["refused"]
    assert out["own"] == {"value": [0, 2, 2, "hi"]}


def test_glibcs_resolver_calls_and_getaddrinfo_a_are_refused() -> None:
    out = run_json(
        """
        import ctypes, json
        # From the global scope, as a program's own calls bind (a library's
        # handle would find glibc's definitions before the preload's).
        libc = ctypes.CDLL(None)
        answer = ctypes.create_string_buffer(512)
        print(json.dumps({name: run_once(lambda w: call()) for name, call in (
            ("res_query", lambda: libc.res_query(b"example.com", 1, 1, answer, 512)),
            ("res_search", lambda: libc.res_search(b"example.com", 1, 1, answer, 512)),
            ("getaddrinfo_a", lambda: libc.getaddrinfo_a(1, None, 0, None)),
        )}))
        """
    )
    for name in ("res_query", "res_search", "getaddrinfo_a"):
        line = out[name]["refused"]
        assert f"{name}() was refused inside the simulation" in line and "name lookup" in line
