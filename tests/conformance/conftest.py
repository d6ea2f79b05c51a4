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


def pytest_collection_modifyitems(config, items):
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
        return f"conformance target: {TARGET} over PostgreSQL ({redacted_url(DATABASE_ADMIN_URL)})"
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


def drop_database(admin_url: str, name: str) -> None:
    """Drops ``name`` (ending any session still in it); best effort, it is a test's leftover."""
    try:
        psql(admin_url, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    except (RuntimeError, OSError, subprocess.TimeoutExpired):
        pass


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
    """``hearth serve --emulator`` as a subprocess in its own process group."""

    kind = "hearth"

    def __init__(self, binary: str, workdir: Path, emulator: bool = True, extra_args: tuple = (),
                 database_url: str | None = None):
        self.binary = binary
        self.workdir = workdir
        self.emulator = emulator
        self.extra_args = list(extra_args)
        self.data_dir = workdir / "data"
        self.data_dir.mkdir(parents=True, exist_ok=True)
        # Over PostgreSQL (HEARTH_TEST_DATABASE_URL): a database of this server's own, kept across
        # its restarts and dropped once the object is gone (or at exit).
        self.database_url = database_url
        if self.database_url is None and DATABASE_ADMIN_URL and "--database-url" not in self.extra_args:
            name, self.database_url = create_database(DATABASE_ADMIN_URL)
            weakref.finalize(self, drop_database, DATABASE_ADMIN_URL, name)
            # What the server's first start writes (docs/postgres.md), written now so that `hearth admin …`
            # run on the data directory before that start (a service account) reaches the same database.
            marker = self.data_dir / "postgres-database"
            marker.write_text(self.database_url + "\n")
            marker.chmod(0o600)
        self.ready_file = workdir / "ready.json"
        self.proc: subprocess.Popen | None = None
        self.port: int | None = None
        self.ports: dict = {}
        self.auth_port: int | None = None
        self.generation = 0
        self._log_path: Path | None = None

    def start(self) -> None:
        if self.ready_file.exists():
            self.ready_file.unlink()
        self.generation += 1
        self._log_path = self.workdir / f"hearth-{self.generation}.log"
        cmd = [
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
            "--ready-file", str(self.ready_file),
            *(["--database-url", self.database_url] if self.database_url else []),
            *self.extra_args,
        ]
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
        try:
            text = self.ready_file.read_text()
        except FileNotFoundError:
            return None
        try:
            ports = json.loads(text)
            int(ports["firestore"])
        except (ValueError, KeyError, TypeError):
            return None  # partially written; try again
        self.ports = {k: int(v) for k, v in ports.items()}
        return ports

    def stop(self) -> None:
        if self.proc is not None:
            _stop_group(self.proc)
            self.proc = None

    def crash_and_restart(self) -> None:
        """SIGKILL the whole process group (no clean shutdown) and start again on the same data dir."""
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

    def output(self) -> str:
        return _tail(self._log_path) if self._log_path else ""


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
