"""`hearth bench --phases replicas` (issue 18 part 4; docs/performance.md): one short run with one
replica over PostgreSQL — the phase must produce its rows (writes, point reads and REST transactions on SQLite and on
PostgreSQL, with requests counted and no errors), the database's own count of write transactions
and each process's CPU, and leave nothing behind: no `hearth serve` of its own running, no
database of its own on the server.

Uses ``HEARTH_TEST_DATABASE_URL`` when set (scripts/test stage 8), else a PostgreSQL of its own
(``LocalPostgres``); skipped, with the reason, without PostgreSQL's binaries or wrk."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from conftest import DATABASE_ADMIN_URL, TARGET, LocalPostgres, postgres_bin_dir, psql

pytestmark = pytest.mark.skipif(TARGET != "hearth", reason="hearth bench is Hearth's own")

ROW = re.compile(r"^(?P<name>.+?: (?:write \(PATCH\)|point get \(GET\)|REST transaction))\s+(?P<rate>[\d.]+)\s+(?P<p50>[\d.]+)\s+(?P<p99>[\d.]+)\s+(?P<errors>\d+)$")


@pytest.fixture(scope="module")
def admin_url():
    if DATABASE_ADMIN_URL:
        yield DATABASE_ADMIN_URL
        return
    if postgres_bin_dir() is None:
        pytest.skip("PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb; apt-get install postgresql)")
    pg = LocalPostgres()
    pg.start()
    try:
        yield pg.admin_url
    finally:
        pg.close()


def processes_mentioning(text: str) -> list[str]:
    """Command lines of running processes that contain ``text``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in command:
            found.append(f"{entry.name}: {command[:200]}")
    return found


def test_replicas_phase_measures_both_engines_and_stops_everything(admin_url, tmp_path):
    binary = os.environ.get("HEARTH_BIN")
    if not binary:
        pytest.skip("HEARTH_BIN is not set")
    if shutil.which("wrk") is None:
        pytest.skip("wrk is not installed (apt-get install wrk): the replicas phase's load generator")
    data = tmp_path / "bench"
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEARTH_")}
    env["HEARTH_BENCH_POSTGRES_URL"] = admin_url
    done = subprocess.run(
        [binary, "bench", "--phases", "replicas", "--replicas", "1", "--connections", "2", "--duration", "1", "--data-dir", str(data)],
        capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output

    rows = {m["name"]: m for m in (ROW.match(line) for line in done.stdout.splitlines()) if m}
    for name in ("sqlite, 1 server: write (PATCH)", "sqlite, 1 server: point get (GET)",
                 "postgres, 1 replica: write (PATCH)", "postgres, 1 replica: point get (GET)",
                 "sqlite, 1 server: REST transaction", "postgres, 1 replica: REST transaction"):
        assert name in rows, output
        assert float(rows[name]["rate"]) > 0, output
        assert int(rows[name]["errors"]) == 0, output
        assert float(rows[name]["p99"]) >= float(rows[name]["p50"]) > 0, output

    # PostgreSQL's own view of the write window: transactions happened in the bench's database.
    writes = re.findall(r"database: (\d+) write transactions/s", done.stdout)
    assert len(writes) == 2 and int(writes[0]) > 0, output
    # Where the CPU went: the server, wrk, and (PostgreSQL runs on this machine) its backends.
    cpu = [line for line in done.stdout.splitlines() if line.strip().startswith("cpu (cores): hearth ")]
    assert len(cpu) == 4, output
    backends = [float(m) for m in re.findall(r"postgres backends ([\d.]+)", done.stdout)]
    assert len(backends) == 2 and backends[0] > 0, output
    assert "replicas summary" in done.stdout, output

    # Nothing left behind: the servers (and their watchdogs) are gone, and so are the databases.
    deadline = time.monotonic() + 10
    while processes_mentioning(str(data)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert processes_mentioning(str(data)) == []
    left = psql(admin_url, "SELECT datname FROM pg_database WHERE datname LIKE 'hearth_bench_replicas_%'")
    assert left.strip() == "", left
