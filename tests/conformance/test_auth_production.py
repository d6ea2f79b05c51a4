"""Firebase Auth in production mode (no --emulator): ID tokens are RS256 and verify with an
independent library (PyJWT) against the published JWKS and x509 certificates; unsigned, forged,
wrong-audience, wrong-issuer and expired tokens are refused; admin operations need a credential;
a Hearth service account works with google-auth's service_account.Credentials."""

from __future__ import annotations

import time
import uuid

import google.auth.transport.requests
import jwt
import pytest
import requests
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from google.oauth2 import service_account

from authutil import V1, AuthRest, expect_error, jwt_payload, start
from conftest import PROJECT, signing_keys

pytestmark = pytest.mark.hearth_only(reason="Firebase Auth is served by Hearth, not by the Firestore emulator")

ADMIN_TOKEN = "prod-admin-" + uuid.uuid4().hex
CUSTOM_AUD = "https://identitytoolkit.googleapis.com/google.identity.identitytoolkit.v1.IdentityToolkit"


@pytest.fixture(scope="module")
def prod(tmp_path_factory):
    srv = start(tmp_path_factory, "auth-production", emulator=False, extra_args=("--admin-token", ADMIN_TOKEN))
    yield srv
    srv.stop()


@pytest.fixture
def rest(prod):
    return AuthRest(prod)


def sa_info(prod) -> dict:
    info = dict(prod.service_account)
    info["token_uri"] = f"{prod.auth_base}/token"
    return info


def server_key(prod):
    """The server's active signing key, read from the data dir (or its database) — to forge well-signed tokens with bad claims."""
    now = time.time()
    _, kid, pem = [k for k in signing_keys(prod, "auth") if k[0] <= now][-1]
    return serialization.load_pem_private_key(pem, None), kid


def test_tokens_verify_with_pyjwt_against_jwks_and_x509(prod, rest):
    up = rest.sign_up(f"p-{uuid.uuid4().hex[:8]}@example.com", "secret123")
    token = up["idToken"]
    header = jwt.get_unverified_header(token)
    assert header["alg"] == "RS256" and header["kid"]
    for base in (prod.auth_base, prod.auth_base + "/www.googleapis.com"):
        client = jwt.PyJWKClient(f"{base}/service_accounts/v1/jwk/securetoken@system.gserviceaccount.com")
        key = client.get_signing_key_from_jwt(token)
        claims = jwt.decode(token, key.key, algorithms=["RS256"], audience=PROJECT,
                            issuer=f"https://securetoken.google.com/{PROJECT}")
        assert claims["sub"] == up["localId"]
        r = rest.session.get(f"{base}/robot/v1/metadata/x509/securetoken@system.gserviceaccount.com")
        assert r.status_code == 200
        cache = r.headers["Cache-Control"]
        assert cache.startswith("public") and int(cache.split("max-age=")[1].split(",")[0]) > 0
        certs = r.json()
        cert = x509.load_pem_x509_certificate(certs[header["kid"]].encode())
        claims = jwt.decode(token, cert.public_key(), algorithms=["RS256"], audience=PROJECT,
                            issuer=f"https://securetoken.google.com/{PROJECT}")
        assert claims["user_id"] == up["localId"]


def test_unsigned_and_forged_tokens_are_refused(prod, rest):
    up = rest.sign_up(f"f-{uuid.uuid4().hex[:8]}@example.com", "secret123")
    claims = jwt_payload(up["idToken"])
    unsigned = jwt.encode(claims, None, algorithm="none")
    expect_error(rest.v1("lookup", {"idToken": unsigned}), "INVALID_ID_TOKEN")
    from cryptography.hazmat.primitives.asymmetric import rsa
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    forged = jwt.encode(claims, stranger, algorithm="RS256", headers={"kid": jwt.get_unverified_header(up["idToken"])["kid"]})
    expect_error(rest.v1("lookup", {"idToken": forged}), "INVALID_ID_TOKEN")
    key, kid = server_key(prod)
    now = int(time.time())
    for bad, error in [({"aud": "other-project"}, "INVALID_ID_TOKEN"), ({"iss": "https://securetoken.google.com/other"}, "INVALID_ID_TOKEN"),
                       ({"iat": now - 7200, "exp": now - 3600, "auth_time": now - 7200}, "TOKEN_EXPIRED")]:
        token = jwt.encode({**claims, **bad}, key, algorithm="RS256", headers={"kid": kid})
        expect_error(rest.v1("lookup", {"idToken": token}), error)
    good = jwt.encode(claims, key, algorithm="RS256", headers={"kid": kid})
    assert rest.v1("lookup", {"idToken": good}).status_code == 200
    # Unsigned custom tokens (the emulator's) are refused in production too.
    custom = jwt.encode({"iss": "x@example.com", "sub": "x@example.com", "aud": CUSTOM_AUD, "uid": "u1", "iat": now,
                         "exp": now + 3600}, None, algorithm="none")
    expect_error(rest.v1("signInWithCustomToken", {"token": custom}), "INVALID_CUSTOM_TOKEN")


def test_admin_endpoints_refuse_without_credentials(prod, rest):
    body = {"localId": f"admin-{uuid.uuid4().hex[:8]}", "email": f"a-{uuid.uuid4().hex[:8]}@example.com", "password": "secret123"}
    for admin in (None, "owner", "not-the-token"):
        expect_error(rest.call(f"{V1}/projects/{PROJECT}/accounts", body, admin=admin), "INSUFFICIENT_PERMISSION", status=403)
    expect_error(rest.call(f"{V1}/projects/{PROJECT}/accounts:batchGet", method="GET"), "INSUFFICIENT_PERMISSION", status=403)
    expect_error(rest.call(f"{V1}/projects/{PROJECT}/accounts:lookup", {"localId": ["x"]}), "INSUFFICIENT_PERMISSION", status=403)
    assert rest.call(f"/emulator/v1/projects/{PROJECT}/accounts", method="DELETE").status_code == 404
    r = rest.call(f"{V1}/projects/{PROJECT}/accounts", body, admin=ADMIN_TOKEN)
    assert r.status_code == 200, r.text
    assert r.json()["localId"] == body["localId"]


def test_service_account_access_token_is_admin(prod, rest):
    creds = service_account.Credentials.from_service_account_info(
        sa_info(prod), scopes=["https://www.googleapis.com/auth/cloud-platform"])
    creds.refresh(google.auth.transport.requests.Request())
    assert creds.token and creds.valid
    uid = f"sa-{uuid.uuid4().hex[:8]}"
    r = rest.call(f"{V1}/projects/{PROJECT}/accounts", {"localId": uid}, admin=creds.token)
    assert r.status_code == 200, r.text
    listed = rest.call(f"{V1}/projects/{PROJECT}/accounts:lookup", {"localId": [uid]}, admin=creds.token).json()
    assert listed["users"][0]["localId"] == uid
    # A tampered access token is not.
    expect_error(rest.call(f"{V1}/projects/{PROJECT}/accounts:lookup", {"localId": [uid]}, admin=creds.token[:-4] + "AAAA"),
                 "INSUFFICIENT_PERMISSION", status=403)
    # An ID token is not an admin credential either.
    user = rest.sign_up(f"s-{uuid.uuid4().hex[:8]}@example.com", "secret123")
    expect_error(rest.call(f"{V1}/projects/{PROJECT}/accounts:lookup", {"localId": [uid]}, admin=user["idToken"]),
                 "INSUFFICIENT_PERMISSION", status=403)


def test_service_account_is_admin_on_every_service(prod, rest):
    """One identity layer: the access token google-auth obtains from Hearth's /token is admin for
    Firestore and Storage too, and google-cloud-storage works with those credentials unchanged."""
    from google.cloud import storage

    creds = service_account.Credentials.from_service_account_info(
        sa_info(prod), scopes=["https://www.googleapis.com/auth/cloud-platform"])
    creds.refresh(google.auth.transport.requests.Request())
    doc = f"{prod.rest_base}/v1/projects/{PROJECT}/databases/(default)/documents/sa/{uuid.uuid4().hex[:8]}"
    body = {"fields": {"n": {"integerValue": "7"}}}
    # Production mode, no rules: a client (no credential, or a user's ID token) is refused …
    assert rest.session.patch(doc, json=body, timeout=30).status_code == 403
    user = rest.sign_up(f"f-{uuid.uuid4().hex[:8]}@example.com", "secret123")
    r = rest.session.patch(doc, json=body, headers={"Authorization": f"Bearer {user['idToken']}"}, timeout=30)
    assert r.status_code == 403 and r.json()["error"]["status"] == "PERMISSION_DENIED"
    # … a forged access token is unauthenticated …
    r = rest.session.patch(doc, json=body, headers={"Authorization": f"Bearer {creds.token[:-4]}AAAA"}, timeout=30)
    assert r.status_code == 401, r.text
    # … and the service account is admin.
    r = rest.session.patch(doc, json=body, headers={"Authorization": f"Bearer {creds.token}"}, timeout=30)
    assert r.status_code == 200, r.text
    r = rest.session.get(doc, headers={"Authorization": f"Bearer {creds.token}"}, timeout=30)
    assert r.json()["fields"]["n"] == {"integerValue": "7"}

    client = storage.Client(project=PROJECT, credentials=creds, client_options={"api_endpoint": prod.storage_base})
    bucket = client.bucket(f"{PROJECT}.appspot.com")
    name = f"sa/{uuid.uuid4().hex[:8]}.txt"
    bucket.blob(name).upload_from_string(b"from a service account", content_type="text/plain")
    assert bucket.blob(name).download_as_bytes() == b"from a service account"
    assert name in [b.name for b in client.list_blobs(bucket, prefix="sa/")]
    anonymous = requests.get(f"{prod.storage_base}/storage/v1/b/{PROJECT}.appspot.com/o", timeout=30)
    assert anonymous.status_code in (401, 403), anonymous.text


def test_token_endpoint_refuses_bad_assertions(prod, rest):
    r = rest.session.post(f"{prod.auth_base}/token", data={"grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer",
                                                            "assertion": "garbage"})
    assert r.status_code == 400 and r.json()["error"] == "invalid_grant"
    r = rest.session.post(f"{prod.auth_base}/token", data={"grant_type": "client_credentials"})
    assert r.status_code == 400 and r.json()["error"] == "unsupported_grant_type"


def test_custom_token_signed_by_service_account(prod, rest):
    info = prod.service_account
    key = serialization.load_pem_private_key(info["private_key"].encode(), None)
    now = int(time.time())
    uid = f"ct-{uuid.uuid4().hex[:8]}"
    token = jwt.encode({"iss": info["client_email"], "sub": info["client_email"], "aud": CUSTOM_AUD, "uid": uid, "iat": now,
                        "exp": now + 3600, "claims": {"role": "editor"}}, key, algorithm="RS256",
                       headers={"kid": info["private_key_id"]})
    r = rest.v1("signInWithCustomToken", {"token": token, "returnSecureToken": True})
    assert r.status_code == 200, r.text
    claims = jwt_payload(r.json()["idToken"])
    assert claims["sub"] == uid and claims["role"] == "editor"
