"""Helpers for the Firebase Auth tests (test_auth_*.py): Hearth servers with the auth port,
service accounts made by the CLI, raw Identity Toolkit calls, and hash builders for imports."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import subprocess
import uuid
from pathlib import Path

import pytest
import requests

from conftest import PROJECT, HearthServer

API_KEY = "fake-api-key"
V1 = "/identitytoolkit.googleapis.com/v1"
V3 = "/www.googleapis.com/identitytoolkit/v3/relyingparty"
TIMEOUT = 30


def hearth_binary() -> str:
    binary = os.environ.get("HEARTH_BIN")
    if not binary or not os.access(binary, os.X_OK):
        pytest.skip("HEARTH_BIN is not set to the hearth executable")
    return binary


def create_service_account(binary: str, data_dir: Path, out: Path, name: str = "ci-admin") -> dict:
    """``hearth admin service-account create`` on a data dir (before the server starts)."""
    subprocess.run(
        [binary, "admin", "service-account", "create", "--data-dir", str(data_dir), "--project", PROJECT,
         "--out", str(out), "--name", name],
        check=True, capture_output=True, timeout=120,
    )
    return json.loads(out.read_text())


def start(tmp_path_factory, name: str, emulator: bool, extra_args: tuple = (), service_account: bool = True):
    binary = hearth_binary()
    workdir = tmp_path_factory.mktemp(name)
    srv = HearthServer(binary, workdir, emulator=emulator, extra_args=extra_args)
    srv.service_account = None
    if service_account:
        srv.service_account = create_service_account(binary, srv.data_dir, workdir / "service-account.json")
    srv.start()
    if srv.auth_port is None:
        srv.stop()
        pytest.fail("the ready file has no auth port")
    return srv


class AuthRest:
    """Raw HTTP against the auth port, as the client SDKs send it."""

    def __init__(self, srv):
        self.srv = srv
        self.session = requests.Session()

    @property
    def base(self) -> str:
        return self.srv.auth_base

    def call(self, path: str, body=None, *, admin: str | None = None, method: str = "POST", **kw):
        headers = kw.pop("headers", {})
        if admin:
            headers["Authorization"] = f"Bearer {admin}"
        sep = "&" if "?" in path else "?"
        return self.session.request(method, f"{self.base}{path}{sep}key={API_KEY}", json=body, headers=headers,
                                    timeout=TIMEOUT, **kw)

    def v1(self, op: str, body, **kw):
        return self.call(f"{V1}/accounts:{op}", body, **kw)

    def v3(self, op: str, body, **kw):
        return self.call(f"{V3}/{op}", body, **kw)

    def sign_up(self, email=None, password=None):
        body = {"returnSecureToken": True}
        if email:
            body.update(email=email, password=password)
        r = self.v1("signUp", body)
        assert r.status_code == 200, r.text
        return r.json()

    def refresh(self, refresh_token: str) -> dict:
        r = self.session.post(f"{self.base}/securetoken.googleapis.com/v1/token?key={API_KEY}",
                              data={"grant_type": "refresh_token", "refresh_token": refresh_token}, timeout=TIMEOUT)
        assert r.status_code == 200, r.text
        return r.json()


def expect_error(response, message: str, status: int = 400):
    """Firebase's error body: {"error":{"code","message","errors":[{"message","domain","reason"}]}}."""
    assert response.status_code == status, response.text
    err = response.json()["error"]
    assert err["code"] == status
    assert err["message"].split(" : ")[0] == message, err["message"]
    assert err["errors"][0]["domain"] == "global"
    assert err["errors"][0]["reason"] == "invalid"


def jwt_payload(token: str) -> dict:
    seg = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(seg + "=" * (-len(seg) % 4)))


def firebase_scrypt(password: bytes, salt: bytes, signer_key: bytes, separator: bytes, rounds: int, mem_cost: int) -> bytes:
    """Firebase's modified scrypt: scrypt(password, salt+separator) keys AES-256-CTR over the signer key."""
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    key = hashlib.scrypt(password, salt=salt + separator, n=2 ** mem_cost, r=rounds, p=1, dklen=32, maxmem=2 ** 28)
    enc = Cipher(algorithms.AES(key), modes.CTR(b"\0" * 16)).encryptor()
    return enc.update(signer_key) + enc.finalize()


@contextlib.contextmanager
def admin_app(server, label: str):
    """A firebase-admin app on `server`'s auth port (FIREBASE_AUTH_EMULATOR_HOST, restored after),
    with the server's own service account."""
    import firebase_admin
    from firebase_admin import credentials
    previous = os.environ.get("FIREBASE_AUTH_EMULATOR_HOST")
    os.environ["FIREBASE_AUTH_EMULATOR_HOST"] = f"127.0.0.1:{server.auth_port}"
    app = firebase_admin.initialize_app(credentials.Certificate(server.service_account), {"projectId": PROJECT},
                                        name=f"{label}-{uuid.uuid4().hex}")
    try:
        yield app
    finally:
        firebase_admin.delete_app(app)
        if previous is None:
            os.environ.pop("FIREBASE_AUTH_EMULATOR_HOST", None)
        else:
            os.environ["FIREBASE_AUTH_EMULATOR_HOST"] = previous
