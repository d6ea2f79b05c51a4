"""The round-robin TCP proxy of the replicas mode (roundrobin.py): connections spread evenly over
the backends, a backend that refuses is skipped, bytes pass unchanged both ways in bulk, and a
half-close reaches the other side as one. Needs no Hearth server."""

from __future__ import annotations

import hashlib
import os
import socket
import threading
import time

import pytest

from roundrobin import ProxyGroup


class Backend:
    """A TCP server on 127.0.0.1: answers each connection with its name, then echoes the SHA-256
    of everything received (after the client's EOF) followed by the bytes themselves."""

    def __init__(self, name: str):
        self.name = name.encode()
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket):
        with conn:
            conn.sendall(self.name + b"\n")
            received = bytearray()
            while chunk := conn.recv(1 << 20):
                received += chunk
            # The client half-closed: answer after its EOF, on the same connection.
            conn.sendall(hashlib.sha256(received).hexdigest().encode() + b"\n")
            conn.sendall(received)

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes the accept() of its thread
        except OSError:
            pass
        self.sock.close()


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _exchange(port: int, payload: bytes) -> tuple[str, str, bytes]:
    """Connects, reads the backend's name, sends ``payload``, half-closes, reads the answer to EOF."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        reader = s.makefile("rb")
        name = reader.readline().strip().decode()
        sender = threading.Thread(target=lambda: (s.sendall(payload), s.shutdown(socket.SHUT_WR)))
        sender.start()
        digest = reader.readline().strip().decode()
        body = reader.read()
        sender.join()
        return name, digest, body


@pytest.fixture
def group():
    g = ProxyGroup()
    yield g
    g.close()


@pytest.fixture
def backends():
    made = [Backend(f"b{i}") for i in range(3)]
    yield made
    for b in made:
        b.close()


def test_connections_go_to_each_backend_in_turn(group, backends):
    proxy = group.add([b.port for b in backends])
    names = [_exchange(proxy.port, b"hello")[0] for _ in range(9)]
    assert names == ["b0", "b1", "b2"] * 3
    assert [b.accepted for b in backends] == [3, 3, 3]


def test_a_backend_that_refuses_is_skipped_and_the_others_take_its_turns(group, backends):
    dead = _closed_port()
    proxy = group.add([backends[0].port, dead, backends[1].port])
    names = [_exchange(proxy.port, b"x")[0] for _ in range(6)]
    assert set(names) == {"b0", "b1"}
    assert proxy.refused == 2  # the dead one had two turns of six
    assert backends[0].accepted + backends[1].accepted == 6


def test_with_no_backend_left_the_client_sees_the_connection_closed(group):
    proxy = group.add([_closed_port()])
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=10) as s:
        assert s.recv(10) == b""


def test_new_backends_take_the_next_connections(group, backends):
    proxy = group.add([backends[0].port])
    assert _exchange(proxy.port, b"x")[0] == "b0"
    group.set_backends(proxy, [backends[2].port])
    assert [_exchange(proxy.port, b"x")[0] for _ in range(3)] == ["b2"] * 3


def test_large_bodies_pass_unchanged_both_ways_after_a_half_close(group, backends):
    proxy = group.add([b.port for b in backends])
    payload = os.urandom(24 * 1024 * 1024 + 17)
    results = [None] * 3

    def run(i):
        results[i] = _exchange(proxy.port, payload)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    want = hashlib.sha256(payload).hexdigest()
    for name, digest, body in results:
        assert digest == want, f"{name}: the backend received other bytes than were sent"
        assert len(body) == len(payload) and body == payload, f"{name}: the answer came back changed"
    assert sorted(r[0] for r in results) == ["b0", "b1", "b2"]


def test_a_proxy_closes_from_the_loop_thread_itself_without_a_deadlock(group, backends):
    # A server object's finalizer may run on the proxies' loop thread (garbage collection there).
    proxy = group.add([backends[0].port])
    port = proxy.port
    done = threading.Event()
    group._loop.call_soon_threadsafe(lambda: (group.remove_soon(proxy), done.set()))
    assert done.wait(10), "remove_soon blocked the loop thread"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            break
        time.sleep(0.05)
    else:
        raise AssertionError("the removed proxy still accepts connections")
    assert _exchange(group.add([backends[1].port]).port, b"x")[0] == "b1"
