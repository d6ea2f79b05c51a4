"""examples/drift end to end: `hearth serve` started in the example's folder (its firebase.json
names the rules and the lifecycle worker), then the example's checklist script against it."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from authutil import hearth_binary
from conftest import _stop_group, _tail

pytestmark = pytest.mark.hearth_only(reason="the Drift example runs against Hearth")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "drift"


def test_drift_checklist(tmp_path):
    ready, log = tmp_path / "ready.json", tmp_path / "hearth.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [hearth_binary(), "serve", "--data-dir", str(tmp_path / "data"), "--host", "127.0.0.1", "--firestore-port", "0",
             "--auth-port", "0", "--storage-port", "0", "--s3-port", "0", "--api-port", "0", "--database-port", "0",
             "--console-port", "0", "--ready-file", str(ready)],
            cwd=EXAMPLE, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not ready.exists():
            assert proc.poll() is None and time.monotonic() < deadline, _tail(log)
            time.sleep(0.05)
        r = subprocess.run([sys.executable, str(EXAMPLE / "drift_check.py"), "--ready-file", str(ready)],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, f"{r.stdout}\n{r.stderr}\n--- server ---\n{_tail(log)}"
        assert "checks passed" in r.stdout
        assert "lifecycle deleted" in log.read_text()
    finally:
        _stop_group(proc)
