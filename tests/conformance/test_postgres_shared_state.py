"""Two `hearth serve --database-url` processes over ONE PostgreSQL database behave as one server
(docs/postgres.md, "Several replicas"): what one issues the other accepts, and what one changes
the other sees at once.

- an ID token minted on A verifies on B (firebase-admin's verify_id_token against B's published
  keys, and a Firestore request on B under rules that need a signed-in user), and the other way;
- a custom token signed by a service account signs in on both;
- an S3 key created through A's data directory signs requests B accepts (boto3);
- an object deleted on A is gone on B at once, though B read it just before (google-cloud-storage);
- an App Check token issued by A verifies against B's JWKS (firebase-admin's app_check);
- the failed-sign-in limit counts the attempts made on both servers.

Production mode (no --emulator): tokens are RS256-signed, so a server that signed with keys of
its own would be refused by the other. Each server has its own data directory. Uses
HEARTH_TEST_DATABASE_URL's server when set, else a PostgreSQL of its own (``LocalPostgres``);
skipped where neither is available."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import time
import uuid
from pathlib import Path

import boto3
import firebase_admin
import pytest
import requests
from botocore.config import Config
from botocore.exceptions import ClientError
from firebase_admin import _token_gen, app_check, auth, credentials
from google.api_core import exceptions as gexc
from google.cloud import storage
from google.oauth2 import service_account

from conftest import HearthServer, PROJECT, TARGET, fresh_database_url, hearth_bin

pytestmark = pytest.mark.skipif(TARGET != "hearth", reason="hearth serve --database-url is Hearth's own")

ADMIN_TOKEN = "shared-admin-" + uuid.uuid4().hex
API_KEY = "fake-api-key"
V1 = "/identitytoolkit.googleapis.com/v1"
APP = "1:123456789012:web:5a5a5a5a5a"
DEBUG_SECRET = "debug-" + uuid.uuid4().hex
RULES = """rules_version = '2';
service cloud.firestore {
  match /databases/{database}/documents {
    match /shared/{doc} { allow read, write: if request.auth != null; }
  }
}
"""
FAILURES_PER_ACCOUNT = 4


def clean_env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items()
           if (not k.startswith("HEARTH_") or k == "HEARTH_BIN") and not k.endswith("_EMULATOR_HOST")}
    env.update(extra)
    return env


def cli(url: str, data_dir: Path, *args: str) -> str:
    done = subprocess.run([hearth_bin(), *args, "--data-dir", str(data_dir)], capture_output=True, text=True, timeout=120,
                          env=clean_env(HEARTH_DATABASE_URL=url))
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def database_url():
    yield from fresh_database_url()


@pytest.fixture(scope="module")
def pair(database_url, tmp_path_factory):
    """Servers A and B over one database; the service account, App Check app and debug token
    registered through A's data directory before either starts."""
    hearth_bin()
    root = tmp_path_factory.mktemp("shared-state")
    rules = root / "firestore.rules"
    rules.write_text(RULES)
    args = ("--admin-token", ADMIN_TOKEN, "--firestore-rules", str(rules), "--auth-failures-per-account", str(FAILURES_PER_ACCOUNT))
    a = HearthServer(hearth_bin(), root / "a", emulator=False, extra_args=args, database_url=database_url)
    b = HearthServer(hearth_bin(), root / "b", emulator=False, extra_args=args, database_url=database_url)
    account = root / "service-account.json"
    cli(database_url, a.data_dir, "admin", "service-account", "create", "--project", PROJECT, "--out", str(account), "--name", "shared")
    cli(database_url, a.data_dir, "admin", "app-check", "apps", "add", APP)
    cli(database_url, a.data_dir, "admin", "app-check", "debug-tokens", "add", "--app", APP, "--name", "ci", DEBUG_SECRET)
    a.start()
    b.start()
    a.service_account = b.service_account = json.loads(account.read_text())
    a.database_url = b.database_url = database_url
    yield a, b
    a.stop()
    b.stop()


def sign_up(srv) -> dict:
    r = requests.post(f"http://127.0.0.1:{srv.auth_port}{V1}/accounts:signUp?key={API_KEY}",
                      json={"email": f"s-{uuid.uuid4().hex[:10]}@example.com", "password": "secret-pass-1", "returnSecureToken": True},
                      timeout=30)
    assert r.status_code == 200, r.text
    return r.json()


def sign_in(srv, email: str, password: str) -> requests.Response:
    return requests.post(f"http://127.0.0.1:{srv.auth_port}{V1}/accounts:signInWithPassword?key={API_KEY}",
                         json={"email": email, "password": password, "returnSecureToken": True}, timeout=30)


def verify_on(srv, id_token: str) -> dict:
    """firebase-admin's verify_id_token, checking the signature against `srv`'s published certificates."""
    assert "FIREBASE_AUTH_EMULATOR_HOST" not in os.environ  # else firebase-admin would not check signatures
    original = _token_gen.ID_TOKEN_CERT_URI
    # Read when the app's token verifier is made (at its first use): patched until the call returns.
    _token_gen.ID_TOKEN_CERT_URI = f"http://127.0.0.1:{srv.auth_port}/robot/v1/metadata/x509/securetoken@system.gserviceaccount.com"
    app = firebase_admin.initialize_app(credentials.Certificate(srv.service_account), {"projectId": PROJECT},
                                        name=f"shared-{uuid.uuid4().hex}")
    try:
        return auth.verify_id_token(id_token, app=app)
    finally:
        firebase_admin.delete_app(app)
        _token_gen.ID_TOKEN_CERT_URI = original


def firestore_doc(srv, method: str, doc: str, token: str, **kw) -> requests.Response:
    return requests.request(method, f"http://127.0.0.1:{srv.port}/v1/projects/{PROJECT}/databases/(default)/documents/shared/{doc}",
                            headers={"Authorization": f"Bearer {token}"}, timeout=30, **kw)


def test_an_id_token_minted_on_one_server_verifies_on_the_other(pair):
    a, b = pair
    for minted, verifier in ((a, b), (b, a)):
        up = sign_up(minted)
        claims = verify_on(verifier, up["idToken"])
        assert claims["uid"] == up["localId"] and claims["iss"] == f"https://securetoken.google.com/{PROJECT}"
        # The other server's Firestore takes it as the user (the rules need request.auth).
        doc = uuid.uuid4().hex
        body = {"fields": {"owner": {"stringValue": up["localId"]}}}
        r = firestore_doc(verifier, "PATCH", doc, up["idToken"], json=body)
        assert r.status_code == 200, r.text
        assert firestore_doc(minted, "GET", doc, up["idToken"]).json()["fields"]["owner"]["stringValue"] == up["localId"]
        # A forged signature is refused by both.
        head, payload, signature = up["idToken"].split(".")
        forged = f"{head}.{payload}.{signature[:-4]}AAAA"
        for srv in (a, b):
            assert firestore_doc(srv, "GET", doc, forged).status_code == 401


def test_a_custom_token_signed_by_a_service_account_signs_in_on_both(pair):
    a, b = pair
    app = firebase_admin.initialize_app(credentials.Certificate(a.service_account), {"projectId": PROJECT},
                                        name=f"custom-{uuid.uuid4().hex}")
    try:
        token = auth.create_custom_token("shared-uid", app=app).decode()
    finally:
        firebase_admin.delete_app(app)
    for srv in (a, b):
        r = requests.post(f"http://127.0.0.1:{srv.auth_port}{V1}/accounts:signInWithCustomToken?key={API_KEY}",
                          json={"token": token, "returnSecureToken": True}, timeout=30)
        assert r.status_code == 200, r.text
        payload = json.loads(_b64(r.json()["idToken"].split(".")[1]))
        assert payload["user_id"] == "shared-uid"


def test_a_service_account_registered_through_one_server_signs_custom_tokens_the_other_accepts(pair, tmp_path):
    a, b = pair
    out = tmp_path / "late-account.json"
    cli(b.database_url, b.data_dir, "admin", "service-account", "create", "--project", PROJECT, "--out", str(out), "--name", "late-registered")
    app = firebase_admin.initialize_app(credentials.Certificate(json.loads(out.read_text())), {"projectId": PROJECT},
                                        name=f"late-{uuid.uuid4().hex}")
    try:
        token = auth.create_custom_token("late-uid", app=app).decode()
    finally:
        firebase_admin.delete_app(app)
    # Both servers started before it was registered: each reads the service accounts again within 5 s.
    deadline = time.monotonic() + 30
    for srv in (a, b):
        while True:
            r = requests.post(f"http://127.0.0.1:{srv.auth_port}{V1}/accounts:signInWithCustomToken?key={API_KEY}",
                              json={"token": token, "returnSecureToken": True}, timeout=30)
            if r.status_code == 200 or time.monotonic() > deadline:
                break
            assert r.json()["error"]["message"].startswith("INVALID_CUSTOM_TOKEN"), r.text
            time.sleep(0.5)
        assert r.status_code == 200, r.text


def _b64(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def s3(srv, key: dict):
    return boto3.client(
        "s3", endpoint_url=f"http://127.0.0.1:{srv.ports['s3']}", region_name="us-east-1",
        aws_access_key_id=key["accessKeyId"], aws_secret_access_key=key["secretAccessKey"],
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1, "mode": "standard"}, signature_version="s3v4"))


def test_an_s3_key_created_through_one_server_signs_requests_the_other_accepts(pair):
    a, b = pair
    key = json.loads(cli(a.database_url, a.data_dir, "admin", "s3-keys", "create", "--json"))
    bucket = f"{PROJECT}.appspot.com"
    client = s3(b, key)
    client.put_object(Bucket=bucket, Key="s3/shared.txt", Body=b"from B")
    assert client.get_object(Bucket=bucket, Key="s3/shared.txt")["Body"].read() == b"from B"
    # A wrong secret is refused by both.
    secret = key["secretAccessKey"]
    # The last character changed to one it is not (a fixed "x" left one secret in 62 unchanged).
    wrong_secret = secret[:-1] + ("y" if secret.endswith("x") else "x")
    assert wrong_secret != secret
    for srv in (a, b):
        with pytest.raises(ClientError) as refused:
            s3(srv, {**key, "secretAccessKey": wrong_secret}).head_object(Bucket=bucket, Key="s3/shared.txt")
        assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    # Revoked through B's data directory: A refuses it at once.
    s3(a, key).list_objects_v2(Bucket=bucket)
    cli(b.database_url, b.data_dir, "admin", "s3-keys", "revoke", key["accessKeyId"])
    with pytest.raises(ClientError) as revoked:
        s3(a, key).list_objects_v2(Bucket=bucket)
    assert revoked.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403


def gcs(srv):
    info = dict(srv.service_account)
    info["token_uri"] = f"http://127.0.0.1:{srv.auth_port}/token"
    creds = service_account.Credentials.from_service_account_info(info, scopes=["https://www.googleapis.com/auth/devstorage.read_write"])
    return storage.Client(project=PROJECT, credentials=creds, client_options={"api_endpoint": f"http://127.0.0.1:{srv.ports['storage']}"})


def test_an_object_deleted_on_one_server_is_gone_on_the_other_at_once(pair):
    a, b = pair
    bucket = f"{PROJECT}.appspot.com"
    name = f"shared/{uuid.uuid4().hex}.txt"
    gcs(a).bucket(bucket).blob(name).upload_from_string(b"v1", content_type="text/plain")
    on_b = gcs(b).bucket(bucket)
    assert on_b.get_blob(name).size == 2  # B has read (and, before, cached) the row
    gcs(a).bucket(bucket).blob(name).delete()
    assert on_b.get_blob(name) is None
    with pytest.raises(gexc.NotFound):
        on_b.blob(name).reload()
    # Replaced on A: B reports the new generation at once.
    gcs(a).bucket(bucket).blob(name).upload_from_string(b"v2-longer", content_type="text/plain")
    first = on_b.get_blob(name)
    gcs(a).bucket(bucket).blob(name).upload_from_string(b"v3", content_type="text/plain")
    second = on_b.get_blob(name)
    assert first.size == 9 and second.size == 2 and second.generation != first.generation


def test_an_app_check_token_issued_by_one_server_verifies_on_the_other(pair):
    a, b = pair
    r = requests.post(f"http://127.0.0.1:{a.ports['api']}/v1/projects/{PROJECT}/apps/{APP}:exchangeDebugToken?key={API_KEY}",
                      json={"debug_token": DEBUG_SECRET}, timeout=30)
    assert r.status_code == 200, r.text
    token = r.json()["token"]
    original = app_check._AppCheckService._JWKS_URL
    app_check._AppCheckService._JWKS_URL = f"http://127.0.0.1:{b.ports['api']}/v1/jwks"
    app = firebase_admin.initialize_app(credentials.Certificate(b.service_account), {"projectId": PROJECT},
                                        name=f"appcheck-{uuid.uuid4().hex}")
    try:
        claims = app_check.verify_token(token, app=app)
    finally:
        firebase_admin.delete_app(app)
        app_check._AppCheckService._JWKS_URL = original
    assert claims["app_id"] == APP
    # Both publish the same keys.
    jwks = [requests.get(f"http://127.0.0.1:{s.ports['api']}/v1/jwks", timeout=30).json() for s in (a, b)]
    assert jwks[0] == jwks[1]


def test_failed_sign_ins_are_counted_across_both_servers(pair):
    a, b = pair
    up = sign_up(a)
    email = up["email"]
    for srv in (a, b, a, b)[:FAILURES_PER_ACCOUNT]:
        r = sign_in(srv, email, "wrong-password")
        assert r.status_code == 400 and r.json()["error"]["message"] in ("INVALID_LOGIN_CREDENTIALS", "INVALID_PASSWORD"), r.text
    # Each server saw half of the failures; together they reach the limit: both refuse, even the right password.
    for srv in (a, b):
        r = sign_in(srv, email, "secret-pass-1")
        assert r.status_code == 400 and r.json()["error"]["message"].startswith("TOO_MANY_ATTEMPTS_TRY_LATER"), r.text
