"""The README, run: every ```sh and ```python block in README.md, in order, as a new user would
paste them after its run command — except blocks marked `<!-- not run: reason -->`. Each
`swift run hearth serve …` line (re)starts the server the following blocks talk to (with every port
at 0 so parallel CI stages never collide; the default ports in the examples are replaced by the
bound ones); `swift run hearth …` runs the built binary; curl fails on HTTP errors. Also: the first
start of a production server writes a working admin credential and prints a curl line that works;
later starts reuse it and print no secret."""

from __future__ import annotations

import json
import os
import re
import shlex
import stat
import subprocess
import time
from pathlib import Path

import pytest

from authutil import hearth_binary
from tlsutil import ROOT, ServeProcess as Server, run_python, with_ports

pytestmark = pytest.mark.hearth_only(reason="the README describes Hearth")

def readme_blocks() -> list[tuple[str, str, str | None]]:
    """``(language, code, skip reason)`` for every sh/python block, in order."""
    text = (ROOT / "README.md").read_text()
    out = []
    for m in re.finditer(r"(?:<!-- not run: (.*?) -->\n)?^```(sh|python)\n(.*?)^```$", text, re.M | re.S):
        out.append((m.group(2), m.group(3), m.group(1)))
    return out


def commands(block: str) -> list[str]:
    """Shell commands of a block, line continuations joined."""
    return [c for c in block.replace("\\\n", " ").splitlines() if c.strip() and not c.strip().startswith("#")]


def serve_args(command: str) -> list[str] | None:
    words = shlex.split(command, comments=True)
    if words[:4] == ["swift", "run", "hearth", "serve"]:
        return words[4:]
    if words[:2] == ["hearth", "serve"]:
        return words[2:]
    return None


def shell(command: str, binary: str, ports: dict, cwd: Path) -> subprocess.CompletedProcess:
    command = re.sub(r"^(swift run hearth|hearth)\b", shlex.quote(binary), command.strip())
    command = re.sub(r"^curl\b", "curl --fail-with-body -sS", command)
    command = with_ports(command, ports)
    env = {k: v for k, v in os.environ.items() if not k.endswith("_EMULATOR_HOST") and not k.startswith("HEARTH_")}
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=180)


def test_readme_examples_run_in_order(tmp_path):
    binary = hearth_binary()
    server: Server | None = None
    ran = 0
    try:
        for n, (language, code, skip) in enumerate(readme_blocks()):
            if skip:
                continue
            if language == "python":
                assert server is not None, "a Python example before any run command"
                r = run_python(with_ports(code, server.ports), cwd=tmp_path)
                assert r.returncode == 0, f"README block {n}:\n{code}\n--- stderr ---\n{r.stderr}\n--- server ---\n{server.output()}"
                ran += 1
                continue
            for command in commands(code):
                args = serve_args(command)
                if args is not None:
                    if server is not None:
                        server.stop()
                    server = Server(binary, tmp_path, args, n)
                    ran += 1
                    continue
                r = shell(command, binary, server.ports if server else {}, tmp_path)
                assert r.returncode == 0, (f"README block {n}: {command}\n--- stdout ---\n{r.stdout}\n--- stderr ---\n{r.stderr}\n"
                                           f"--- server ---\n{server.output() if server else ''}")
                ran += 1
        assert ran >= 10, ran
    finally:
        if server is not None:
            server.stop()


def test_first_start_makes_a_working_credential_and_later_starts_reuse_it(tmp_path):
    binary = hearth_binary()
    first = Server(binary, tmp_path, [], 1)
    try:
        out = first.wait_for_output("Later starts reuse these files")
        token_file, key_file = tmp_path / "hearth-data" / "admin-token", tmp_path / "hearth-data" / "service-account.json"
        for f in (token_file, key_file):
            assert stat.S_IMODE(f.stat().st_mode) == 0o600, f
            assert str(f.relative_to(tmp_path)) in out or str(f) in out, out
        token = token_file.read_text().strip()
        assert token not in out, "the first start printed the secret itself"
        key = json.loads(key_file.read_text())
        assert key["type"] == "service_account" and key["token_uri"] == f"http://127.0.0.1:{first.ports['auth']}/token"
        # The printed curl line works as printed (ports are the bound ones already).
        lines = out[out.index("Try it:"):].splitlines()[1:4]
        command = " ".join(line.strip().rstrip("\\") for line in lines)
        assert command.startswith("curl "), command
        r = subprocess.run(["bash", "-c", command.replace("curl ", "curl --fail-with-body -sS ", 1)], cwd=tmp_path,
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stdout + r.stderr
        assert json.loads(r.stdout)["fields"]["name"] == {"stringValue": "Alice"}
        # The service-account key works with google-auth against the token_uri: admin on Firestore.
        code = f"""
import google.auth.transport.requests, requests
from google.oauth2 import service_account
creds = service_account.Credentials.from_service_account_file("hearth-data/service-account.json",
    scopes=["https://www.googleapis.com/auth/cloud-platform"])
creds.refresh(google.auth.transport.requests.Request())
r = requests.get("http://127.0.0.1:{first.ports['firestore']}/v1/projects/demo-hearth/databases/(default)/documents/users/alice",
                 headers={{"Authorization": "Bearer " + creds.token}})
assert r.status_code == 200, r.text
"""
        r = run_python(code, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
    finally:
        first.stop()
    second = Server(binary, tmp_path, [], 2)
    try:
        second.wait_for_output("admin token from the data directory")
        time.sleep(0.5)
        out = second.output()
        assert "Hearth made an admin credential" not in out and token not in out, out
        assert (tmp_path / "hearth-data" / "admin-token").read_text().strip() == token
    finally:
        second.stop()
    # An explicit --admin-token wins and nothing is made.
    fresh = tmp_path / "explicit"
    fresh.mkdir()
    third = Server(binary, fresh, ["--admin-token", "explicit-admin-token-123"], 3)
    third.stop()
    assert not (fresh / "hearth-data" / "admin-token").exists()
