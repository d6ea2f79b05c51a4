"""Helpers for the TLS and production-client tests: certificates from ``hearth admin tls
self-signed`` (and, for the failure cases, ones made with ``cryptography``), a production
``hearth serve`` with TLS on every port, and runnable code blocks taken from Markdown files."""

from __future__ import annotations

import datetime
import os
import json
import re
import signal
import subprocess
import time
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from authutil import hearth_binary
from conftest import HearthServer

ROOT = Path(__file__).resolve().parents[2]
PORT_FLAGS = ["--firestore-port", "0", "--auth-port", "0", "--storage-port", "0", "--s3-port", "0", "--database-port", "0",
              "--api-port", "0", "--console-port", "0"]
DEFAULT_PORTS = {"firestore": 8080, "auth": 9099, "storage": 9199, "s3": 9900, "database": 9000, "api": 8000, "console": 4000}


def self_signed(binary: str, out: Path, *hosts: str) -> Path:
    """``hearth admin tls self-signed`` into ``out``."""
    args = [binary, "admin", "tls", "self-signed", "--out", str(out)]
    for h in hosts:
        args += ["--host", h]
    subprocess.run(args, check=True, capture_output=True, timeout=120)
    return out


def write_cert(out: Path, *, not_before: datetime.datetime, not_after: datetime.datetime, name: str = "127.0.0.1") -> tuple[Path, Path]:
    """A self-signed server certificate with the given validity (for the expired case)."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(not_before).not_valid_after(not_after)
            .sign(key, hashes.SHA256()))
    out.mkdir(parents=True, exist_ok=True)
    cert_path, key_path = out / "cert.pem", out / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


def start_tls_server(workdir: Path, *extra: str, admin_token: str | None = None) -> HearthServer:
    """A production server (no --emulator) with TLS on every port from a fresh self-signed CA in
    ``workdir/certs``; its data directory is ``workdir/hearth-data``. Without ``admin_token`` the
    first start writes ``hearth-data/admin-token`` and ``hearth-data/service-account.json``."""
    binary = hearth_binary()
    certs = self_signed(binary, workdir / "certs", "127.0.0.1")
    args = ["--tls-cert", str(certs / "server.pem"), "--tls-key", str(certs / "server-key.pem"), *extra]
    if admin_token:
        args += ["--admin-token", admin_token]
    srv = HearthServer(binary, workdir, emulator=False, extra_args=tuple(args))
    srv.data_dir = workdir / "hearth-data"
    srv.data_dir.mkdir(parents=True, exist_ok=True)
    srv.start()
    srv.ca = certs / "ca.pem"
    if admin_token is None:
        wait_for(srv.data_dir / "service-account.json", srv)
    return srv


def wait_for(path: Path, srv: HearthServer, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists() or path.stat().st_size == 0:
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} was not written\n{srv.output()}")
        time.sleep(0.05)


def https(srv: HearthServer, service: str) -> str:
    return f"https://127.0.0.1:{srv.ports[service]}"


def code_blocks(markdown: Path, language: str) -> list[tuple[str, str]]:
    """``(label, code)`` for each fenced block of ``language``; the label is the ``<!-- recipe: x -->``
    comment right before it, else the nearest heading."""
    out, heading, label, block, fence = [], "", None, None, None
    for line in markdown.read_text().splitlines():
        if block is not None:
            if line.strip() == "```":
                if fence == language:
                    out.append((label or heading, "\n".join(block) + "\n"))
                block, label = None, None
            else:
                block.append(line)
        elif line.startswith("```"):
            block, fence = [], line[3:].strip()
        elif line.startswith("#"):
            heading, label = line.lstrip("# ").strip(), None
        elif m := re.fullmatch(r"<!-- recipe: (\S+) -->", line.strip()):
            label = m.group(1)
    return out


def with_ports(code: str, ports: dict) -> str:
    """The code with each default port (``:8080``) replaced by the one the server bound."""
    def repl(m):
        port = int(m.group(2))
        for service, default in DEFAULT_PORTS.items():
            if default == port and service in ports:
                return f"{m.group(1)}:{ports[service]}"
        return m.group(0)
    return re.sub(r"(127\.0\.0\.1|localhost):(\d{4})\b", repl, code)


def run_python(code: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_EMULATOR_HOST")}
    return subprocess.run([os.environ.get("PYTHON", __import__("sys").executable), "-c", code], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


class ServeProcess:
    """`hearth serve ARGS` in ``cwd`` with every port at 0, until its ready file is written."""

    def __init__(self, binary: str, cwd: Path, args: list[str], n: int, env: dict | None = None):
        self.ready = cwd / f"ready-{n}.json"
        self.log = cwd / f"serve-{n}.log"
        cmd = [binary, "serve", *args, *PORT_FLAGS, "--ready-file", str(self.ready)]
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(cmd, cwd=cwd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                         start_new_session=True, env=env)
        deadline = time.monotonic() + 60
        while not self.ready.exists():
            assert self.proc.poll() is None, f"{cmd} exited:\n{self.output()}"
            assert time.monotonic() < deadline, f"{cmd} not ready:\n{self.output()}"
            time.sleep(0.05)
        self.ports = {k: int(v) for k, v in json.loads(self.ready.read_text()).items()}

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def wait_for_output(self, needle: str, timeout: float = 30) -> str:
        deadline = time.monotonic() + timeout
        while needle not in self.output():
            assert time.monotonic() < deadline, f"no {needle!r} in:\n{self.output()}"
            time.sleep(0.05)
        return self.output()

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=15)
