"""accounts:signInWithIdp with verified OpenID Connect tokens: Sign in with Apple's nonce (hashed)
and other providers' (as given), replays of a captured token refused; provider configs made
through firebase-admin (Identity Toolkit v2 oauthIdpConfigs / inboundSamlConfigs), persisted and
trusted by signInWithIdp; email action links with an unauthorised linkDomain refused."""

from __future__ import annotations

import base64
import hashlib
import json
import time
import urllib.parse
import uuid

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from firebase_admin import auth, exceptions

from authutil import admin_app, V1, AuthRest, expect_error, start
from conftest import PROJECT

pytestmark = pytest.mark.hearth_only(reason="Firebase Auth is served by Hearth, not by the Firestore emulator")

KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
KID = "test-key-1"
APPLE_ISS = "https://appleid.apple.com"
APPLE_CLIENT = "com.example.app"
GOOGLE_ISS = "https://accounts.google.com"
GOOGLE_CLIENT = "1234.apps.googleusercontent.com"
CORP_ISS = "https://idp.example.com"
LINK_DOMAIN = "links.example.com"
KEPT: dict = {}  # configs the CRUD test leaves for the restart test (last in this file)


def b64url_uint(n: int) -> str:
    raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def jwks() -> dict:
    numbers = KEY.public_key().public_numbers()
    return {"keys": [{"kty": "RSA", "kid": KID, "alg": "RS256", "use": "sig", "n": b64url_uint(numbers.n), "e": b64url_uint(numbers.e)}]}


def id_token(iss: str, aud: str, sub: str | None = None, key=KEY, **claims) -> str:
    now = int(time.time())
    payload = {"iss": iss, "aud": aud, "sub": sub or uuid.uuid4().hex, "iat": now, "exp": now + 600, **claims}
    return jwt.encode(payload, key, algorithm="RS256", headers={"kid": KID})


@pytest.fixture(scope="module")
def hearth_auth(tmp_path_factory):
    config_dir = tmp_path_factory.mktemp("idp-config")
    config = config_dir / "auth.json"
    config.write_text(json.dumps({
        "identityProviders": [
            {"providerId": "apple.com", "issuer": APPLE_ISS, "clientIds": [APPLE_CLIENT], "jwks": jwks()},
            {"providerId": "google.com", "issuer": GOOGLE_ISS, "clientIds": [GOOGLE_CLIENT], "jwks": jwks()},
            {"providerId": "corp.example", "issuer": CORP_ISS, "clientIds": ["corp-app"], "jwks": jwks()},
        ],
        "linkDomains": [LINK_DOMAIN],
    }))
    srv = start(tmp_path_factory, "auth-idp", emulator=True, extra_args=("--auth-config", str(config)))
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def app(hearth_auth):
    with admin_app(hearth_auth, "idp") as a:
        yield a


@pytest.fixture
def rest(hearth_auth):
    return AuthRest(hearth_auth)


def sign_in(rest, provider: str, token: str, nonce: str | None = None):
    post = {"id_token": token, "providerId": provider}
    if nonce is not None:
        post["nonce"] = nonce
    return rest.v1("signInWithIdp", {"requestUri": "http://localhost", "postBody": urllib.parse.urlencode(post),
                                     "returnSecureToken": True, "returnIdpCredential": True})


def test_apple_nonce_right_wrong_missing_and_replayed(rest):
    raw = uuid.uuid4().hex
    hashed = hashlib.sha256(raw.encode()).hexdigest()
    token = id_token(APPLE_ISS, APPLE_CLIENT, nonce=hashed, email="a@privaterelay.appleid.com", email_verified="true")

    ok = sign_in(rest, "apple.com", token, nonce=raw)
    assert ok.status_code == 200, ok.text
    assert ok.json()["providerId"] == "apple.com" and ok.json()["idToken"]

    # A captured token replayed with another raw nonce, with the hash itself, or with none.
    expect_error(sign_in(rest, "apple.com", token, nonce=uuid.uuid4().hex), "MISSING_OR_INVALID_NONCE")
    expect_error(sign_in(rest, "apple.com", token, nonce=hashed), "MISSING_OR_INVALID_NONCE")
    expect_error(sign_in(rest, "apple.com", token), "MISSING_OR_INVALID_NONCE")
    # A nonce in the request that the token does not carry.
    expect_error(sign_in(rest, "apple.com", id_token(APPLE_ISS, APPLE_CLIENT), nonce=raw), "MISSING_OR_INVALID_NONCE")
    # No nonce on either side is still a plain OIDC sign-in.
    assert sign_in(rest, "apple.com", id_token(APPLE_ISS, APPLE_CLIENT)).status_code == 200


def test_other_oidc_providers_compare_the_nonce_as_given(rest):
    raw = uuid.uuid4().hex
    token = id_token(GOOGLE_ISS, GOOGLE_CLIENT, nonce=raw)
    assert sign_in(rest, "google.com", token, nonce=raw).status_code == 200
    expect_error(sign_in(rest, "google.com", token, nonce=hashlib.sha256(raw.encode()).hexdigest()), "MISSING_OR_INVALID_NONCE")
    expect_error(sign_in(rest, "google.com", token), "MISSING_OR_INVALID_NONCE")


def test_forged_provider_tokens_are_refused(rest):
    other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    expect_error(sign_in(rest, "apple.com", id_token(APPLE_ISS, APPLE_CLIENT, key=other_key)), "INVALID_IDP_RESPONSE")
    expect_error(sign_in(rest, "apple.com", id_token(APPLE_ISS, "com.other.app")), "INVALID_IDP_RESPONSE")
    unsigned = jwt.encode({"iss": APPLE_ISS, "aud": APPLE_CLIENT, "sub": "x", "exp": int(time.time()) + 600}, None, algorithm="none")
    expect_error(sign_in(rest, "apple.com", unsigned), "INVALID_IDP_RESPONSE")


def test_oidc_and_saml_provider_configs_through_admin_sdk(app, rest, hearth_auth):
    pid = f"oidc.t{uuid.uuid4().hex[:8]}"
    created = auth.create_oidc_provider_config(
        pid, client_id="cid", issuer="https://oidc.example.com/issuer", display_name="Corp", enabled=True,
        id_token_response_type=True, code_response_type=False, app=app)
    assert (created.provider_id, created.client_id, created.issuer, created.display_name) == (pid, "cid", "https://oidc.example.com/issuer", "Corp")
    assert created.enabled is True and created.id_token_response_type is True and created.code_response_type is False
    assert created.client_secret is None
    assert auth.get_oidc_provider_config(pid, app=app).client_id == "cid"
    assert pid in [c.provider_id for c in auth.list_oidc_provider_configs(app=app).iterate_all()]
    updated = auth.update_oidc_provider_config(
        pid, client_id="cid2", display_name=auth.DELETE_ATTRIBUTE, enabled=False, client_secret="s3cret",
        id_token_response_type=False, code_response_type=True, app=app)
    assert updated.client_id == "cid2" and updated.display_name is None and updated.enabled is False
    assert updated.code_response_type is True and updated.id_token_response_type is False and updated.client_secret == "s3cret"
    assert updated.issuer == "https://oidc.example.com/issuer"
    with pytest.raises((exceptions.AlreadyExistsError, exceptions.ConflictError)):
        auth.create_oidc_provider_config(pid, client_id="cid", issuer="https://oidc.example.com/issuer", app=app)

    sid = f"saml.t{uuid.uuid4().hex[:8]}"
    cert = "-----BEGIN CERTIFICATE-----\nMIIC\n-----END CERTIFICATE-----\n"
    saml = auth.create_saml_provider_config(
        sid, idp_entity_id="IDP", sso_url="https://example.com/login", x509_certificates=[cert], rp_entity_id="RP",
        callback_url="https://p.firebaseapp.com/__/auth/handler", display_name="S", enabled=True, app=app)
    assert saml.x509_certificates == [cert] and saml.rp_entity_id == "RP" and saml.enabled is True
    saml = auth.update_saml_provider_config(sid, sso_url="https://example.com/login2", enabled=False, app=app)
    assert saml.sso_url == "https://example.com/login2" and saml.idp_entity_id == "IDP" and saml.enabled is False
    assert sid in [c.provider_id for c in auth.list_saml_provider_configs(app=app).iterate_all()]
    # An OIDC id is not a SAML config, and the other way round.
    with pytest.raises(auth.ConfigurationNotFoundError):
        auth.get_saml_provider_config("saml." + pid[5:], app=app)

    KEPT.update(oidc=pid, saml=sid)


@pytest.mark.parametrize("body,query,message", [
    ({"issuer": "https://x.example.com"}, "oauthIdpConfigId=oidc.a", "INVALID_OAUTH_CLIENT_ID"),
    ({"clientId": "c", "issuer": "not a url"}, "oauthIdpConfigId=oidc.a", "INVALID_CONFIG"),
    ({"clientId": "c", "issuer": "https://x.example.com"}, "oauthIdpConfigId=corp", "INVALID_PROVIDER_ID"),
    ({"clientId": "c", "issuer": "https://x.example.com", "responseType": {"code": True}}, "oauthIdpConfigId=oidc.a", "INVALID_CONFIG"),
])
def test_bad_provider_configs_are_400(rest, body, query, message):
    r = rest.call(f"/identitytoolkit.googleapis.com/v2/projects/{PROJECT}/oauthIdpConfigs?{query}", body, admin="owner")
    expect_error(r, message)
    r = rest.call(f"/identitytoolkit.googleapis.com/v2/projects/{PROJECT}/oauthIdpConfigs?{query}", {"clientId": 5}, admin="owner")
    assert r.status_code == 400


def test_malformed_provider_config_requests_are_4xx_never_500(app, rest):
    pid = f"oidc.m{uuid.uuid4().hex[:8]}"
    auth.create_oidc_provider_config(pid, client_id="c", issuer="https://i.example.com", app=app)
    base = f"{rest.base}/identitytoolkit.googleapis.com/v2/projects/{PROJECT}"
    owner = {"Authorization": "Bearer owner", "Content-Type": "application/json"}
    cases = [
        ("GET", "/oauthIdpConfigs?pageSize=abc", None), ("GET", "/oauthIdpConfigs?pageSize=0", None),
        ("GET", "/oauthIdpConfigs?pageSize=101", None), ("GET", "/oauthIdpConfigs?pageToken=%%%", None),
        ("GET", "/oauthIdpConfigs?pageToken=!!", None), ("POST", "/oauthIdpConfigs", b'{"clientId":"c"}'),
        ("POST", f"/oauthIdpConfigs?oauthIdpConfigId=oidc.x", b"{not json"), ("POST", "/oauthIdpConfigs?oauthIdpConfigId=oidc.x", b"[]"),
        ("POST", "/oauthIdpConfigs?oauthIdpConfigId=oidc.x", b'{"clientId":"c","issuer":"https://i.example.com","enabled":"yes"}'),
        ("POST", "/oauthIdpConfigs?oauthIdpConfigId=oidc.x", b'{"clientId":"c","issuer":"https://i.example.com","nope":1}'),
        ("POST", "/inboundSamlConfigs?inboundSamlConfigId=saml.x", b'{"idpConfig":{"idpEntityId":"e"},"spConfig":5}'),
        ("POST", "/inboundSamlConfigs?inboundSamlConfigId=saml.x",
         b'{"idpConfig":{"idpEntityId":"e","ssoUrl":"https://s.example","idpCertificates":[{"x509Certificate":7}]},'
         b'"spConfig":{"spEntityId":"sp","callbackUri":"https://c.example"}}'),
        ("PATCH", f"/oauthIdpConfigs/{pid}", b'{"clientId":"c2"}'), ("PATCH", f"/oauthIdpConfigs/{pid}?updateMask=nope", b"{}"),
        ("PATCH", f"/oauthIdpConfigs/{pid}?updateMask=clientId", b"{}"),
        ("PATCH", f"/oauthIdpConfigs/{pid}?updateMask=responseType.code.deep", b'{"responseType":{"code":true}}'),
        ("PATCH", "/oauthIdpConfigs/oidc.missing?updateMask=clientId", b'{"clientId":"c"}'),
        ("PATCH", f"/oauthIdpConfigs/{pid}?updateMask=clientId", b"\xff"),
        ("GET", "/oauthIdpConfigs/not-oidc", None), ("GET", f"/inboundSamlConfigs/{pid}", None), ("DELETE", "/oauthIdpConfigs/oidc.missing", None),
        ("PUT", f"/oauthIdpConfigs/{pid}", b"{}"), ("GET", f"/oauthIdpConfigs/{pid}/extra", None), ("GET", "/tenants", None),
    ]
    for method, path, body in cases:
        r = rest.session.request(method, base + path, data=body, headers=owner, timeout=30)
        assert 400 <= r.status_code < 500, (method, path, r.status_code, r.text)
        assert "message" in r.json()["error"], (method, path, r.text)
    # Nothing of the refused writes stuck.
    assert auth.get_oidc_provider_config(pid, app=app).client_id == "c"
    auth.delete_oidc_provider_config(pid, app=app)


def test_admin_oidc_config_is_trusted_by_sign_in_with_idp(app, rest):
    pid = f"oidc.corp{uuid.uuid4().hex[:6]}"
    # Keys for the issuer come from --auth-config (the corp.example entry); the client id from the config.
    auth.create_oidc_provider_config(pid, client_id="admin-client", issuer=CORP_ISS, enabled=True, id_token_response_type=True, app=app)
    sub = uuid.uuid4().hex
    ok = sign_in(rest, pid, id_token(CORP_ISS, "admin-client", sub=sub, email=f"{sub[:8]}@corp.example.com"))
    assert ok.status_code == 200, ok.text
    assert ok.json()["providerId"] == pid and ok.json()["federatedId"] == sub
    user = auth.get_user(ok.json()["localId"], app=app)
    assert [p.provider_id for p in user.provider_data] == [pid]

    # The config's client id is the audience; the keys are checked; the nonce rule applies.
    expect_error(sign_in(rest, pid, id_token(CORP_ISS, "corp-app")), "INVALID_IDP_RESPONSE")
    other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    expect_error(sign_in(rest, pid, id_token(CORP_ISS, "admin-client", key=other_key)), "INVALID_IDP_RESPONSE")
    unsigned = jwt.encode({"iss": CORP_ISS, "aud": "admin-client", "sub": "x", "exp": int(time.time()) + 600}, None, algorithm="none")
    expect_error(sign_in(rest, pid, unsigned), "INVALID_IDP_RESPONSE")
    expect_error(sign_in(rest, pid, id_token(CORP_ISS, "admin-client", nonce="n1"), nonce="n2"), "MISSING_OR_INVALID_NONCE")

    auth.update_oidc_provider_config(pid, enabled=False, app=app)
    expect_error(sign_in(rest, pid, id_token(CORP_ISS, "admin-client")), "OPERATION_NOT_ALLOWED")
    auth.delete_oidc_provider_config(pid, app=app)


def test_saml_sign_in_is_refused_with_a_reason(app, rest):
    sid = f"saml.s{uuid.uuid4().hex[:8]}"
    auth.create_saml_provider_config(
        sid, idp_entity_id="IDP", sso_url="https://example.com/login", x509_certificates=["-----BEGIN CERTIFICATE-----\nMIIC\n-----END CERTIFICATE-----\n"],
        rp_entity_id="RP", callback_url="https://p.firebaseapp.com/__/auth/handler", enabled=True, app=app)
    r = sign_in(rest, sid, id_token(CORP_ISS, "x"))
    expect_error(r, "INVALID_IDP_RESPONSE")
    assert "SAML" in r.json()["error"]["message"]
    auth.delete_saml_provider_config(sid, app=app)


def test_unauthorised_link_domain_is_refused(app):
    email = f"l-{uuid.uuid4().hex[:8]}@example.com"
    auth.create_user(email=email, password="secret1", app=app)
    settings = auth.ActionCodeSettings("http://localhost?a=1", handle_code_in_app=True, link_domain="cool.link")
    with pytest.raises(auth.InvalidHostingLinkDomainError) as info:
        auth.generate_sign_in_with_email_link(email, action_code_settings=settings, app=app)
    assert str(info.value) == (
        "The provided hosting link domain is not configured in Firebase Hosting or is not owned by the current project "
        "(INVALID_HOSTING_LINK_DOMAIN). The provided hosting link domain is not configured in Firebase Hosting or is not owned "
        "by the current project. This cannot be a default hosting domain (web.app or firebaseapp.com).")
    allowed = auth.ActionCodeSettings("http://localhost?a=1", handle_code_in_app=True, link_domain=LINK_DOMAIN)
    link = auth.generate_sign_in_with_email_link(email, action_code_settings=allowed, app=app)
    assert "oobCode=" in link


def test_provider_configs_persist_across_restart(hearth_auth):
    """After every test that uses the firebase-admin app: restarts the server (the app keeps the old port)."""
    if not KEPT:
        pytest.skip("the CRUD test did not run")
    pid, sid = KEPT["oidc"], KEPT["saml"]
    hearth_auth.stop()
    hearth_auth.start()
    fresh = AuthRest(hearth_auth)
    r = fresh.call(f"/identitytoolkit.googleapis.com/v2/projects/{PROJECT}/oauthIdpConfigs/{pid}", None, method="GET", admin="owner")
    assert r.status_code == 200, r.text
    assert r.json()["name"] == f"projects/{PROJECT}/oauthIdpConfigs/{pid}" and r.json()["clientId"] == "cid2"
    # Admin only.
    r = fresh.call(f"/identitytoolkit.googleapis.com/v2/projects/{PROJECT}/oauthIdpConfigs/{pid}", None, method="GET")
    assert r.status_code == 403
    for path in (f"oauthIdpConfigs/{pid}", f"inboundSamlConfigs/{sid}"):
        r = fresh.call(f"/identitytoolkit.googleapis.com/v2/projects/{PROJECT}/{path}", None, method="DELETE", admin="owner")
        assert r.status_code == 200, r.text
        r = fresh.call(f"/identitytoolkit.googleapis.com/v2/projects/{PROJECT}/{path}", None, method="GET", admin="owner")
        expect_error(r, "CONFIGURATION_NOT_FOUND")




class _KeyServer:
    """An OIDC issuer on 127.0.0.1: its discovery document and JWKS, counting fetches."""

    def __init__(self):
        import http.server
        import threading

        owner = self
        self.fetches = 0

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                owner.fetches += 1
                if self.path == "/.well-known/openid-configuration":
                    body = {"issuer": owner.issuer, "jwks_uri": f"{owner.issuer}/jwks"}
                elif self.path == "/jwks":
                    body = jwks()
                else:
                    self.send_error(404)
                    return
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.issuer = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


PROD_ADMIN = "idp-admin-" + uuid.uuid4().hex


@pytest.fixture(scope="module")
def prod_idp(tmp_path_factory):
    keys = _KeyServer()
    srv = start(tmp_path_factory, "auth-idp-prod", emulator=False, extra_args=("--admin-token", PROD_ADMIN), service_account=False)
    yield srv, keys
    srv.stop()
    keys.close()


def test_production_admin_oidc_config_uses_the_issuers_discovered_keys(prod_idp):
    srv, keys = prod_idp
    rest = AuthRest(srv)
    configs = f"/identitytoolkit.googleapis.com/v2/projects/{PROJECT}/oauthIdpConfigs"
    r = rest.call(f"{configs}?oauthIdpConfigId=oidc.disc", {"clientId": "disc-client", "issuer": keys.issuer, "enabled": True},
                  admin=PROD_ADMIN)
    assert r.status_code == 200, r.text
    token = id_token(keys.issuer, "disc-client", nonce="n-1")
    ok = sign_in(rest, "oidc.disc", token, nonce="n-1")
    assert ok.status_code == 200, ok.text
    assert ok.json()["providerId"] == "oidc.disc"
    again = sign_in(rest, "oidc.disc", id_token(keys.issuer, "disc-client"))
    assert again.status_code == 200, again.text
    assert keys.fetches == 2  # discovery + JWKS once; the second sign-in used the cached keys

    other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    expect_error(sign_in(rest, "oidc.disc", id_token(keys.issuer, "disc-client", key=other_key)), "INVALID_IDP_RESPONSE")
    unsigned = jwt.encode({"iss": keys.issuer, "aud": "disc-client", "sub": "x", "exp": int(time.time()) + 600}, None, algorithm="none")
    expect_error(sign_in(rest, "oidc.disc", unsigned), "INVALID_IDP_RESPONSE")
    expect_error(sign_in(rest, "oidc.disc", id_token(keys.issuer, "other-client")), "INVALID_IDP_RESPONSE")
    expect_error(sign_in(rest, "oidc.disc", token, nonce="n-2"), "MISSING_OR_INVALID_NONCE")

    # Keys are fetched only over https (or http on loopback): nothing is fetched for this issuer.
    r = rest.call(f"{configs}?oauthIdpConfigId=oidc.plain", {"clientId": "c", "issuer": "http://example.com", "enabled": True},
                  admin=PROD_ADMIN)
    assert r.status_code == 200, r.text
    expect_error(sign_in(rest, "oidc.plain", id_token("http://example.com", "c")), "INVALID_IDP_RESPONSE")
    # Unknown providers are refused in production (no fake tokens).
    expect_error(sign_in(rest, "oidc.unknown", token), "INVALID_PROVIDER_ID")
