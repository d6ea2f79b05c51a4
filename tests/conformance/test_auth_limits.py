"""Sign-in and sign-up rate limits (docs/production.md): per client address and per account, answered
with Firebase's TOO_MANY_ATTEMPTS_TRY_LATER in the Auth REST API's error shape. The client address
is the one a trusted proxy forwards (`--trusted-proxy 127.0.0.1`), so each test speaks from its own."""

from __future__ import annotations

import uuid

import pytest
import requests

from apiutil import ADMIN_TOKEN
from authutil import start

pytestmark = pytest.mark.hearth_only(reason="production-mode limits; the Auth emulator has none")

V1 = "/identitytoolkit.googleapis.com/v1/accounts"


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    s = start(tmp_path_factory, "auth-limits", emulator=False, service_account=False,
              extra_args=("--admin-token", ADMIN_TOKEN, "--trusted-proxy", "127.0.0.1",
                          "--auth-attempts-per-ip", "3", "--auth-failures-per-account", "2"))
    yield s
    s.stop()


def call(srv, op: str, body: dict, ip: str):
    return requests.post(f"{srv.auth_base}{V1}:{op}", params={"key": "fake-api-key"}, json=body,
                         headers={"X-Forwarded-For": ip}, timeout=30)


def too_many(r) -> bool:
    return r.status_code == 400 and r.json()["error"]["message"].startswith("TOO_MANY_ATTEMPTS_TRY_LATER")


def email() -> str:
    return f"lim-{uuid.uuid4().hex[:10]}@example.com"


def test_sign_ups_per_address(srv):
    ip = "203.0.113.10"
    for _ in range(3):
        r = call(srv, "signUp", {"email": email(), "password": "secret-pass-1", "returnSecureToken": True}, ip)
        assert r.status_code == 200, r.text
    r = call(srv, "signUp", {"email": email(), "password": "secret-pass-1", "returnSecureToken": True}, ip)
    assert too_many(r), r.text
    assert r.json()["error"]["code"] == 400
    # Another address is not limited.
    assert call(srv, "signUp", {"email": email(), "password": "secret-pass-1", "returnSecureToken": True}, "203.0.113.11").status_code == 200


def test_sign_ups_of_a_registered_address_per_account(srv):
    taken = email()
    assert call(srv, "signUp", {"email": taken, "password": "secret-pass-1"}, "198.51.100.1").status_code == 200
    for ip in ("198.51.100.2", "198.51.100.3"):
        r = call(srv, "signUp", {"email": taken, "password": "secret-pass-1"}, ip)
        assert r.status_code == 400 and r.json()["error"]["message"].startswith("EMAIL_EXISTS"), r.text
    r = call(srv, "signUp", {"email": taken, "password": "secret-pass-1"}, "198.51.100.4")
    assert too_many(r), r.text
    # The owner can still sign in: sign-up probing does not lock the account.
    r = call(srv, "signInWithPassword", {"email": taken, "password": "secret-pass-1", "returnSecureToken": True}, "198.51.100.5")
    assert r.status_code == 200, r.text


def test_failed_sign_ins_per_account_and_sign_ins_per_address(srv):
    victim = email()
    assert call(srv, "signUp", {"email": victim, "password": "secret-pass-1"}, "192.0.2.1").status_code == 200
    for ip in ("192.0.2.2", "192.0.2.3"):
        r = call(srv, "signInWithPassword", {"email": victim, "password": "wrong-pass"}, ip)
        assert r.status_code == 400 and not too_many(r), r.text
    # Two failures: even the right password is refused for the window.
    r = call(srv, "signInWithPassword", {"email": victim, "password": "secret-pass-1"}, "192.0.2.4")
    assert too_many(r), r.text
    # Per address: three attempts, then the fourth is refused whatever the account.
    other = email()
    assert call(srv, "signUp", {"email": other, "password": "secret-pass-1"}, "192.0.2.20").status_code == 200
    ip = "192.0.2.21"
    for _ in range(3):
        assert call(srv, "signInWithPassword", {"email": other, "password": "secret-pass-1"}, ip).status_code == 200
    r = call(srv, "signInWithPassword", {"email": other, "password": "secret-pass-1"}, ip)
    assert too_many(r), r.text
