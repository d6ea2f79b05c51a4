"""examples/makeitso-cli (issue 16): MakeItSo's flow, written against the HearthClient Swift SDK,
runs against a live `hearth serve`: anonymous sign-in, tasks added, completed and deleted, and the
snapshot listener reporting each state."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from conftest import TARGET, HearthServer

pytestmark = pytest.mark.skipif(TARGET != "hearth", reason="runs the Swift example against Hearth")


def makeitso_binary() -> Path:
    binary = Path(os.environ.get("HEARTH_BIN", "hearth")).resolve().parent / "makeitso-cli"
    if not binary.exists():
        pytest.fail(f"{binary} is missing: build it with `swift build` (the makeitso-cli product)")
    return binary


def test_makeitso_cli_against_hearth(tmp_path):
    srv = HearthServer(os.environ["HEARTH_BIN"], tmp_path)
    srv.start()
    try:
        env = {**os.environ, "HEARTH_CLIENT_DATA_DIR": str(tmp_path / "client")}
        proc = subprocess.run(
            [str(makeitso_binary()), "--host", "127.0.0.1", "--auth-port", str(srv.ports["auth"]),
             "--firestore-port", str(srv.port), "--project", "demo-hearth"],
            capture_output=True, text=True, timeout=120, env=env)
    finally:
        srv.stop()
    out = proc.stdout
    assert proc.returncode == 0, f"{out}\n{proc.stderr}"
    lines = out.splitlines()
    assert any(l.startswith("auth: signed in as ") and "(anonymous: true)" in l for l in lines), out
    snapshots = [l for l in lines if l.startswith("snapshot: ")]
    # the first snapshot comes whenever the listener is current: before or after the first adds
    assert snapshots and int(snapshots[0].split()[1]) <= 3, out
    assert any(l.startswith("snapshot: 3 tasks [") and all(t in l for t in ("Buy milk", "Write the report", "Call Ada"))
               for l in snapshots), out
    assert any("Write the report ✓" in l for l in snapshots), out
    assert snapshots[-1].startswith("snapshot: 2 tasks [Write the report ✓, Call Ada]"), out
    assert "final: Write the report [high] done; Call Ada [medium]" in out
    assert "created times set by the server: true" in out
    # the signed-in user was kept in a 0600 file
    files = list((tmp_path / "client").glob("*.json"))
    assert files and all(oct(f.stat().st_mode & 0o777) == "0o600" for f in files)
