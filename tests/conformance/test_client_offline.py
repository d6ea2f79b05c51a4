"""The Swift SDK's offline queue (issue 16) survives the process being killed: makeitso-cli queues
writes while the server is unreachable and is killed with SIGKILL; a second run against a live
server drains the same cache file. Every queued write arrives exactly once and in queue order (batches
on different documents may share a commit)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time

import pytest

from conftest import TARGET, HearthServer, OwnerClient
from test_makeitso_example import makeitso_binary

pytestmark = pytest.mark.skipif(TARGET != "hearth", reason="runs the Swift example against Hearth")

COUNT = 20


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(args, env, timeout=120):
    return subprocess.run([str(makeitso_binary()), "--host", "127.0.0.1", "--project", "demo-hearth", *args],
                          capture_output=True, text=True, timeout=timeout, env=env)


def test_queued_writes_survive_sigkill_and_arrive_once_in_order(tmp_path):
    env = {**os.environ, "HEARTH_CLIENT_DATA_DIR": str(tmp_path / "client")}
    # 1. No server: writes queue in the cache; the process is killed without any chance to clean up.
    proc = subprocess.Popen(
        [str(makeitso_binary()), "--host", "127.0.0.1", "--project", "demo-hearth",
         "--firestore-port", str(_dead_port()), "--auth-port", str(_dead_port()), "--offline-queue", str(COUNT)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = proc.stdout.readline()
        assert line.strip() == f"queued {COUNT}", line + proc.stderr.read()
        time.sleep(0.5)  # the write stream is retrying against the dead port meanwhile
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL
    caches = list((tmp_path / "client").rglob("cache.sqlite"))
    assert len(caches) == 1, caches

    # 2. The server is up: a new process on the same cache drains the queue.
    srv = HearthServer(os.environ["HEARTH_BIN"], tmp_path / "server")
    srv.start()
    try:
        args = ["--firestore-port", str(srv.port), "--auth-port", str(srv.ports["auth"]), "--offline-drain", "1"]
        first = _run(args, env)
        assert first.returncode == 0 and "drained" in first.stdout, first.stdout + first.stderr
        # A second run finds nothing left to send.
        second = _run(args, env)
        assert second.returncode == 0 and "drained" in second.stdout, second.stdout + second.stderr

        client = OwnerClient(srv)
        root = "projects/demo-hearth/databases/(default)/documents/queued"
        created = []
        for i in range(1, COUNT + 1):
            doc = client.get_document(request={"name": f"{root}/q{i:03d}"})
            assert doc.fields["n"].integer_value == i
            created.append(doc.create_time)
        # In queue order; consecutive batches on different documents may share one commit (the SDK's
        # Write stream sends them in one request), so equal times are allowed, going back is not.
        assert created == sorted(created), "committed in queue order"
        assert len(set(created)) > 1, "the counter's increments went in separate commits"
        counter = client.get_document(request={"name": f"{root}/counter"})
        assert counter.fields["hits"].integer_value == COUNT, "each queued increment arrived exactly once"
    finally:
        srv.stop()
