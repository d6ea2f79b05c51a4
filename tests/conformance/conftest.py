"""Fixtures for the Firestore v1 REST conformance suite.

Targets (environment variable HEARTH_TARGET):
  hearth   (default) start ``$HEARTH_BIN serve --emulator ...`` on a fresh data dir.
  emulator start Google's Cloud Firestore emulator (the oracle) on a free port.
           ``HEARTH_EMULATOR_HOST=127.0.0.1:8811`` reuses an emulator that is already running.

Tests marked ``@pytest.mark.hearth_only`` check production behaviour that the emulator does not
implement; they are skipped on the emulator target (see README.md).

Over PostgreSQL (opt-in): with ``HEARTH_TEST_DATABASE_URL`` set to an admin URL of a running
PostgreSQL (``postgres://postgres@127.0.0.1:5432/postgres``), every ``hearth serve`` the suite
starts through ``HearthServer`` gets a fresh database of its own (``CREATE DATABASE
hearth_t_<unique>`` with ``psql``; dropped once the server object is gone) and ``--database-url``
pointing at it. Tests that by nature work on the data directory's SQLite files are marked
``@pytest.mark.sqlite_files(reason=...)`` and skipped only in that mode.

Several replicas (opt-in, with ``HEARTH_TEST_DATABASE_URL``): ``HEARTH_TEST_REPLICAS=3`` makes
every such server ``3`` processes of ``hearth serve --database-url`` on that one fresh database,
sharing the data directory (admin token, service-account key, signing keys, object bytes, outbox;
replica 0 starts first and makes them, the others start once it is ready), behind one
round-robin TCP proxy per port (roundrobin.py): the server object's ports and URLs are the
proxies'. Tests that depend on one process by nature (restart on a fixed port, signals, one
process's logs or metrics, the ready file) are marked ``@pytest.mark.single_server(reason=...)``
and skipped only in that mode. docs/postgres.md, "Testing several replicas".
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
import weakref
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
import requests
from google.auth.credentials import AnonymousCredentials
from google.cloud.firestore_v1.services.firestore import FirestoreClient
from google.cloud.firestore_v1.services.firestore.transports.rest import FirestoreRestTransport

from fsutil import new_collection_id
from roundrobin import shared_group

TARGET = os.environ.get("HEARTH_TARGET", "hearth").strip().lower()
if TARGET not in ("hearth", "emulator"):
    raise RuntimeError(f"HEARTH_TARGET must be 'hearth' or 'emulator', not {TARGET!r}")

PROJECT = "demo-hearth"
OWNER_METADATA = (("authorization", "Bearer owner"),)
STARTUP_TIMEOUT_S = 60.0
STOP_GRACE_S = 10.0
CALL_TIMEOUT_S = 30.0


# The admin URL of the PostgreSQL every server of this run keeps its data in (opt-in), else None.
DATABASE_ADMIN_URL = os.environ.get("HEARTH_TEST_DATABASE_URL") or None

# How many `hearth serve` processes every server of this run is (opt-in, over PostgreSQL only).
try:
    REPLICAS = int(os.environ.get("HEARTH_TEST_REPLICAS") or "1")
except ValueError:
    raise RuntimeError("HEARTH_TEST_REPLICAS must be a number of replicas (e.g. 3)") from None
if REPLICAS < 1:
    raise RuntimeError("HEARTH_TEST_REPLICAS must be at least 1")
if REPLICAS > 1 and not DATABASE_ADMIN_URL and TARGET == "hearth":
    raise RuntimeError("HEARTH_TEST_REPLICAS needs HEARTH_TEST_DATABASE_URL: replicas share one PostgreSQL database")


def separate_grpc_connections() -> None:
    """Gives every gRPC channel this process makes a connection of its own. gRPC shares one
    connection (subchannel) among all channels to the same address by default, so every
    google-cloud-firestore client of the suite would reach the same replica through the proxy;
    with a local subchannel pool per channel, each client is one connection, and two clients of a
    test land on different replicas (round robin), as two app instances would. Idempotent."""
    import grpc
    import grpc.aio

    if getattr(grpc, "_hearth_local_subchannels", False):
        return

    def wrap(make):
        def channel(target, *args, **kwargs):
            options = list(kwargs.pop("options", None) or [])
            if not any(name == "grpc.use_local_subchannel_pool" for name, _ in options):
                options.append(("grpc.use_local_subchannel_pool", 1))
            return make(target, *args, options=options, **kwargs)
        return channel

    grpc.insecure_channel = wrap(grpc.insecure_channel)
    grpc.secure_channel = wrap(grpc.secure_channel)
    grpc.aio.insecure_channel = wrap(grpc.aio.insecure_channel)
    grpc.aio.secure_channel = wrap(grpc.aio.secure_channel)
    grpc._hearth_local_subchannels = True


if REPLICAS > 1 and DATABASE_ADMIN_URL and TARGET == "hearth":
    separate_grpc_connections()


def pytest_collection_modifyitems(config, items):
    if REPLICAS > 1 and DATABASE_ADMIN_URL and TARGET == "hearth":
        for item in items:
            marker = item.get_closest_marker("single_server")
            if marker is not None:
                reason = marker.kwargs.get("reason") or (marker.args[0] if marker.args else "")
                item.add_marker(pytest.mark.skip(reason=f"single_server (the servers run as {REPLICAS} replicas here): {reason}"))
    if DATABASE_ADMIN_URL and TARGET == "hearth":
        for item in items:
            marker = item.get_closest_marker("sqlite_files")
            if marker is not None:
                reason = marker.kwargs.get("reason") or (marker.args[0] if marker.args else "")
                item.add_marker(pytest.mark.skip(reason=f"sqlite_files (the server runs over PostgreSQL here): {reason}"))
    if TARGET != "emulator":
        return
    for item in items:
        marker = item.get_closest_marker("hearth_only")
        if marker is not None:
            reason = marker.kwargs.get("reason") or (marker.args[0] if marker.args else "")
            item.add_marker(pytest.mark.skip(reason=f"hearth_only (emulator deviates): {reason}"))


def pytest_report_header(config):
    if DATABASE_ADMIN_URL and TARGET == "hearth":
        replicas = f", {REPLICAS} replicas behind round-robin proxies" if REPLICAS > 1 else ""
        return f"conformance target: {TARGET} over PostgreSQL ({redacted_url(DATABASE_ADMIN_URL)}){replicas}"
    return f"conformance target: {TARGET}"


# --------------------------------------------------------------------------------------------
# PostgreSQL (HEARTH_TEST_DATABASE_URL, test_postgres_serve.py)
# --------------------------------------------------------------------------------------------


def postgres_bin_dir() -> str | None:
    """The newest ``/usr/lib/postgresql/<version>/bin`` with ``initdb``, ``postgres`` and ``psql`` (Debian's layout)."""
    root = Path("/usr/lib/postgresql")
    if not root.is_dir():
        return None
    versions = sorted((p for p in root.iterdir() if p.name.isdigit()), key=lambda p: int(p.name), reverse=True)
    for version in versions:
        bin_dir = version / "bin"
        if all(os.access(bin_dir / tool, os.X_OK) for tool in ("initdb", "postgres", "psql")):
            return str(bin_dir)
    return None


def _psql() -> str:
    bin_dir = postgres_bin_dir()
    if bin_dir:
        return os.path.join(bin_dir, "psql")
    found = shutil.which("psql")
    if not found:
        raise RuntimeError("HEARTH_TEST_DATABASE_URL is set but psql is not installed (apt-get install postgresql-client)")
    return found


def redacted_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":REDACTED@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def psql(admin_url: str, sql: str, timeout: float = 60) -> str:
    """Runs ``sql`` as the admin URL's user (one statement per call: CREATE/DROP DATABASE refuse transactions)."""
    done = subprocess.run([_psql(), "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-d", admin_url, "-c", sql],
                          capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise RuntimeError(f"psql {sql!r} on {redacted_url(admin_url)} failed: {done.stderr.strip()}")
    return done.stdout


def database_url(admin_url: str, name: str) -> str:
    """``admin_url`` with its database replaced by ``name``."""
    return urlunsplit(urlsplit(admin_url)._replace(path="/" + name))


def create_database(admin_url: str) -> tuple[str, str]:
    """A new, empty database on the server of ``admin_url``: its name and its URL."""
    name = f"hearth_t_{os.getpid()}_{uuid.uuid4().hex[:12]}"
    psql(admin_url, f"CREATE DATABASE {name}")
    return name, database_url(admin_url, name)


class LocalPostgres:
    """A PostgreSQL server of a test's own, as Tests/HearthPostgresTests/TestPostgres.swift and
    scripts/test start one: ``initdb`` into a temporary directory (trust authentication, UTF-8, C
    locale), listening on 127.0.0.1 on a free port with fsync off; as the ``postgres`` OS user
    (``runuser``) when the tests run as root, since PostgreSQL refuses root. ``stop``/``start``
    take it down and bring it back on the same port and data (a database that goes away)."""

    def __init__(self):
        bin_dir = postgres_bin_dir()
        if bin_dir is None:
            raise RuntimeError("PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb; apt-get install postgresql)")
        self.bin_dir = bin_dir
        self.as_root = os.geteuid() == 0
        # Under /tmp itself: pytest's own temporary directories are closed to other users (postgres).
        self.directory = Path(tempfile.mkdtemp(prefix="hearth-pg-"))
        if self.as_root:
            shutil.chown(self.directory, "postgres", "postgres")
        self.data = self.directory / "data"
        self.log = self.directory / "server.log"
        self.port = _free_port()
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync")

    @property
    def admin_url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/postgres?sslmode=disable"

    def _run(self, tool: str, *args: str, timeout: float = 120) -> None:
        cmd = [os.path.join(self.bin_dir, tool), *args]
        if self.as_root:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            raise RuntimeError(f"{tool} failed ({done.returncode}): {done.stdout}{done.stderr}\n{_tail(self.log)}")

    def start(self) -> None:
        options = (f"-p {self.port} -k {self.directory} -c listen_addresses=127.0.0.1 -c fsync=off "
                   f"-c synchronous_commit=off -c full_page_writes=off -c max_connections=400 -c shared_buffers=32MB")
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", options, "-w", "-t", "60", "start")

    def stop(self) -> None:
        """A fast shutdown: every session is ended, nothing new is accepted."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "-t", "60", "stop")

    def close(self) -> None:
        try:
            self.stop()
        except (RuntimeError, subprocess.TimeoutExpired):
            pass
        shutil.rmtree(self.directory, ignore_errors=True)


def signing_keys(server, ring: str) -> list[tuple[int, str, bytes]]:
    """A server's signing keys of ``ring`` ("auth" or "app-check"), earliest activation first, as
    (activation, kid, private key PEM): the data directory's files (``keys/``, ``app-check-keys/``),
    or — over PostgreSQL, where every server shares them — the rows of ``auth_signing_keys``."""
    if getattr(server, "database_url", None):
        text = psql(server.database_url,
                    "SELECT coalesce(json_agg(json_build_array(activates_at, kid, private_key_pem) ORDER BY activates_at), '[]') "
                    f"FROM auth_signing_keys WHERE ring = '{ring}'")
        return [(int(at), kid, pem.encode()) for at, kid, pem in json.loads(text)]
    directory = server.data_dir / {"auth": "keys", "app-check": "app-check-keys"}[ring]
    keys = [(int(p.name.split("-")[0]), p.name.split("-", 1)[1][:-4], p.read_bytes()) for p in directory.glob("*.pem")]
    return sorted(keys)


def drop_database(admin_url: str, name: str) -> None:
    """Drops ``name`` (ending any session still in it); best effort, it is a test's leftover."""
    try:
        psql(admin_url, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    except (RuntimeError, OSError, subprocess.TimeoutExpired):
        pass


def hearth_bin() -> str:
    """HEARTH_BIN, the binary under test; skips the test when it is not set."""
    path = os.environ.get("HEARTH_BIN")
    if not path:
        pytest.skip("HEARTH_BIN is not set")
    return path


def fresh_database_url():
    """A generator for a module fixture: a new database on HEARTH_TEST_DATABASE_URL's server
    (dropped after), else on a throwaway PostgreSQL of its own (stopped after); skips the module
    without PostgreSQL's binaries. For tests that start several servers over one database."""
    if DATABASE_ADMIN_URL:
        name, url = create_database(DATABASE_ADMIN_URL)
        yield url
        drop_database(DATABASE_ADMIN_URL, name)
        return
    if postgres_bin_dir() is None:
        pytest.skip("PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb; apt-get install postgresql) "
                    "and HEARTH_TEST_DATABASE_URL is not set")
    pg = LocalPostgres()
    pg.start()
    try:
        yield create_database(pg.admin_url)[1]
    finally:
        pg.close()


# --------------------------------------------------------------------------------------------
# Process management
# --------------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _tail(path: Path, limit: int = 8000) -> str:
    try:
        data = path.read_bytes()
    except OSError:
        return "<no output captured>"
    text = data[-limit:].decode("utf-8", "replace")
    return text if text.strip() else "<empty>"


def _stop_group(proc: subprocess.Popen, grace: float = STOP_GRACE_S) -> None:
    """SIGTERM the process group of ``proc``; SIGKILL it after ``grace`` seconds."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
    # The leader may be gone while children (e.g. the emulator's JVM) linger: kill the group.
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass


def _kill_group_now(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=STOP_GRACE_S)


class HearthServer:
    """``hearth serve --emulator`` as a subprocess in its own process group.

    With ``replicas`` > 1 (default: ``HEARTH_TEST_REPLICAS`` for a server on a database of its
    own, else 1) it is that many processes on one database and one data directory, behind one
    round-robin proxy per port: ``port``, ``ports``, ``auth_port`` and the URLs are the proxies',
    ``replica_ports[i]`` each replica's own, ``proc`` replica 0's (``procs`` all of them)."""

    kind = "hearth"

    def __init__(self, binary: str, workdir: Path, emulator: bool = True, extra_args: tuple = (),
                 database_url: str | None = None, replicas: int | None = None):
        self.binary = binary
        self.workdir = workdir
        self.emulator = emulator
        self.extra_args = list(extra_args)
        self.data_dir = workdir / "data"
        self.data_dir.mkdir(parents=True, exist_ok=True)
        # Over PostgreSQL (HEARTH_TEST_DATABASE_URL): a database of this server's own, kept across
        # its restarts and dropped once the object is gone (or at exit).
        self.database_url = database_url
        own_database = False
        if self.database_url is None and DATABASE_ADMIN_URL and "--database-url" not in self.extra_args:
            name, self.database_url = create_database(DATABASE_ADMIN_URL)
            weakref.finalize(self, drop_database, DATABASE_ADMIN_URL, name)
            own_database = True
            # What the server's first start writes (docs/postgres.md), written now so that `hearth admin …`
            # run on the data directory before that start (a service account) reaches the same database.
            marker = self.data_dir / "postgres-database"
            marker.write_text(self.database_url + "\n")
            marker.chmod(0o600)
        if replicas is None:
            replicas = REPLICAS if own_database else 1
        if replicas > 1 and self.database_url is None:
            raise RuntimeError("several replicas need a database URL (they share one PostgreSQL database)")
        self.replicas = replicas
        self.ready_file = workdir / "ready.json"
        self.proc: subprocess.Popen | None = None
        self.port: int | None = None
        self.ports: dict = {}
        self.auth_port: int | None = None
        self.generation = 0
        self._log_path: Path | None = None
        # Replicas mode: each replica's process, log, ready file and ports; the proxies by port name.
        self.procs: list[subprocess.Popen | None] = []
        self.replica_ports: list[dict] = []
        self._replica_logs: list[Path] = []
        self._proxies: dict = {}
        # Replica 0 alone first, then the others (False: all at once, as replicas of a deployment may start).
        self.stagger = True
        if self.replicas > 1:
            weakref.finalize(self, _close_proxies, self._proxies)

    def _command(self, ready_file: Path) -> list[str]:
        extra_args = self.extra_args if self.replicas == 1 else self._replica_args()
        return [
            self.binary, "serve", *(["--emulator"] if self.emulator else []),
            "--data-dir", str(self.data_dir),
            "--project", PROJECT,
            "--host", "127.0.0.1",
            "--firestore-port", "0",
            "--storage-port", "0",
            "--s3-port", "0",
            "--database-port", "0",
            "--auth-port", "0",
            "--api-port", "0",
            "--console-port", "0",
            "--ready-file", str(ready_file),
            *(["--database-url", self.database_url] if self.database_url else []),
            *extra_args,
        ]

    # The ports every replica serves (the ready file's names), proxied before the replicas start so
    # that what a replica announces to clients can name the proxy (below).
    PROXIED_PORTS = ("firestore", "auth", "storage", "s3", "database", "api", "console")

    def _replica_args(self) -> list[str]:
        """``extra_args`` as a deployment behind a load balancer configures them: an ``--api-config``
        without ``s3PublicURL`` gets the s3 proxy's URL, so that the presigned URLs a replica hands
        out reach the proxy (a replica's own port is unknown to clients); and each proxied service's
        ``--public-url`` is its proxy's URL (what the console shows and links to), unless the test
        gives its own."""
        args = list(self.extra_args)
        scheme = "https" if "--tls-cert" in args else "http"
        given = {a.split("=", 1)[0] for prev, a in zip(args, args[1:]) if prev == "--public-url"}
        for name in self.PROXIED_PORTS:
            if name in self._proxies and name not in given:
                args += ["--public-url", f"{name}={scheme}://127.0.0.1:{self._proxies[name].port}"]
        for i, arg in enumerate(args[:-1]):
            if arg == "--api-config":
                config = json.loads(Path(args[i + 1]).read_text())
                if isinstance(config, dict) and "s3PublicURL" not in config and "s3" in self._proxies:
                    config["s3PublicURL"] = f"http://127.0.0.1:{self._proxies['s3'].port}"
                    path = self.workdir / "api-config-replicas.json"
                    path.write_text(json.dumps(config))
                    args[i + 1] = str(path)
        return args

    def start(self) -> None:
        if self.replicas > 1:
            return self._start_replicas()
        if self.ready_file.exists():
            self.ready_file.unlink()
        self.generation += 1
        self._log_path = self.workdir / f"hearth-{self.generation}.log"
        cmd = self._command(self.ready_file)
        with open(self._log_path, "wb") as log:
            self.proc = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while True:
            rc = self.proc.poll()
            if rc is not None:
                raise RuntimeError(
                    f"hearth exited with status {rc} before becoming ready.\n"
                    f"command: {' '.join(cmd)}\n--- output ---\n{_tail(self._log_path)}"
                )
            ports = self._read_ready()
            if ports is not None:
                self.port = int(ports["firestore"])
                self.auth_port = int(ports["auth"]) if "auth" in ports else None
                return
            if time.monotonic() > deadline:
                _stop_group(self.proc)
                raise RuntimeError(
                    f"hearth did not write {self.ready_file} within {STARTUP_TIMEOUT_S:.0f}s.\n"
                    f"command: {' '.join(cmd)}\n--- output ---\n{_tail(self._log_path)}"
                )
            time.sleep(0.05)

    def _read_ready(self) -> dict | None:
        """The ready file's ports (``{"auth": P, "firestore": P, ...}``), or None until it is complete."""
        ports = _read_ready_file(self.ready_file)
        if ports is not None:
            self.ports = ports
        return ports

    # ---------------------------------------------------------------- several replicas

    def replica_ready_file(self, index: int) -> Path:
        return self.ready_file if index == 0 else self.workdir / f"ready-r{index}.json"

    def _launch_replica(self, index: int) -> tuple[subprocess.Popen, list[str], Path]:
        ready_file = self.replica_ready_file(index)
        if ready_file.exists():
            ready_file.unlink()
        log_path = self.workdir / (f"hearth-{self.generation}.log" if index == 0 else f"hearth-{self.generation}-r{index}.log")
        cmd = self._command(ready_file)
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.procs[index] = proc
        self._replica_logs[index] = log_path
        return proc, cmd, log_path

    def _wait_replica(self, index: int, proc: subprocess.Popen, cmd: list[str], log_path: Path) -> dict:
        ready_file = self.replica_ready_file(index)
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while True:
            rc = proc.poll()
            if rc is not None:
                raise RuntimeError(
                    f"hearth replica {index} exited with status {rc} before becoming ready.\n"
                    f"command: {' '.join(cmd)}\n--- output ---\n{_tail(log_path)}")
            ports = _read_ready_file(ready_file)
            if ports is not None:
                return ports
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"hearth replica {index} did not write {ready_file} within {STARTUP_TIMEOUT_S:.0f}s.\n"
                    f"command: {' '.join(cmd)}\n--- output ---\n{_tail(log_path)}")
            time.sleep(0.05)

    def _start_replicas(self) -> None:
        """Replica 0 first (a first start makes the data directory's admin token, service-account
        key, signing keys and blob directories, and migrates the database), then the others at
        once; then the proxies point at them."""
        self.generation += 1
        n = self.replicas
        self.procs = [None] * n
        self._replica_logs = [self.workdir / "unused.log"] * n
        self.replica_ports = [{}] * n
        group = shared_group()
        for name in self.PROXIED_PORTS:
            if name not in self._proxies:
                self._proxies[name] = group.add([])
        try:
            launched = []
            if self.stagger:
                first = self._launch_replica(0)
                self.replica_ports[0] = self._wait_replica(0, *first)
            else:
                launched.append((0, *self._launch_replica(0)))
            launched += [(i, *self._launch_replica(i)) for i in range(1, n)]
            for i, proc, cmd, log_path in launched:
                self.replica_ports[i] = self._wait_replica(i, proc, cmd, log_path)
        except BaseException:
            self.stop()
            raise
        self.proc = self.procs[0]
        self._log_path = self._replica_logs[0]
        for name in self.replica_ports[0]:
            backends = [ports[name] for ports in self.replica_ports if name in ports]
            if name in self._proxies:
                group.set_backends(self._proxies[name], backends)
            else:
                self._proxies[name] = group.add(backends)
        self.ports = {name: proxy.port for name, proxy in self._proxies.items() if name in self.replica_ports[0]}
        self.port = self.ports["firestore"]
        self.auth_port = self.ports.get("auth")

    def kill_replica(self, index: int) -> None:
        """SIGKILLs one replica's process group (no clean shutdown); the proxies skip it from now on
        (its port refuses connections). Replicas mode only."""
        assert self.replicas > 1, "kill_replica needs several replicas"
        proc = self.procs[index]
        assert proc is not None and proc.poll() is None, f"replica {index} is not running"
        _kill_group_now(proc)

    def replica_base(self, index: int, name: str = "firestore") -> str:
        """``http://127.0.0.1:<port>`` of one replica's own port, bypassing the proxy."""
        return f"http://127.0.0.1:{self.replica_ports[index][name]}"

    def stop(self) -> None:
        if self.replicas > 1:
            running = [p for p in self.procs if p is not None]
            for p in running:
                if p.poll() is None:
                    try:
                        os.killpg(p.pid, signal.SIGTERM)
                    except ProcessLookupError:
                        pass
            for p in running:
                _stop_group(p)
            self.procs = [None] * len(self.procs)
            self.proc = None
            return
        if self.proc is not None:
            _stop_group(self.proc)
            self.proc = None

    def crash_and_restart(self) -> None:
        """SIGKILL the whole process group (no clean shutdown) and start again on the same data dir.
        Replicas mode: every replica, then all start again behind the same proxies."""
        if self.replicas > 1:
            assert any(p is not None and p.poll() is None for p in self.procs), "server is not running"
            for p in self.procs:
                if p is not None:
                    _kill_group_now(p)
            self.procs = [None] * len(self.procs)
            self.proc = None
            self.start()
            return
        assert self.proc is not None, "server is not running"
        _kill_group_now(self.proc)
        self.proc = None
        self.start()

    @property
    def rest_base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def storage_base(self) -> str:
        return f"http://127.0.0.1:{self.ports['storage']}"

    @property
    def s3_base(self) -> str:
        return f"http://127.0.0.1:{self.ports['s3']}"

    @property
    def auth_base(self) -> str:
        return f"http://127.0.0.1:{self.auth_port}"

    def replica_output(self, index: int) -> str:
        """One replica's log (replicas mode)."""
        return _tail(self._replica_logs[index], limit=200_000)

    def output(self) -> str:
        if self.replicas > 1:
            return "\n".join(f"--- replica {i} ({path.name}) ---\n{_tail(path)}" for i, path in enumerate(self._replica_logs))
        return _tail(self._log_path) if self._log_path else ""


def _read_ready_file(path: Path) -> dict | None:
    """A ready file's ports (``{"auth": P, "firestore": P, ...}``), or None until it is complete."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    try:
        ports = json.loads(text)
        int(ports["firestore"])
    except (ValueError, KeyError, TypeError):
        return None  # partially written; try again
    return {k: int(v) for k, v in ports.items()}


def _close_proxies(proxies: dict) -> None:
    """When a server object is gone: its proxies close (without waiting: a finalizer may run on
    any thread, the proxies' own loop thread included)."""
    group = shared_group()
    for proxy in list(proxies.values()):
        group.remove_soon(proxy)
    proxies.clear()


def _emulator_binary() -> str:
    explicit = os.environ.get("FIRESTORE_EMULATOR_BIN")
    if explicit:
        return explicit
    gcloud = shutil.which("gcloud")
    if not gcloud:
        raise RuntimeError("gcloud not found; set FIRESTORE_EMULATOR_BIN")
    sdk_bin = Path(os.path.realpath(gcloud)).parent
    emu = (sdk_bin / ".." / "platform" / "cloud-firestore-emulator" / "cloud_firestore_emulator").resolve()
    if not emu.exists():
        raise RuntimeError(f"Firestore emulator not found at {emu}")
    return str(emu)


class EmulatorServer:
    """Google's Cloud Firestore emulator, the oracle for the tests themselves."""

    kind = "emulator"

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.proc: subprocess.Popen | None = None
        self.port: int | None = None
        self.generation = 1
        self._log_path = workdir / "emulator.log"

    def start(self) -> None:
        existing = os.environ.get("HEARTH_EMULATOR_HOST")
        if existing:
            self.port = int(existing.rsplit(":", 1)[1])
            self._wait_ok(None)
            return
        self.port = _free_port()
        cmd = [_emulator_binary(), "start", "--host=127.0.0.1", f"--port={self.port}",
               f"--project_id={PROJECT}"]
        with open(self._log_path, "wb") as log:
            self.proc = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True, cwd=self.workdir,
            )
        self._wait_ok(cmd)

    def _wait_ok(self, cmd) -> None:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while True:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(
                    f"emulator exited with status {self.proc.returncode}.\n"
                    f"command: {cmd}\n--- output ---\n{_tail(self._log_path)}"
                )
            try:
                r = requests.get(f"{self.rest_base}/", timeout=2)
                if r.status_code == 200 and r.text.strip() == "Ok":
                    return
            except requests.RequestException:
                pass
            if time.monotonic() > deadline:
                if self.proc is not None:
                    _stop_group(self.proc)
                raise RuntimeError(f"emulator not ready within {STARTUP_TIMEOUT_S:.0f}s:\n"
                                   f"{_tail(self._log_path)}")
            time.sleep(0.2)

    def stop(self) -> None:
        if self.proc is not None:
            _stop_group(self.proc)
            self.proc = None

    def crash_and_restart(self) -> None:
        pytest.skip("the emulator keeps data in memory only; durability is a Hearth property")

    @property
    def rest_base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def output(self) -> str:
        return _tail(self._log_path)


def _patch_rest_streaming_for_emulator() -> None:
    """The emulator ends streamed REST responses with a newline after the closing ']', which
    google-api-core's stream parser rejects ("Can only parse array of JSON objects"). Skip
    whitespace between top-level elements, on the emulator target only; Hearth must produce
    exactly what the real client accepts."""
    from google.api_core import _rest_streaming_base as base

    original = base.BaseResponseIterator._process_chunk
    if getattr(original, "_hearth_patched", False):
        return

    def _process_chunk(self, chunk):
        if self._level == 0:
            chunk = chunk.lstrip()
            if not chunk:
                return
        return original(self, chunk)

    _process_chunk._hearth_patched = True
    base.BaseResponseIterator._process_chunk = _process_chunk


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    workdir = tmp_path_factory.mktemp(TARGET)
    if TARGET == "emulator":
        _patch_rest_streaming_for_emulator()
        srv = EmulatorServer(workdir)
    else:
        binary = os.environ.get("HEARTH_BIN")
        if not binary:
            pytest.exit("HEARTH_BIN is not set (path to the hearth executable); "
                        "or set HEARTH_TARGET=emulator", returncode=4)
        if not os.access(binary, os.X_OK):
            pytest.exit(f"HEARTH_BIN={binary} is not an executable file", returncode=4)
        srv = HearthServer(binary, workdir)
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


# --------------------------------------------------------------------------------------------
# Clients
# --------------------------------------------------------------------------------------------


class OwnerClient:
    """FirestoreClient (REST transport) whose every call carries ``authorization: Bearer owner``.

    Calls also default to no client-side retry and a 30 s timeout so a failure shows up as
    itself. The underlying client is rebuilt if the server restarts on another port.
    """

    def __init__(self, srv):
        self._server = srv
        self._port = None
        self._gapic = None

    @property
    def gapic(self) -> FirestoreClient:
        if self._gapic is None or self._port != self._server.port:
            transport = FirestoreRestTransport(
                host=f"127.0.0.1:{self._server.port}",
                url_scheme="http",
                credentials=AnonymousCredentials(),
            )
            self._gapic = FirestoreClient(transport=transport)
            self._port = self._server.port
        return self._gapic

    def __getattr__(self, name):
        attr = getattr(self.gapic, name)
        if not callable(attr) or name.startswith("_"):
            return attr

        def call(*args, **kwargs):
            kwargs.setdefault("metadata", OWNER_METADATA)
            kwargs.setdefault("retry", None)
            kwargs.setdefault("timeout", CALL_TIMEOUT_S)
            return attr(*args, **kwargs)

        call.__name__ = name
        return call


class Rest:
    """Raw HTTP against the server with the owner token; paths are relative to the base URL."""

    def __init__(self, srv):
        self._server = srv
        self.session = requests.Session()
        self.session.headers["Authorization"] = "Bearer owner"

    @property
    def base(self) -> str:
        return self._server.rest_base

    def request(self, method, path, **kwargs):
        kwargs.setdefault("timeout", CALL_TIMEOUT_S)
        return self.session.request(method, self.base + path, **kwargs)

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post(self, path, **kw):
        return self.request("POST", path, **kw)

    def patch(self, path, **kw):
        return self.request("PATCH", path, **kw)

    def delete(self, path, **kw):
        return self.request("DELETE", path, **kw)


@pytest.fixture(scope="session")
def target(server) -> str:
    return server.kind


@pytest.fixture(scope="session")
def project() -> str:
    return PROJECT


@pytest.fixture(scope="session")
def database(project) -> str:
    return f"projects/{project}/databases/(default)"


@pytest.fixture(scope="session")
def root(database) -> str:
    """Resource name of the (default) database's document root."""
    return f"{database}/documents"


@pytest.fixture
def rest_base(server) -> str:
    return server.rest_base


@pytest.fixture(scope="session")
def rest(server) -> Rest:
    r = Rest(server)
    yield r
    r.session.close()


@pytest.fixture(scope="session")
def client(server) -> OwnerClient:
    return OwnerClient(server)


@pytest.fixture
def coll() -> str:
    """A collection id no other test uses."""
    return new_collection_id()


@pytest.fixture
def unique_collection_id() -> str:
    return new_collection_id()


@pytest.fixture
def restart_server(server):
    """Returns a function that SIGKILLs the server and restarts it on the same data dir.
    Skips on the emulator target."""
    if server.kind != "hearth":
        pytest.skip("restart/durability is only meaningful for Hearth (the emulator is in-memory)")

    def restart():
        server.crash_and_restart()
        return server

    return restart


@pytest.fixture(scope="session")
def oracle_rest_base(tmp_path_factory):
    """REST base URL of Google's Firestore emulator running *next to* the target, as the oracle
    of the differential tests (test_differential.py). Reuses ``HEARTH_EMULATOR_HOST`` when set;
    otherwise starts its own emulator (found like the emulator target finds it) and stops it at
    the end of the session. Skips when no emulator can be found."""
    if not os.environ.get("HEARTH_EMULATOR_HOST"):
        try:
            binary = _emulator_binary()
        except RuntimeError as e:
            pytest.skip(f"Google's Firestore emulator (the differential oracle) not found: {e}")
        if not os.access(binary, os.X_OK):
            pytest.skip(f"Google's Firestore emulator (the differential oracle) not found: "
                        f"{binary} is not executable")
    srv = EmulatorServer(tmp_path_factory.mktemp("oracle"))
    srv.start()
    try:
        yield srv.rest_base
    finally:
        srv.stop()
