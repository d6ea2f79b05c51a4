"""Firebase Auth's REST surface as the client SDKs call it (iOS: v3 relyingparty paths and JSON
securetoken bodies; web/Android: v1 and form-encoded refresh), against ``hearth serve --emulator``:
response shapes, Firebase's error strings, bad input, CORS, emulator endpoints."""

from __future__ import annotations

import json
import urllib.parse
import uuid

import pytest

from authutil import V1, AuthRest, expect_error, jwt_payload, start
from conftest import PROJECT

pytestmark = pytest.mark.hearth_only(reason="Firebase Auth is served by Hearth, not by the Firestore emulator")


@pytest.fixture(scope="module")
def hearth_auth(tmp_path_factory):
    srv = start(tmp_path_factory, "auth-rest", emulator=True, service_account=False)
    yield srv
    srv.stop()


@pytest.fixture
def rest(hearth_auth):
    return AuthRest(hearth_auth)


def email() -> str:
    return f"rest-{uuid.uuid4().hex[:10]}@example.com"


def test_ios_v3_flow(rest):
    address = email()
    r = rest.v3("signupNewUser", {"email": address, "password": "secret123", "returnSecureToken": True,
                                  "clientType": "CLIENT_TYPE_IOS"})
    assert r.status_code == 200, r.text
    up = r.json()
    assert up["kind"] == "identitytoolkit#SignupNewUserResponse"
    assert up["expiresIn"] == "3600" and up["email"] == address
    r = rest.v3("verifyPassword", {"email": address, "password": "secret123", "returnSecureToken": True})
    signed = r.json()
    assert signed["kind"] == "identitytoolkit#VerifyPasswordResponse" and signed["registered"] is True
    info = rest.v3("getAccountInfo", {"idToken": signed["idToken"]}).json()
    assert info["kind"] == "identitytoolkit#GetAccountInfoResponse"
    user = info["users"][0]
    assert user["localId"] == up["localId"]
    assert user["createdAt"].isdigit() and user["lastLoginAt"].isdigit()
    assert isinstance(user["passwordUpdatedAt"], (int, float))
    assert user["validSince"].isdigit()
    assert user["providerUserInfo"][0]["providerId"] == "password"
    upd = rest.v3("setAccountInfo", {"idToken": signed["idToken"], "displayName": "Bo", "returnSecureToken": True}).json()
    assert upd["kind"] == "identitytoolkit#SetAccountInfoResponse" and upd["displayName"] == "Bo"
    # iOS refreshes with a JSON body.
    r = rest.session.post(f"{rest.base}/securetoken.googleapis.com/v1/token?key=k",
                          json={"grantType": "refresh_token", "refreshToken": signed["refreshToken"]})
    assert r.status_code == 200, r.text
    tok = r.json()
    assert set(tok) >= {"access_token", "expires_in", "token_type", "refresh_token", "id_token", "user_id", "project_id"}
    assert tok["user_id"] == up["localId"] and tok["expires_in"] == "3600"
    claims = jwt_payload(tok["id_token"])
    assert claims["name"] == "Bo" and claims["firebase"]["sign_in_provider"] == "password"
    uri = rest.v3("createAuthUri", {"identifier": address, "continueUri": "http://localhost"}).json()
    assert uri["registered"] is True and uri["signinMethods"] == ["password"]
    assert rest.v3("createAuthUri", {"identifier": email(), "continueUri": "http://localhost"}).json()["registered"] is False
    assert rest.v3("deleteAccount", {"idToken": signed["idToken"]}).json()["kind"] == "identitytoolkit#DeleteAccountResponse"
    expect_error(rest.v3("verifyPassword", {"email": address, "password": "secret123"}), "EMAIL_NOT_FOUND")


def test_id_token_claims(rest):
    address = email()
    up = rest.sign_up(address, "secret123")
    c = jwt_payload(up["idToken"])
    assert c["iss"] == f"https://securetoken.google.com/{PROJECT}" and c["aud"] == PROJECT
    assert c["sub"] == c["user_id"] == up["localId"]
    assert c["exp"] - c["iat"] == 3600 and c["auth_time"] <= c["iat"]
    assert c["email"] == address and c["email_verified"] is False
    assert c["firebase"] == {"identities": {"email": [address]}, "sign_in_provider": "password"}
    anon = rest.sign_up()
    a = jwt_payload(anon["idToken"])
    assert a["provider_id"] == "anonymous" and a["firebase"]["sign_in_provider"] == "anonymous"


def test_anonymous_user_links_to_email_password(rest):
    anon = rest.sign_up()
    address = email()
    r = rest.v1("signUp", {"idToken": anon["idToken"], "email": address, "password": "secret123", "returnSecureToken": True})
    assert r.status_code == 200, r.text
    assert r.json()["localId"] == anon["localId"]
    assert jwt_payload(r.json()["idToken"])["firebase"]["sign_in_provider"] == "password"


@pytest.mark.parametrize("body,message", [
    ({"email": "x@example.com", "password": "123"}, "WEAK_PASSWORD"),
    ({"email": "not-an-email", "password": "secret123"}, "INVALID_EMAIL"),
    ({"email": "x@example.com"}, "MISSING_PASSWORD"),
])
def test_sign_up_errors(rest, body, message):
    expect_error(rest.v1("signUp", body), message)


def test_errors_are_firebase_shaped(rest):
    address = email()
    rest.sign_up(address, "secret123")
    expect_error(rest.v1("signUp", {"email": address, "password": "secret123"}), "EMAIL_EXISTS")
    r = rest.v1("signUp", {"email": address, "password": "123456789"})
    assert r.json() == {"error": {"code": 400, "message": "EMAIL_EXISTS",
                                  "errors": [{"message": "EMAIL_EXISTS", "domain": "global", "reason": "invalid"}]}}
    expect_error(rest.v1("signInWithPassword", {"email": address, "password": "wrong-pw"}), "INVALID_PASSWORD")
    expect_error(rest.v1("lookup", {"idToken": "not.a.token"}), "INVALID_ID_TOKEN")
    expect_error(rest.v1("signInWithCustomToken", {"token": "garbage"}), "INVALID_CUSTOM_TOKEN")
    expect_error(rest.v1("resetPassword", {"oobCode": "nope", "newPassword": "secret123"}), "INVALID_OOB_CODE")
    expect_error(rest.v1("sendOobCode", {"requestType": "NOPE", "email": address}), "INVALID_REQ_TYPE")
    r = rest.session.post(f"{rest.base}/securetoken.googleapis.com/v1/token",
                          data={"grant_type": "refresh_token", "refresh_token": "bogus"})
    expect_error(r, "INVALID_REFRESH_TOKEN")


@pytest.mark.parametrize("raw", [b"{not json", b"[]", b'{"email": 1}', b'{"email":"a@b.co","password":"secret1","nope":true}',
                                 b'{"email":["a"],"password":"secret1"}', b'{"returnSecureToken":"yes"}', b"\xff\xfe"])
def test_bad_input_is_400_never_500(rest, raw):
    for path in (f"{V1}/accounts:signUp", f"{V1}/accounts:signInWithPassword", f"{V1}/accounts:lookup", f"{V1}/accounts:update",
                 f"{V1}/accounts:sendOobCode", f"{V1}/projects/{PROJECT}/accounts:batchCreate"):
        r = rest.session.post(f"{rest.base}{path}", data=raw, headers={"Content-Type": "application/json",
                                                                        "Authorization": "Bearer owner"})
        assert 400 <= r.status_code < 500, (path, raw, r.status_code, r.text)
        assert "message" in r.json()["error"]


@pytest.mark.parametrize("raw", [b"{not json", b'{"email": "a@b.co",}', b"[1, 2", b'{"a": tru}'])
def test_bad_json_message_says_invalid_payload_once(rest, raw):
    for path in (f"{V1}/accounts:signUp", "/securetoken.googleapis.com/v1/token"):
        r = rest.session.post(f"{rest.base}{path}", data=raw, headers={"Content-Type": "application/json"})
        assert r.status_code == 400, r.text
        message = r.json()["error"]["message"]
        assert message.startswith("Invalid JSON payload received. ") and message.count("Invalid JSON payload received.") == 1, message


def test_privileged_fields_need_admin(rest):
    r = rest.v1("signUp", {"localId": "chosen-uid", "email": email(), "password": "secret123"})
    expect_error(r, "INSUFFICIENT_PERMISSION", status=403)
    up = rest.sign_up(email(), "secret123")
    expect_error(rest.v1("update", {"idToken": up["idToken"], "customAttributes": '{"admin":true}'}), "ADMIN_ONLY_OPERATION")
    expect_error(rest.v1("sendOobCode", {"requestType": "PASSWORD_RESET", "email": email(), "returnOobLink": True}),
                 "INSUFFICIENT_PERMISSION", status=403)


def test_idp_sign_in_with_emulator_fake_token(rest):
    sub = uuid.uuid4().hex
    fake = json.dumps({"sub": sub, "email": f"{sub[:8]}@gmail.com", "email_verified": True, "name": "G User"})
    post_body = urllib.parse.urlencode({"id_token": fake, "providerId": "google.com"})
    r = rest.v1("signInWithIdp", {"requestUri": "http://localhost", "postBody": post_body, "returnSecureToken": True})
    assert r.status_code == 200, r.text
    first = r.json()
    assert first["kind"] == "identitytoolkit#VerifyAssertionResponse"
    assert first["federatedId"] == sub and first["providerId"] == "google.com" and first["isNewUser"] is True
    assert jwt_payload(first["idToken"])["firebase"]["sign_in_provider"] == "google.com"
    again = rest.v3("verifyAssertion", {"requestUri": "http://localhost", "postBody": post_body, "returnSecureToken": True}).json()
    assert again["localId"] == first["localId"] and again["isNewUser"] is False


def test_cors_preflight(rest):
    r = rest.session.options(f"{rest.base}{V1}/accounts:signUp?key=k",
                             headers={"Origin": "http://localhost:5173", "Access-Control-Request-Method": "POST",
                                      "Access-Control-Request-Headers": "content-type,x-client-version"})
    assert r.status_code in (200, 204)
    assert r.headers["Access-Control-Allow-Origin"] == "http://localhost:5173"
    assert "content-type" in r.headers["Access-Control-Allow-Headers"].lower()
    assert "POST" in r.headers["Access-Control-Allow-Methods"]


def test_emulator_endpoints(rest):
    address = email()
    rest.sign_up(address, "secret123")
    assert rest.v1("sendOobCode", {"requestType": "VERIFY_EMAIL", "email": address}).status_code == 400  # needs idToken
    cfg = rest.call(f"/emulator/v1/projects/{PROJECT}/config", method="GET").json()
    assert cfg["signIn"]["allowDuplicateEmails"] is False
    cfg = rest.call(f"/emulator/v1/projects/{PROJECT}/config", {"emailPrivacyConfig": {"enableImprovedEmailPrivacy": True}},
                    method="PATCH").json()
    assert cfg["emailPrivacyConfig"]["enableImprovedEmailPrivacy"] is True
    expect_error(rest.v1("signInWithPassword", {"email": address, "password": "wrong-pw"}), "INVALID_LOGIN_CREDENTIALS")
    rest.call(f"/emulator/v1/projects/{PROJECT}/config", {"emailPrivacyConfig": {"enableImprovedEmailPrivacy": False}}, method="PATCH")
    assert rest.call(f"/emulator/v1/projects/{PROJECT}/accounts", method="DELETE").status_code == 200
    expect_error(rest.v1("signInWithPassword", {"email": address, "password": "secret123"}), "EMAIL_NOT_FOUND")
