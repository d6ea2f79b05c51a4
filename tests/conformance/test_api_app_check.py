"""App Check on the api port (docs/app-backend.md): Hearth issues tokens through Firebase-shaped
exchange endpoints, firebase_admin.app_check.verify_token pointed at Hearth's JWKS accepts them and
refuses tampered, expired, wrong-project and wrong-issuer ones, limited-use tokens are consumed
once (verify_token(consume=True) -> already_consumed), and the file API enforces
X-Firebase-AppCheck per configuration (off / monitor / enforce)."""

from __future__ import annotations

import base64
import json
import subprocess
import time
import uuid

import firebase_admin
import jwt
import pytest
import requests
from cryptography.hazmat.primitives import serialization
from firebase_admin import app_check, credentials

from apiutil import ADMIN_TOKEN, ApiUser, start_api_server
from authutil import hearth_binary
from conftest import PROJECT, signing_keys

pytestmark = pytest.mark.hearth_only(reason="App Check is served by Hearth, not by the Firestore emulator")

APP = "1:123456789012:web:0a1b2c3d4e"
OTHER_APP = "1:123456789012:ios:ffee"
UNREGISTERED_APP = "1:123456789012:android:abcd"
DEBUG_SECRET = "debug-" + uuid.uuid4().hex
PLACEHOLDER = "eyJlcnJvciI6IlVOS05PV05fRVJST1IifQ=="
CUSTOM_AUD = "https://firebaseappcheck.googleapis.com/google.firebase.appcheck.v1.TokenExchangeService"


def admin_cli(srv, *args) -> str:
    r = subprocess.run([hearth_binary(), "admin", "app-check", *args, "--data-dir", str(srv.data_dir)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    s = start_api_server(tmp_path_factory, "api-appcheck", {"appCheck": {"enforcement": {"api": "enforce"}, "projectNumber": "123456789012"}},
                         service_account=True)
    assert admin_cli(s, "apps", "add", APP) == f"registered {APP}"
    admin_cli(s, "apps", "add", OTHER_APP)
    admin_cli(s, "debug-tokens", "add", "--app", APP, "--name", "ci", DEBUG_SECRET)
    yield s
    s.stop()


@pytest.fixture(scope="module")
def admin_app(srv):
    info = dict(srv.service_account)
    info["token_uri"] = f"{srv.auth_base}/token"
    original = (app_check._AppCheckService._JWKS_URL, app_check._AppCheckService._VERIFY_URL_FORMAT)
    app_check._AppCheckService._JWKS_URL = f"{srv.api_base}/v1/jwks"
    app_check._AppCheckService._VERIFY_URL_FORMAT = srv.api_base + "/v1beta/projects/{project_id}:verifyAppCheckToken"
    app = firebase_admin.initialize_app(credentials.Certificate(info), {"projectId": PROJECT}, name=f"appcheck-{uuid.uuid4().hex}")
    try:
        yield app
    finally:
        firebase_admin.delete_app(app)
        app_check._AppCheckService._JWKS_URL, app_check._AppCheckService._VERIFY_URL_FORMAT = original


def exchange_debug(srv, app_id=APP, secret=DEBUG_SECRET, **body):
    return requests.post(f"{srv.api_base}/v1/projects/{PROJECT}/apps/{app_id}:exchangeDebugToken?key=fake-api-key",
                         json={"debug_token": secret, **body}, timeout=30)


def app_check_key(srv):
    """Hearth's App Check signing key, read from the data dir — to forge well-signed tokens with bad claims."""
    now = time.time()
    _, kid, pem = [k for k in signing_keys(srv, "app-check") if k[0] <= now][-1]
    return serialization.load_pem_private_key(pem, None), kid


def test_debug_exchange_and_admin_sdk_verification(srv, admin_app):
    r = exchange_debug(srv)
    assert r.status_code == 200, r.text
    body = r.json()
    assert set(body) == {"token", "ttl"} and body["ttl"] == "3600s"
    claims = app_check.verify_token(body["token"], app=admin_app)
    assert claims["app_id"] == APP and claims["sub"] == APP
    assert f"projects/{PROJECT}" in claims["aud"] and "projects/123456789012" in claims["aud"]
    assert claims["iss"] == "https://firebaseappcheck.googleapis.com/123456789012"
    assert claims["exp"] - claims["iat"] == 3600
    # camelCase spelling (Android, REST docs) works too.
    r = requests.post(f"{srv.api_base}/v1/projects/123456789012/apps/{APP}:exchangeDebugToken",
                      json={"debugToken": DEBUG_SECRET, "limitedUse": False}, timeout=30)
    assert r.status_code == 200, r.text
    jwks = requests.get(f"{srv.api_base}/v1/jwks", timeout=30)
    assert jwks.status_code == 200 and jwks.json()["keys"][0]["alg"] == "RS256"
    assert int(jwks.headers["Cache-Control"].split("max-age=")[1]) <= 21600


def test_admin_sdk_refuses_tampered_expired_and_foreign_tokens(srv, admin_app):
    token = exchange_debug(srv).json()["token"]
    header, payload, signature = token.split(".")
    claims = jwt.decode(token, options={"verify_signature": False})
    other = base64.urlsafe_b64encode(json.dumps({**claims, "sub": OTHER_APP}).encode()).rstrip(b"=").decode()
    with pytest.raises(ValueError):
        app_check.verify_token(f"{header}.{other}.{signature}", app=admin_app)  # tampered payload
    key, kid = app_check_key(srv)
    now = int(time.time())
    forged = {
        "expired": {**claims, "iat": now - 7200, "exp": now - 3600},
        "wrong project": {**claims, "aud": ["projects/999", "projects/other-project"]},
        "wrong issuer": {**claims, "iss": "https://evil.example.com/123456789012"},
        "aud not a list": {**claims, "aud": f"projects/{PROJECT}"},
    }
    for name, bad in forged.items():
        t = jwt.encode(bad, key, algorithm="RS256", headers={"kid": kid, "typ": "JWT"})
        with pytest.raises(ValueError):
            app_check.verify_token(t, app=admin_app)
    # A token for another (unregistered) app: the Admin SDK reports its app id; Hearth refuses it.
    wrong_app = jwt.encode({**claims, "sub": UNREGISTERED_APP}, key, algorithm="RS256", headers={"kid": kid, "typ": "JWT"})
    assert app_check.verify_token(wrong_app, app=admin_app)["app_id"] == UNREGISTERED_APP != APP
    user = ApiUser(srv)
    for bad in [wrong_app, *(jwt.encode(b, key, algorithm="RS256", headers={"kid": kid, "typ": "JWT"}) for b in forged.values()),
                f"{header}.{other}.{signature}"]:
        r = user.call("GET", "/v1/files", headers={"Authorization": f"Bearer {user.token}", "X-Firebase-AppCheck": bad})
        assert r.status_code == 401 and r.json() == {"detail": "Invalid App Check token"}


def test_limited_use_tokens_are_consumed_once(srv, admin_app):
    r = exchange_debug(srv, limited_use=True)
    assert r.status_code == 200, r.text
    token = r.json()["token"]
    first = app_check.verify_token(token, app=admin_app, consume=True)
    assert first["already_consumed"] is False and first["app_id"] == APP
    second = app_check.verify_token(token, app=admin_app, consume=True)
    assert second["already_consumed"] is True
    # The consume endpoint needs the admin credential and a valid token.
    url = f"{srv.api_base}/v1beta/projects/{PROJECT}:verifyAppCheckToken"
    assert requests.post(url, json={"app_check_token": token}, timeout=30).status_code == 401
    user = ApiUser(srv)
    assert requests.post(url, json={"app_check_token": token}, headers={"Authorization": f"Bearer {user.token}"}, timeout=30).status_code == 403
    bad = requests.post(url, json={"app_check_token": PLACEHOLDER}, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, timeout=30)
    assert bad.status_code == 403 and bad.json()["error"]["status"] == "PERMISSION_DENIED"


def test_exchange_errors(srv):
    r = exchange_debug(srv, secret="not-a-registered-secret")
    assert r.status_code == 403 and r.json()["error"]["status"] == "PERMISSION_DENIED"
    r = exchange_debug(srv, app_id=OTHER_APP)  # registered app, but the secret is APP's
    assert r.status_code == 403
    r = exchange_debug(srv, app_id=UNREGISTERED_APP)
    assert r.status_code == 404 and r.json()["error"]["status"] == "NOT_FOUND"
    r = exchange_debug(srv, app_id="not-an-app-id")
    assert r.status_code == 400 and r.json()["error"]["status"] == "INVALID_ARGUMENT"
    r = requests.post(f"{srv.api_base}/v1/projects/other-project/apps/{APP}:exchangeDebugToken", json={"debug_token": DEBUG_SECRET}, timeout=30)
    assert r.status_code == 404
    for body in ({}, {"debug_token": 5}, {"debug_token": DEBUG_SECRET, "limited_use": "yes"}):
        r = requests.post(f"{srv.api_base}/v1/projects/{PROJECT}/apps/{APP}:exchangeDebugToken", json=body, timeout=30)
        assert r.status_code == 400, (body, r.text)
    r = requests.post(f"{srv.api_base}/v1/projects/{PROJECT}/apps/{APP}:exchangeDebugToken", data=b"{nope", timeout=30)
    assert r.status_code == 400


def custom_token(srv, app_id=APP, **overrides):
    """What the Admin SDKs' createToken signs: iss = sub = the service account, aud = the exchange service."""
    sa = srv.service_account
    now = int(time.time())
    claims = {"iss": sa["client_email"], "sub": sa["client_email"], "app_id": app_id, "aud": CUSTOM_AUD, "iat": now, "exp": now + 300,
              **overrides}
    return jwt.encode(claims, sa["private_key"], algorithm="RS256", headers={"kid": sa["private_key_id"]})


def test_custom_token_exchange(srv, admin_app):
    url = f"{srv.api_base}/v1/projects/{PROJECT}/apps/{APP}:exchangeCustomToken"
    admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    r = requests.post(url, json={"customToken": custom_token(srv, ttl="7200s")}, headers=admin, timeout=30)
    assert r.status_code == 200, r.text
    assert r.json()["ttl"] == "7200s"
    claims = app_check.verify_token(r.json()["token"], app=admin_app)
    assert claims["app_id"] == APP and claims["exp"] - claims["iat"] == 7200
    # Without the admin credential; for another app; another audience; expired; a stranger's key; a bad ttl.
    assert requests.post(url, json={"customToken": custom_token(srv)}, timeout=30).status_code == 401
    from cryptography.hazmat.primitives.asymmetric import rsa
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    now = int(time.time())
    sa = srv.service_account
    bad_tokens = [
        custom_token(srv, app_id=OTHER_APP),
        custom_token(srv, aud="https://identitytoolkit.googleapis.com/google.identity.identitytoolkit.v1.IdentityToolkit"),
        custom_token(srv, iat=now - 7200, exp=now - 3600),
        jwt.encode({"iss": sa["client_email"], "sub": sa["client_email"], "app_id": APP, "aud": CUSTOM_AUD, "iat": now, "exp": now + 300},
                   stranger, algorithm="RS256"),
        custom_token(srv, ttl="60s"),
        "garbage",
    ]
    for bad in bad_tokens:
        r = requests.post(url, json={"customToken": bad}, headers=admin, timeout=30)
        assert r.status_code == 403, r.text


def test_enforced_on_the_file_api(srv):
    user = ApiUser(srv)
    body = {"contentType": "image/jpeg", "fileExtension": "jpg"}
    r = user.call("POST", "/v1/files/presign-upload", json=body)
    assert r.status_code == 401 and r.json() == {"detail": "Missing App Check token"}
    r = user.call("POST", "/v1/files/presign-upload", json=body, headers={"Authorization": f"Bearer {user.token}", "X-Firebase-AppCheck": PLACEHOLDER})
    assert r.status_code == 401 and r.json() == {"detail": "Invalid App Check token"}
    token = exchange_debug(srv).json()["token"]
    r = user.call("POST", "/v1/files/presign-upload", json=body, headers={"Authorization": f"Bearer {user.token}", "X-Firebase-AppCheck": token})
    assert r.status_code == 200, r.text
    # The ID token is checked first, as in the reference service.
    r = requests.post(f"{srv.api_base}/v1/files/presign-upload", json=body, headers={"X-Firebase-AppCheck": token}, timeout=30)
    assert r.status_code == 401 and r.json() == {"detail": "Missing bearer token"}
    # Removing the app revokes its tokens.
    admin_cli(srv, "apps", "add", "1:123456789012:web:beef")
    admin_cli(srv, "debug-tokens", "add", "--app", "1:123456789012:web:beef", "--name", "tmp", "tmp-secret-123")
    short = exchange_debug(srv, app_id="1:123456789012:web:beef", secret="tmp-secret-123").json()["token"]
    assert user.call("GET", "/v1/files", headers={"Authorization": f"Bearer {user.token}", "X-Firebase-AppCheck": short}).status_code == 200
    admin_cli(srv, "apps", "remove", "1:123456789012:web:beef")
    assert user.call("GET", "/v1/files", headers={"Authorization": f"Bearer {user.token}", "X-Firebase-AppCheck": short}).status_code == 401


@pytest.mark.single_server(reason="counts in one process's /metrics registry")
def test_monitor_mode_allows_and_counts(tmp_path_factory):
    s = start_api_server(tmp_path_factory, "api-appcheck-monitor", {"appCheck": {"enforcement": {"api": "monitor"}}})
    try:
        user = ApiUser(s)
        assert user.call("GET", "/v1/files").status_code == 200
        r = user.call("GET", "/v1/files", headers={"Authorization": f"Bearer {user.token}", "X-Firebase-AppCheck": PLACEHOLDER})
        assert r.status_code == 200
        assert "invalid App Check token allowed (monitor)" in s.output()
        metrics = requests.get(f"{s.api_base}/metrics", timeout=30).text
        assert 'hearth_app_check_requests_total{service="api",mode="monitor",outcome="missing"} 1' in metrics
        assert 'hearth_app_check_requests_total{service="api",mode="monitor",outcome="invalid"} 1' in metrics
    finally:
        s.stop()


def test_cli_lists_and_validates(srv):
    assert APP in admin_cli(srv, "apps", "list")
    listed = admin_cli(srv, "debug-tokens", "list", "--app", APP)
    assert "ci" in listed and DEBUG_SECRET not in listed
    bad = subprocess.run([hearth_binary(), "admin", "app-check", "apps", "add", "../evil", "--data-dir", str(srv.data_dir)],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0


OPEN_FIRESTORE_RULES = """rules_version = '2';
service cloud.firestore {
  match /databases/{database}/documents {
    match /{document=**} { allow read, write: if request.auth != null; }
  }
}
"""
OPEN_STORAGE_RULES = """rules_version = '2';
service firebase.storage {
  match /b/{bucket}/o {
    match /{allPaths=**} { allow read, write: if request.auth != null; }
  }
}
"""


def test_enforced_on_firestore_and_storage(tmp_path_factory):
    """X-Firebase-AppCheck on Firestore REST and Firebase Storage, x-firebase-appcheck metadata on
    Firestore gRPC: refused with each protocol's PERMISSION_DENIED when missing or invalid."""
    import grpc
    from google.api_core import exceptions as gexc
    from google.cloud.firestore_v1.services.firestore import FirestoreClient
    from google.cloud.firestore_v1.services.firestore.transports.grpc import FirestoreGrpcTransport

    rules_dir = tmp_path_factory.mktemp("appcheck-rules")
    (rules_dir / "firestore.rules").write_text(OPEN_FIRESTORE_RULES)
    (rules_dir / "storage.rules").write_text(OPEN_STORAGE_RULES)
    s = start_api_server(
        tmp_path_factory, "api-appcheck-services",
        {"appCheck": {"enforcement": {"firestore": "enforce", "storage": "enforce"}}},
        extra_args=("--firestore-rules", str(rules_dir / "firestore.rules"), "--storage-rules", str(rules_dir / "storage.rules")))
    try:
        admin_cli(s, "apps", "add", APP)
        admin_cli(s, "debug-tokens", "add", "--app", APP, DEBUG_SECRET)
        token = exchange_debug(s).json()["token"]
        user = ApiUser(s)
        auth = {"Authorization": f"Bearer {user.token}"}
        doc = f"{s.rest_base}/v1/projects/{PROJECT}/databases/(default)/documents/things/t1"
        body = {"fields": {"n": {"integerValue": "1"}}}
        for extra in ({}, {"X-Firebase-AppCheck": PLACEHOLDER}):
            r = requests.patch(doc, json=body, headers={**auth, **extra}, timeout=30)
            assert r.status_code == 403 and r.json()["error"]["status"] == "PERMISSION_DENIED", r.text
        r = requests.patch(doc, json=body, headers={**auth, "X-Firebase-AppCheck": token}, timeout=30)
        assert r.status_code == 200, r.text
        # The admin credential is privileged: no App Check needed.
        assert requests.get(doc, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, timeout=30).status_code == 200

        channel = grpc.insecure_channel(f"127.0.0.1:{s.port}")
        client = FirestoreClient(transport=FirestoreGrpcTransport(channel=channel))
        name = f"projects/{PROJECT}/databases/(default)/documents/things/t1"
        bearer = ("authorization", f"Bearer {user.token}")
        for metadata in ([bearer], [bearer, ("x-firebase-appcheck", PLACEHOLDER)]):
            with pytest.raises(gexc.PermissionDenied):
                client.get_document(request={"name": name}, metadata=metadata, timeout=30)
        got = client.get_document(request={"name": name}, metadata=[bearer, ("x-firebase-appcheck", token)], timeout=30)
        assert got.fields["n"].integer_value == 1
        channel.close()

        bucket = f"{PROJECT}.appspot.com"
        upload = f"{s.storage_base}/v0/b/{bucket}/o?name=u/a.txt"
        firebase_auth = {"Authorization": f"Firebase {user.token}", "Content-Type": "text/plain"}
        r = requests.post(upload, data=b"hi", headers=firebase_auth, timeout=30)
        assert r.status_code == 403, r.text
        r = requests.post(upload, data=b"hi", headers={**firebase_auth, "X-Firebase-AppCheck": PLACEHOLDER}, timeout=30)
        assert r.status_code == 403, r.text
        r = requests.post(upload, data=b"hi", headers={**firebase_auth, "X-Firebase-AppCheck": token}, timeout=30)
        assert r.status_code == 200, r.text
    finally:
        s.stop()


def test_enforced_on_auth_and_database(tmp_path_factory):
    """`auth` and `database` enforcement: Identity Toolkit operations refuse a missing, tampered,
    expired or replayed (limited-use, second request) token with Firebase Auth's 401
    FIREBASE_APP_CHECK_TOKEN_IS_INVALID; the Realtime Database REST API with its 401
    {"error": "Permission denied"}. Admin credentials pass."""
    rules_dir = tmp_path_factory.mktemp("appcheck-db-rules")
    (rules_dir / "database.rules.json").write_text(json.dumps({"rules": {".read": "auth != null", ".write": "auth != null"}}))
    s = start_api_server(
        tmp_path_factory, "api-appcheck-auth-db", {"appCheck": {"enforcement": {"auth": "enforce", "database": "enforce"}}},
        extra_args=("--database-rules", str(rules_dir / "database.rules.json")), service_account=True)
    try:
        admin_cli(s, "apps", "add", APP)
        admin_cli(s, "debug-tokens", "add", "--app", APP, DEBUG_SECRET)
        token = exchange_debug(s).json()["token"]
        header, payload, signature = token.split(".")
        claims = jwt.decode(token, options={"verify_signature": False})
        tampered = header + "." + base64.urlsafe_b64encode(json.dumps({**claims, "sub": OTHER_APP}).encode()).rstrip(b"=").decode() + "." + signature
        key, kid = app_check_key(s)
        now = int(time.time())
        expired = jwt.encode({**claims, "iat": now - 7200, "exp": now - 3600}, key, algorithm="RS256", headers={"kid": kid, "typ": "JWT"})

        sign_up = f"{s.auth_base}/identitytoolkit.googleapis.com/v1/accounts:signUp?key=fake-api-key"

        def signup(extra):
            return requests.post(sign_up, json={"email": f"ac-{uuid.uuid4().hex[:8]}@example.com", "password": "secret-pass-1",
                                                "returnSecureToken": True}, headers=extra, timeout=30)

        for extra in ({}, {"X-Firebase-AppCheck": PLACEHOLDER}, {"X-Firebase-AppCheck": tampered}, {"X-Firebase-AppCheck": expired}):
            r = signup(extra)
            assert r.status_code == 401, r.text
            assert r.json()["error"]["message"] == "FIREBASE_APP_CHECK_TOKEN_IS_INVALID" and r.json()["error"]["status"] == "UNAUTHENTICATED"
        ok = signup({"X-Firebase-AppCheck": token})
        assert ok.status_code == 200, ok.text
        id_token = ok.json()["idToken"]
        # A limited-use token is good for one request: the replay is refused.
        limited = exchange_debug(s, limited_use=True).json()["token"]
        assert signup({"X-Firebase-AppCheck": limited}).status_code == 200
        replay = signup({"X-Firebase-AppCheck": limited})
        assert replay.status_code == 401 and replay.json()["error"]["message"] == "FIREBASE_APP_CHECK_TOKEN_IS_INVALID"
        # Admin credentials pass without a token.
        admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
        r = requests.post(f"{s.auth_base}/identitytoolkit.googleapis.com/v1/projects/{PROJECT}/accounts", headers=admin,
                          json={"email": f"admin-{uuid.uuid4().hex[:8]}@example.com"}, timeout=30)
        assert r.status_code == 200, r.text

        db = f"http://127.0.0.1:{s.ports['database']}/things/t1.json"
        for extra in ({}, {"X-Firebase-AppCheck": PLACEHOLDER}, {"X-Firebase-AppCheck": tampered}, {"X-Firebase-AppCheck": expired}):
            r = requests.put(db, params={"auth": id_token}, json={"n": 1}, headers=extra, timeout=30)
            assert r.status_code == 401 and r.json() == {"error": "Permission denied"}, r.text
            r = requests.get(db, params={"auth": id_token}, headers=extra, timeout=30)
            assert r.status_code == 401, r.text
        r = requests.put(db, params={"auth": id_token}, json={"n": 1}, headers={"X-Firebase-AppCheck": token}, timeout=30)
        assert r.status_code == 200, r.text
        limited = exchange_debug(s, limited_use=True).json()["token"]
        assert requests.get(db, params={"auth": id_token}, headers={"X-Firebase-AppCheck": limited}, timeout=30).json() == {"n": 1}
        assert requests.get(db, params={"auth": id_token}, headers={"X-Firebase-AppCheck": limited}, timeout=30).status_code == 401
        # The admin credential passes without a token.
        assert requests.get(db, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, timeout=30).json() == {"n": 1}

        # The same gate on the SDKs' WebSocket protocol: data requests need an `appcheck` message
        # whose token passes (checked once per connection); admins pass without one.
        from test_database_websocket import Socket
        ns = f"{PROJECT}-default-rtdb"
        ws = Socket(s, ns=ns)
        try:
            assert ws.request("auth", {"cred": id_token})["s"] == "ok"
            assert ws.request("g", {"p": "/things/t1", "q": {}})["s"] == "permission_denied"
            assert ws.request("p", {"p": "/things/t2", "d": 1})["s"] == "permission_denied"
            for bad in (PLACEHOLDER, tampered, expired):
                assert ws.request("appcheck", {"token": bad})["s"] == "invalid_token"
                assert ws.request("g", {"p": "/things/t1", "q": {}})["s"] == "permission_denied"
            assert ws.request("appcheck", {"token": token})["s"] == "ok"
            answer = ws.request("g", {"p": "/things/t1", "q": {}})
            assert answer == {"s": "ok", "d": {"n": 1}}, answer
            assert ws.request("p", {"p": "/things/t2", "d": 2})["s"] == "ok"
        finally:
            ws.close()
        limited = exchange_debug(s, limited_use=True).json()["token"]
        first, second = Socket(s, ns=ns), Socket(s, ns=ns)
        try:
            assert first.request("appcheck", {"token": limited})["s"] == "ok"
            assert second.request("appcheck", {"token": limited})["s"] == "invalid_token", "a limited-use token is single-use"
            assert first.request("auth", {"cred": id_token})["s"] == "ok"
            assert first.request("g", {"p": "/things/t2", "q": {}}) == {"s": "ok", "d": 2}
        finally:
            first.close()
            second.close()
        admin_ws = Socket(s, ns=ns)
        try:
            assert admin_ws.request("gauth", {"cred": ADMIN_TOKEN})["s"] == "ok"
            assert admin_ws.request("g", {"p": "/things/t1", "q": {}}) == {"s": "ok", "d": {"n": 1}}
        finally:
            admin_ws.close()
        metrics = requests.get(f"{s.api_base}/metrics", timeout=30).text
        assert 'service="auth"' in metrics and 'service="database"' in metrics
    finally:
        s.stop()
