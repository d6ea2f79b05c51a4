"""Firebase Auth through the official Admin SDK (firebase-admin) against ``hearth serve --emulator``
with ``FIREBASE_AUTH_EMULATOR_HOST``: users, claims, listing, custom tokens, revocation, links,
imports with password hashes, session cookies."""

from __future__ import annotations

import base64
import datetime
import hashlib
import hmac
import os
import time
import urllib.parse
import uuid

import bcrypt
import pytest
from firebase_admin import auth

from authutil import admin_app, AuthRest, expect_error, firebase_scrypt, jwt_payload, start
from conftest import PROJECT

pytestmark = pytest.mark.hearth_only(reason="Firebase Auth is served by Hearth, not by the Firestore emulator")


@pytest.fixture(scope="module")
def hearth_auth(tmp_path_factory):
    srv = start(tmp_path_factory, "auth-emulator", emulator=True)
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def app(hearth_auth):
    with admin_app(hearth_auth, "hearth") as a:
        yield a


@pytest.fixture
def rest(hearth_auth):
    return AuthRest(hearth_auth)


def unique_email(prefix="user") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}@example.com"


def test_create_get_update_delete(app):
    email = unique_email()
    user = auth.create_user(email=email, password="secret123", display_name="Ann", app=app)
    assert user.email == email and user.display_name == "Ann"
    assert auth.get_user(user.uid, app=app).email == email
    assert auth.get_user_by_email(email, app=app).uid == user.uid
    updated = auth.update_user(user.uid, display_name="Anne", email_verified=True, app=app)
    assert updated.display_name == "Anne" and updated.email_verified
    assert updated.user_metadata.creation_timestamp > 0
    cleared = auth.update_user(user.uid, display_name=auth.DELETE_ATTRIBUTE, app=app)
    assert cleared.display_name is None
    with pytest.raises(auth.UidAlreadyExistsError):
        auth.create_user(uid=user.uid, app=app)
    with pytest.raises(auth.EmailAlreadyExistsError):
        auth.create_user(email=email, app=app)
    auth.delete_user(user.uid, app=app)
    with pytest.raises(auth.UserNotFoundError):
        auth.get_user(user.uid, app=app)


def test_custom_claims_visible_after_refresh(app, rest):
    email = unique_email()
    signed = rest.sign_up(email, "secret123")
    auth.set_custom_user_claims(signed["localId"], {"admin": True, "tier": "gold"}, app=app)
    assert auth.get_user(signed["localId"], app=app).custom_claims == {"admin": True, "tier": "gold"}
    refreshed = rest.refresh(signed["refreshToken"])
    claims = jwt_payload(refreshed["id_token"])
    assert claims["admin"] is True and claims["tier"] == "gold"
    decoded = auth.verify_id_token(refreshed["id_token"], app=app)
    assert decoded["uid"] == signed["localId"] and decoded["tier"] == "gold"
    with pytest.raises(ValueError):
        auth.set_custom_user_claims(signed["localId"], {"sub": "x"}, app=app)


def test_list_users_with_paging(app):
    uids = [f"list-{uuid.uuid4().hex[:8]}-{i}" for i in range(5)]
    for uid in uids:
        auth.create_user(uid=uid, app=app)
    page = auth.list_users(max_results=2, app=app)
    assert len(page.users) == 2 and page.has_next_page
    seen = []
    for user in auth.list_users(max_results=2, app=app).iterate_all():
        seen.append(user.uid)
    assert set(uids) <= set(seen)
    assert seen == sorted(seen)
    assert len(seen) == len(set(seen))


def test_custom_token_sign_in_and_verify(app, rest):
    uid = f"custom-{uuid.uuid4().hex[:8]}"
    token = auth.create_custom_token(uid, {"plan": "pro"}, app=app).decode()
    r = rest.v1("signInWithCustomToken", {"token": token, "returnSecureToken": True})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["isNewUser"] is True and body["expiresIn"] == "3600"
    decoded = auth.verify_id_token(body["idToken"], app=app)
    assert decoded["uid"] == uid and decoded["plan"] == "pro"
    assert decoded["firebase"]["sign_in_provider"] == "custom"
    again = rest.v3("verifyCustomToken", {"token": token, "returnSecureToken": True}).json()
    assert again["isNewUser"] is False


def test_revoke_refresh_tokens(app, rest):
    signed = rest.sign_up(unique_email(), "secret123")
    id_token = signed["idToken"]
    assert auth.verify_id_token(id_token, check_revoked=True, app=app)["uid"] == signed["localId"]
    time.sleep(1.1)  # validSince has one-second resolution: the token must predate the revocation
    auth.revoke_refresh_tokens(signed["localId"], app=app)
    with pytest.raises(auth.RevokedIdTokenError):
        auth.verify_id_token(id_token, check_revoked=True, app=app)
    r = rest.session.post(f"{rest.base}/securetoken.googleapis.com/v1/token",
                          data={"grant_type": "refresh_token", "refresh_token": signed["refreshToken"]})
    assert r.status_code == 400
    fresh = rest.v1("signInWithPassword", {"email": auth.get_user(signed["localId"], app=app).email,
                                           "password": "secret123", "returnSecureToken": True}).json()
    assert auth.verify_id_token(fresh["idToken"], check_revoked=True, app=app)["uid"] == signed["localId"]


def test_disabled_user(app, rest):
    email = unique_email()
    signed = rest.sign_up(email, "secret123")
    auth.update_user(signed["localId"], disabled=True, app=app)
    with pytest.raises(auth.UserDisabledError):
        auth.verify_id_token(signed["idToken"], check_revoked=True, app=app)
    expect_error(rest.v1("signInWithPassword", {"email": email, "password": "secret123"}), "USER_DISABLED")


def oob_code(link: str) -> str:
    return urllib.parse.parse_qs(urllib.parse.urlparse(link).query)["oobCode"][0]


def test_password_reset_and_verification_links(app, rest):
    email = unique_email()
    signed = rest.sign_up(email, "secret123")
    link = auth.generate_password_reset_link(email, app=app)
    r = rest.v1("resetPassword", {"oobCode": oob_code(link), "newPassword": "changed456"})
    assert r.status_code == 200, r.text
    assert r.json()["email"] == email and r.json()["requestType"] == "PASSWORD_RESET"
    expect_error(rest.v1("signInWithPassword", {"email": email, "password": "secret123"}), "INVALID_PASSWORD")
    assert rest.v1("signInWithPassword", {"email": email, "password": "changed456"}).status_code == 200
    other = unique_email()
    rest.sign_up(other, "secret123")
    link = auth.generate_email_verification_link(other, app=app)
    assert not auth.get_user_by_email(other, app=app).email_verified
    r = rest.v1("update", {"oobCode": oob_code(link)})
    assert r.status_code == 200, r.text
    assert auth.get_user_by_email(other, app=app).email_verified
    assert signed["localId"]
    # A client request for a code leaves it in the emulator's listing and the outbox.
    r = rest.v1("sendOobCode", {"requestType": "PASSWORD_RESET", "email": email})
    assert r.status_code == 200 and "oobCode" not in r.json()
    listed = rest.call(f"/emulator/v1/projects/{PROJECT}/oobCodes", method="GET").json()["oobCodes"]
    assert any(c["email"] == email and c["requestType"] == "PASSWORD_RESET" for c in listed)
    outbox = rest.srv.data_dir / "outbox"
    assert any(email in p.read_text() for p in outbox.glob("*.json"))


def sign_in_works(rest, email, password) -> bool:
    return rest.v1("signInWithPassword", {"email": email, "password": password, "returnSecureToken": True}).status_code == 200


def test_import_users_with_hashes(app, rest):
    password = b"imported-pw"
    salt = os.urandom(16)
    signer_key, separator = os.urandom(32), os.urandom(2)
    cases = []
    # Firebase's modified scrypt.
    email = unique_email("scrypt")
    h = firebase_scrypt(password, salt, signer_key, separator, rounds=8, mem_cost=10)
    cases.append((email, auth.UserImportHash.scrypt(key=signer_key, rounds=8, memory_cost=10, salt_separator=separator),
                  auth.ImportUserRecord(uid=f"scrypt-{uuid.uuid4().hex[:8]}", email=email, password_hash=h, password_salt=salt)))
    # bcrypt (salt inside the hash).
    email = unique_email("bcrypt")
    cases.append((email, auth.UserImportHash.bcrypt(),
                  auth.ImportUserRecord(uid=f"bcrypt-{uuid.uuid4().hex[:8]}", email=email,
                                        password_hash=bcrypt.hashpw(password, bcrypt.gensalt(rounds=5)))))
    # PBKDF2-SHA256.
    email = unique_email("pbkdf2")
    cases.append((email, auth.UserImportHash.pbkdf2_sha256(rounds=1000),
                  auth.ImportUserRecord(uid=f"pbkdf2-{uuid.uuid4().hex[:8]}", email=email,
                                        password_hash=hashlib.pbkdf2_hmac("sha256", password, salt, 1000), password_salt=salt)))
    # HMAC-SHA256 over password then salt.
    email = unique_email("hmac")
    key = os.urandom(32)
    cases.append((email, auth.UserImportHash.hmac_sha256(key=key),
                  auth.ImportUserRecord(uid=f"hmac-{uuid.uuid4().hex[:8]}", email=email,
                                        password_hash=hmac.new(key, password + salt, hashlib.sha256).digest(), password_salt=salt)))
    for email, hash_alg, record in cases:
        result = auth.import_users([record], hash_alg=hash_alg, app=app)
        assert result.success_count == 1 and result.failure_count == 0, [e.reason for e in result.errors]
        assert not sign_in_works(rest, email, "wrong-password")
        assert sign_in_works(rest, email, password.decode()), hash_alg
        assert sign_in_works(rest, email, password.decode())  # again, after the upgrade to native scrypt


def test_import_refuses_hashes_that_would_pin_a_core(app, rest):
    """A BCRYPT cost or scrypt parameters beyond the bounds fail that user (INVALID_PASSWORD_HASH);
    nothing is stored, and a sign-in never computes such a hash."""
    cheap = bcrypt.hashpw(b"pw123456", bcrypt.gensalt(rounds=4))
    for cost in (b"15", b"31"):
        email = unique_email("bcrypt-cost")
        record = auth.ImportUserRecord(uid=f"cost-{uuid.uuid4().hex[:8]}", email=email, password_hash=cheap.replace(b"$04$", b"$" + cost + b"$"))
        started = time.monotonic()
        result = auth.import_users([record], hash_alg=auth.UserImportHash.bcrypt(), app=app)
        assert result.failure_count == 1 and "INVALID_PASSWORD_HASH" in result.errors[0].reason, [e.reason for e in result.errors]
        with pytest.raises(auth.UserNotFoundError):
            auth.get_user(record.uid, app=app)
        assert not sign_in_works(rest, email, "pw123456")
        assert time.monotonic() - started < 10
    # The highest allowed cost still imports and signs in.
    email = unique_email("bcrypt-ok")
    record = auth.ImportUserRecord(uid=f"cost-{uuid.uuid4().hex[:8]}", email=email, password_hash=cheap)
    assert auth.import_users([record], hash_alg=auth.UserImportHash.bcrypt(), app=app).success_count == 1
    assert sign_in_works(rest, email, "pw123456")
    # Standard scrypt: N = 2^30 (or 2^20 with r = 64) would need gigabytes.
    for n, r in ((2 ** 30, 8), (2 ** 20, 64)):
        record = auth.ImportUserRecord(uid=f"scr-{uuid.uuid4().hex[:8]}", email=unique_email("scrypt-big"), password_hash=b"x" * 32,
                                       password_salt=b"salt")
        result = auth.import_users([record], hash_alg=auth.UserImportHash.standard_scrypt(memory_cost=n, parallelization=1,
                                                                                          block_size=r, derived_key_length=32), app=app)
        assert result.failure_count == 1 and "INVALID_PASSWORD_HASH" in result.errors[0].reason


def test_last_refresh_timestamp_set_whenever_tokens_are_issued(app, rest):
    email = unique_email("refresh")
    user = auth.create_user(email=email, password="secret123", app=app)
    assert user.user_metadata.last_refresh_timestamp is None
    rest.v1("signInWithPassword", {"email": email, "password": "secret123", "returnSecureToken": True}).raise_for_status()
    stamp = auth.get_user(user.uid, app=app).user_metadata.last_refresh_timestamp
    assert stamp == pytest.approx(time.time() * 1000, abs=60_000)
    # Sign-up and custom-token sign-in set it too.
    signed = rest.sign_up(unique_email("refresh"), "secret123")
    assert auth.get_user(signed["localId"], app=app).user_metadata.last_refresh_timestamp is not None
    token = auth.create_custom_token(f"ct-{uuid.uuid4().hex[:8]}", app=app).decode()
    r = rest.v1("signInWithCustomToken", {"token": token, "returnSecureToken": True})
    assert r.status_code == 200, r.text
    uid = jwt_payload(r.json()["idToken"])["user_id"]
    assert auth.get_user(uid, app=app).user_metadata.last_refresh_timestamp is not None


def test_import_reports_per_user_errors(app):
    good = auth.ImportUserRecord(uid=f"imp-{uuid.uuid4().hex[:8]}", email=unique_email())
    dup = auth.ImportUserRecord(uid=f"imp-{uuid.uuid4().hex[:8]}", email=good.email)
    result = auth.import_users([good, dup], app=app)
    assert result.success_count == 1 and result.failure_count == 1
    assert result.errors[0].index == 1


def test_import_refuses_a_provider_user_linked_to_another_account(app):
    """batchCreate judges each (provider, raw id) as the emulator does: linked to another account, the
    item fails with its message; the same user again under its own uid is fine."""
    raw = f"g-{uuid.uuid4().hex[:10]}"
    link = auth.UserProvider(uid=raw, provider_id="google.com", email=unique_email("g"))
    first = auth.ImportUserRecord(uid=f"imp-{uuid.uuid4().hex[:8]}", provider_data=[link])
    assert auth.import_users([first], app=app).success_count == 1
    other = auth.ImportUserRecord(uid=f"imp-{uuid.uuid4().hex[:8]}", provider_data=[link])
    result = auth.import_users([other, first], app=app)
    assert result.success_count == 1 and result.failure_count == 1
    assert result.errors[0].index == 0 and result.errors[0].reason == "raw id exists in other account in database"
    with pytest.raises(auth.UserNotFoundError):
        auth.get_user(other.uid, app=app)
    assert [p.uid for p in auth.get_user(first.uid, app=app).provider_data] == [raw]


def test_an_oob_code_is_used_once_under_concurrency(app, rest):
    """Four clients present one password-reset code at once: exactly one resets the password, the
    others get INVALID_OOB_CODE (the code is consumed in the same change set as the reset)."""
    from concurrent.futures import ThreadPoolExecutor

    email = unique_email()
    rest.sign_up(email, "secret123")
    code = oob_code(auth.generate_password_reset_link(email, app=app))

    def reset(i):
        r = AuthRest(rest.srv).v1("resetPassword", {"oobCode": code, "newPassword": f"changed-{i}"})
        return i, r

    # Four, not more: each request hashes its new password (scrypt) before the reset is applied.
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(reset, range(4)))
    won = [i for i, r in results if r.status_code == 200]
    assert len(won) == 1, [(r.status_code, r.text) for _, r in results]
    for i, r in results:
        if i not in won:
            expect_error(r, "INVALID_OOB_CODE")
    assert sign_in_works(rest, email, f"changed-{won[0]}")


def test_session_cookies(app, rest):
    signed = rest.sign_up(unique_email(), "secret123")
    cookie = auth.create_session_cookie(signed["idToken"], expires_in=datetime.timedelta(hours=2), app=app)
    claims = auth.verify_session_cookie(cookie, app=app)
    assert claims["uid"] == signed["localId"]
    assert jwt_payload(cookie)["iss"] == f"https://session.firebase.google.com/{PROJECT}"
    assert claims["exp"] - claims["iat"] == 7200
    with pytest.raises(ValueError):
        auth.create_session_cookie(signed["idToken"], expires_in=datetime.timedelta(seconds=10), app=app)


def test_id_tokens_have_one_spelling(app, rest):
    """An ID token re-spelled by setting the unused bits of its signature's last base64url digit
    decodes to the same bytes (Python's decoder, like many, ignores those bits), but it is not the
    token that was issued: Hearth's one JWT parser (HearthJWT) accepts only the canonical spelling,
    so a token cannot be re-spelled past a verified-token cache or a list keyed by its text."""
    token = rest.sign_up(unique_email(), "secret123")["idToken"]
    head, _, signature = token.rpartition(".")
    assert len(signature) % 4 == 2  # RSA-2048: 342 digits, the last one carries 4 unused bits
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    respelled = f"{head}.{signature[:-1]}{alphabet[alphabet.index(signature[-1]) | 1]}"
    assert respelled != token
    assert base64.urlsafe_b64decode(respelled.rpartition(".")[2] + "==") == base64.urlsafe_b64decode(signature + "==")
    auth.create_session_cookie(token, expires_in=datetime.timedelta(hours=1), app=app)
    with pytest.raises(auth.InvalidIdTokenError):
        auth.create_session_cookie(respelled, expires_in=datetime.timedelta(hours=1), app=app)


def test_delete_users_batch(app):
    uids = [f"del-{uuid.uuid4().hex[:8]}-{i}" for i in range(3)]
    for uid in uids:
        auth.create_user(uid=uid, app=app)
    result = auth.delete_users(uids + ["missing-uid"], app=app)
    assert result.success_count == 4 and result.failure_count == 0
    assert auth.get_users([auth.UidIdentifier(u) for u in uids], app=app).users == []
