"""Programs the stress tests share: run in-process, from a CLI scenario and in a pytest run.

The socket counter is the headline case of stress mode, and each road into it
(``racecheck.stress``, ``racecheck stress``, the pytest marker) must see the
same program; :data:`SOCKET_COUNTER_SOURCE` is its text for the tests that
write a scenario or a test file.
"""

from __future__ import annotations

import inspect
import socket
import threading


def socket_counter(locked: bool) -> None:
    """A counter kept by a server thread behind a socket pair.

    Two client threads each do GET then SET value+1, three times. Every
    request/response is serialised by ``wire``, but unless ``locked`` the
    GET..SET pair is not: a lost update through real sockets.
    """
    a, b = socket.socketpair()
    value = [0]
    wire = threading.Lock()
    pair = threading.Lock()

    def server() -> None:
        f = b.makefile("rwb", buffering=0)
        for line in f:
            cmd = line.split()
            if cmd[0] == b"GET":
                f.write(b"%d\n" % value[0])
            elif cmd[0] == b"SET":
                value[0] = int(cmd[1])
                f.write(b"OK\n")
            else:
                break

    srv = threading.Thread(target=server, daemon=True)
    srv.start()
    fa = a.makefile("rwb", buffering=0)

    def request(msg: bytes) -> bytes:
        with wire:
            fa.write(msg)
            return fa.readline()

    def client() -> None:
        for _ in range(3):
            if locked:
                pair.acquire()
            try:
                v = int(request(b"GET\n"))
                request(b"SET %d\n" % (v + 1))
            finally:
                if locked:
                    pair.release()

    clients = [threading.Thread(target=client) for _ in range(2)]
    for t in clients:
        t.start()
    for t in clients:
        t.join()
    fa.write(b"BYE\n")
    srv.join()
    a.close()
    b.close()
    assert value[0] == 6, f"lost update: counter is {value[0]}, expected 6"


#: the source of :func:`socket_counter`, for a written scenario or test module
#: (which imports ``socket`` and ``threading`` itself)
SOCKET_COUNTER_SOURCE = inspect.getsource(socket_counter)
