"""Graceful shutdown (docs/production.md): on SIGTERM a request already being received completes, new
connections are refused, and open streams are ended within `--shutdown-timeout`."""

from __future__ import annotations

import signal
import socket
import time
import uuid

import pytest
import requests

from authutil import start
from dbutil import DatabaseRest

pytestmark = [
    pytest.mark.hearth_only(reason="Hearth's own shutdown"),
    pytest.mark.single_server(reason="SIGTERM to the one process: its drain, its deadline, its outbox"),
]

BUCKET = "demo-hearth.appspot.com"


def read_response(sock: socket.socket) -> bytes:
    sock.settimeout(20)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


def test_slow_upload_completes_across_sigterm_and_new_connections_are_refused(tmp_path_factory):
    srv = start(tmp_path_factory, "shutdown-drain", emulator=True, extra_args=("--shutdown-timeout", "20"), service_account=False)
    try:
        name = f"slow-{uuid.uuid4().hex[:8]}"
        body = b"x" * 200_000
        sock = socket.create_connection(("127.0.0.1", srv.ports["storage"]), timeout=10)
        sock.sendall(
            f"POST /v0/b/{BUCKET}/o?name={name} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer owner\r\n"
            f"Content-Type: application/octet-stream\r\nContent-Length: {len(body)}\r\n\r\n".encode())
        sock.sendall(body[:50_000])
        time.sleep(0.5)
        started = time.monotonic()
        srv.proc.send_signal(signal.SIGTERM)
        # New connections are refused once the listeners close (the api port's first).
        deadline = time.monotonic() + 10
        while True:
            try:
                requests.get(f"http://127.0.0.1:{srv.ports['api']}/healthz", timeout=2)
            except requests.ConnectionError:
                break
            assert time.monotonic() < deadline, "the api port still accepts connections after SIGTERM"
            time.sleep(0.1)
        # The in-flight upload goes on, slowly, and completes.
        for offset in range(50_000, len(body), 50_000):
            sock.sendall(body[offset:offset + 50_000])
            time.sleep(0.2)
        head = read_response(sock)
        assert head.startswith(b"HTTP/1.1 200"), head[:300]
        sock.close()
        assert srv.proc.wait(timeout=25) == 0, srv.output()
        assert time.monotonic() - started < 20
    finally:
        srv.stop()
    # The object was stored: it is there after a restart.
    srv.start()
    try:
        r = requests.get(f"{srv.storage_base}/v0/b/{BUCKET}/o/{name}", params={"alt": "media"},
                         headers={"Authorization": "Bearer owner"}, timeout=10)
        assert r.status_code == 200 and r.content == body
    finally:
        srv.stop()


def test_open_streams_do_not_hold_shutdown_past_the_deadline(tmp_path_factory):
    srv = start(tmp_path_factory, "shutdown-deadline", emulator=True, extra_args=("--shutdown-timeout", "2"), service_account=False)
    try:
        db = DatabaseRest(srv)
        assert db.put("/s.json", {"a": 1}).status_code == 200
        stream = db.request("GET", "/s.json", headers={"Accept": "text/event-stream"}, stream=True, timeout=(5, 30))
        assert stream.status_code == 200
        started = time.monotonic()
        srv.proc.send_signal(signal.SIGTERM)
        code = srv.proc.wait(timeout=15)
        elapsed = time.monotonic() - started
        assert elapsed < 2 + 5, f"shutdown took {elapsed:.1f}s with --shutdown-timeout 2"
        assert code == 0, srv.output()
        stream.close()
    finally:
        srv.stop()


class SlowInbox:
    """aiosmtpd handler that takes `delay` seconds to accept each message's data."""

    def __init__(self, delay: float):
        self.delay = delay
        self.recipients: list[str] = []

    async def handle_DATA(self, server, session, envelope):
        import asyncio
        await asyncio.sleep(self.delay)
        self.recipients += list(envelope.rcpt_tos)
        return "250 OK"


def _send_resets(srv, count: int) -> list[str]:
    from authutil import AuthRest
    rest = AuthRest(srv)
    addresses = []
    for _ in range(count):
        addr = f"bye-{uuid.uuid4().hex[:8]}@example.com"
        rest.sign_up(addr, "password1")
        r = rest.v1("sendOobCode", {"requestType": "PASSWORD_RESET", "email": addr})
        assert r.status_code == 200, r.text
        addresses.append(addr)
    return addresses


def _outbox_text(srv) -> str:
    outbox = srv.data_dir / "outbox"
    return "".join(p.read_text() for p in outbox.iterdir() if p.suffix == ".json") if outbox.exists() else ""


def test_emails_queued_at_sigterm_are_sent_before_exit(tmp_path_factory):
    """The outbox is a service of the server's group: SIGTERM stops the listeners, then the
    emails already queued for the (slow) SMTP server are sent before the process exits."""
    from aiosmtpd.controller import Controller
    from conftest import _free_port

    inbox = SlowInbox(delay=2.0)
    port = _free_port()
    ctl = Controller(inbox, hostname="127.0.0.1", port=port)
    ctl.start()
    try:
        srv = start(tmp_path_factory, "shutdown-outbox", emulator=True, service_account=False,
                    extra_args=("--smtp-url", f"smtp://127.0.0.1:{port}?starttls=never", "--shutdown-timeout", "30"))
        try:
            addresses = _send_resets(srv, 3)
            srv.proc.send_signal(signal.SIGTERM)
            assert srv.proc.wait(timeout=40) == 0, srv.output()
        finally:
            srv.stop()
        assert sorted(inbox.recipients) == sorted(addresses), srv.output()
        assert all(a not in _outbox_text(srv) for a in addresses)
    finally:
        ctl.stop()


def test_emails_the_shutdown_deadline_cuts_off_are_kept_in_the_outbox(tmp_path_factory):
    """Past `--shutdown-timeout` the sending is cancelled, and what was not sent is kept in the
    outbox folder: no email is lost."""
    from aiosmtpd.controller import Controller
    from conftest import _free_port

    inbox = SlowInbox(delay=60.0)
    port = _free_port()
    ctl = Controller(inbox, hostname="127.0.0.1", port=port)
    ctl.start()
    try:
        srv = start(tmp_path_factory, "shutdown-outbox-deadline", emulator=True, service_account=False,
                    extra_args=("--smtp-url", f"smtp://127.0.0.1:{port}?starttls=never", "--shutdown-timeout", "2"))
        try:
            addresses = _send_resets(srv, 2)
            started = time.monotonic()
            srv.proc.send_signal(signal.SIGTERM)
            assert srv.proc.wait(timeout=20) == 0, srv.output()
            assert time.monotonic() - started < 2 + 5 + 3
        finally:
            srv.stop()
        kept = _outbox_text(srv)
        assert all(a in kept for a in addresses), srv.output()
        assert inbox.recipients == []
    finally:
        ctl.stop()
