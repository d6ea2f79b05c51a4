"""A round-robin TCP proxy for running the conformance suite against several Hearth replicas
(conftest.py's replicas mode, ``HEARTH_TEST_REPLICAS``; docs/postgres.md, "Testing several replicas").

Each accepted connection goes to the next backend in turn (per-connection round robin, as an L4
load balancer does); a backend that refuses the connection is skipped and the next one tried, so
a killed replica costs its own connections only. Bytes are pumped both ways unchanged — HTTP/1.1,
HTTP/2 (gRPC), WebSockets and TLS all pass — and a half-close (EOF one way) is passed on as a
half-close, so a client that shuts down its sending side still reads the whole answer.

Listens on 127.0.0.1 on a port the OS picks. ``ProxyGroup`` runs any number of proxies on one
asyncio loop in a daemon thread, for synchronous callers (pytest)::

    group = ProxyGroup()
    proxy = group.add([8001, 8002, 8003])   # backend ports on 127.0.0.1
    proxy.port                               # where clients connect
    group.set_backends(proxy, [8001, 8003])  # e.g. after a replica restarted
    group.close()

By hand: ``python roundrobin.py 8001 8002 8003`` prints the listening port and runs until ^C.
"""

from __future__ import annotations

import asyncio
import itertools
import socket
import sys
import threading
from concurrent.futures import Future

HOST = "127.0.0.1"
PUMP_CHUNK = 256 * 1024


class RoundRobinProxy:
    """One listening socket forwarding each connection to the next of ``backends`` (ports or
    ``(host, port)`` pairs). Runs on the loop that called :meth:`start`."""

    def __init__(self, backends):
        self._backends = [self._address(b) for b in backends]
        self._turn = itertools.count()
        self._server: asyncio.base_events.Server | None = None
        self._tasks: set[asyncio.Task] = set()
        self.port: int | None = None
        # Counters, for tests and diagnostics.
        self.connections = 0
        self.refused = 0
        self.per_backend: dict[tuple[str, int], int] = {}

    @staticmethod
    def _address(backend) -> tuple[str, int]:
        if isinstance(backend, int):
            return (HOST, backend)
        host, port = backend
        return (host, int(port))

    @property
    def backends(self) -> list[tuple[str, int]]:
        return list(self._backends)

    def set_backends(self, backends) -> None:
        """Replaces the backends; connections already open stay where they are."""
        self._backends = [self._address(b) for b in backends]

    async def start(self, port: int = 0) -> int:
        self._server = await asyncio.start_server(self._accept, HOST, port, reuse_address=True)
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _connect(self):
        """A connection to the next backend that takes one, else None. Each backend is tried at
        most once per client connection, starting with the next in turn."""
        backends = self._backends
        if not backends:
            return None
        first = next(self._turn)
        for i in range(len(backends)):
            address = backends[(first + i) % len(backends)]
            try:
                reader, writer = await asyncio.open_connection(*address)
            except OSError:
                self.refused += 1
                continue
            self.per_backend[address] = self.per_backend.get(address, 0) + 1
            return reader, writer
        return None

    async def _accept(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self._tasks.add(task)
        self.connections += 1
        upstream_writer = None
        try:
            _nodelay(client_writer)
            upstream = await self._connect()
            if upstream is None:
                return  # no backend: the client sees the connection closed
            upstream_reader, upstream_writer = upstream
            _nodelay(upstream_writer)
            pumps = [asyncio.ensure_future(_pump(client_reader, upstream_writer)),
                     asyncio.ensure_future(_pump(upstream_reader, client_writer))]
            try:
                pending = set(pumps)
                while pending:
                    done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                    if any(t.exception() is not None for t in done):
                        # One side broke: reset the other (not a clean EOF, so that a peer never
                        # mistakes a cut stream for a whole one).
                        for writer in (client_writer, upstream_writer):
                            if writer.transport is not None:
                                writer.transport.abort()
                        break
            finally:
                for t in pumps:
                    t.cancel()
                await asyncio.gather(*pumps, return_exceptions=True)
        except asyncio.CancelledError:
            pass
        finally:
            for writer in (client_writer, upstream_writer):
                if writer is not None:
                    _close(writer)
            self._tasks.discard(task)


def _nodelay(writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    if sock is not None:
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass


def _close(writer: asyncio.StreamWriter) -> None:
    try:
        writer.close()
    except (OSError, RuntimeError):
        pass


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copies until EOF, then half-closes the other side (``write_eof``); raises on a broken
    connection (the caller then resets both sides)."""
    while True:
        data = await reader.read(PUMP_CHUNK)
        if not data:
            break
        writer.write(data)
        await writer.drain()
    if writer.can_write_eof() and not writer.is_closing():
        writer.write_eof()


class ProxyGroup:
    """Proxies on one asyncio loop in a daemon thread, driven from synchronous code."""

    def __init__(self):
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="roundrobin", daemon=True)
        self._thread.start()
        self._proxies: list[RoundRobinProxy] = []
        self._closed = False

    def _run(self, coro, timeout: float = 30):
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError("ProxyGroup: a blocking call from the proxies' own loop thread would never return")
        future: Future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        return future.result(timeout)

    def add(self, backends) -> RoundRobinProxy:
        proxy = RoundRobinProxy(backends)
        self._run(proxy.start())
        self._proxies.append(proxy)
        return proxy

    def set_backends(self, proxy: RoundRobinProxy, backends) -> None:
        self._loop.call_soon_threadsafe(proxy.set_backends, list(backends))
        # Wait until the loop applied it, so the next connection sees the new backends.
        self._run(asyncio.sleep(0))

    def remove(self, proxy: RoundRobinProxy) -> None:
        if proxy in self._proxies:
            self._proxies.remove(proxy)
            self._run(proxy.close())

    def remove_soon(self, proxy: RoundRobinProxy) -> None:
        """Closes ``proxy`` without waiting: safe from any thread, the loop's own included (a
        garbage collector's finalizer may run there)."""
        if proxy in self._proxies:
            self._proxies.remove(proxy)
            asyncio.run_coroutine_threadsafe(proxy.close(), self._loop)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for proxy in list(self._proxies):
            try:
                self._run(proxy.close(), timeout=10)
            except Exception:  # noqa: BLE001 — best effort at teardown
                pass
        self._proxies.clear()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)


_shared: ProxyGroup | None = None
_shared_lock = threading.Lock()


def shared_group() -> ProxyGroup:
    """One ProxyGroup per process (its thread is a daemon: nothing to stop at exit)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = ProxyGroup()
        return _shared


async def _main(ports: list[int]) -> None:
    proxy = RoundRobinProxy(ports)
    port = await proxy.start()
    print(f"round-robin proxy on {HOST}:{port} -> {', '.join(str(p) for p in ports)}", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print("usage: python roundrobin.py BACKEND_PORT [BACKEND_PORT ...]", file=sys.stderr)
        sys.exit(2)
    try:
        asyncio.run(_main([int(p) for p in sys.argv[1:]]))
    except KeyboardInterrupt:
        pass
