"""Phone numbers, as Google's Auth emulator supports them: through firebase-admin (create, get by
phone, update, delete, import, get_users) and the client flow sendVerificationCode →
signInWithPhoneNumber, with the code taken from the emulator's verificationCodes listing and
the outbox."""

from __future__ import annotations

import json
import random
import time
import uuid

import pytest
from firebase_admin import auth

from authutil import admin_app, V1, AuthRest, expect_error, start
from conftest import PROJECT

pytestmark = pytest.mark.hearth_only(reason="Firebase Auth is served by Hearth, not by the Firestore emulator")


@pytest.fixture(scope="module")
def hearth_auth(tmp_path_factory):
    srv = start(tmp_path_factory, "auth-phone", emulator=True)
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def app(hearth_auth):
    with admin_app(hearth_auth, "phone") as a:
        yield a


@pytest.fixture
def rest(hearth_auth):
    return AuthRest(hearth_auth)


def random_phone() -> str:
    return "+1" + "".join(str(random.randint(0, 9)) for _ in range(10))


def test_admin_create_get_update_delete_phone(app):
    phone = random_phone()
    user = auth.create_user(phone_number=phone, email=f"p-{uuid.uuid4().hex[:8]}@example.com", password="secret1", app=app)
    assert user.phone_number == phone
    assert sorted(p.provider_id for p in user.provider_data) == ["password", "phone"]
    phone_info = next(p for p in user.provider_data if p.provider_id == "phone")
    assert phone_info.uid == phone and phone_info.phone_number == phone
    assert auth.get_user_by_phone_number(phone, app=app).uid == user.uid

    with pytest.raises(auth.PhoneNumberAlreadyExistsError):
        auth.create_user(phone_number=phone, app=app)
    other = auth.create_user(app=app)
    with pytest.raises(auth.PhoneNumberAlreadyExistsError):
        auth.update_user(other.uid, phone_number=phone, app=app)

    new_phone = random_phone()
    updated = auth.update_user(user.uid, phone_number=new_phone, app=app)
    assert updated.phone_number == new_phone
    with pytest.raises(auth.UserNotFoundError):
        auth.get_user_by_phone_number(phone, app=app)
    # The old number is free again.
    assert auth.update_user(other.uid, phone_number=phone, app=app).phone_number == phone

    cleared = auth.update_user(user.uid, phone_number=auth.DELETE_ATTRIBUTE, app=app)
    assert cleared.phone_number is None
    assert [p.provider_id for p in cleared.provider_data] == ["password"]
    auth.delete_user(user.uid, app=app)
    auth.delete_user(other.uid, app=app)


def test_get_users_by_phone_and_import(app):
    uid = f"imp-{uuid.uuid4().hex[:10]}"
    phone = random_phone()
    result = auth.import_users([auth.ImportUserRecord(uid=uid, phone_number=phone)], app=app)
    assert result.success_count == 1 and result.failure_count == 0
    found = auth.get_users([auth.PhoneIdentifier(phone), auth.PhoneIdentifier(random_phone())], app=app)
    assert [u.uid for u in found.users] == [uid]
    assert len(found.not_found) == 1
    # A second account with the same number fails that item only.
    clash = auth.import_users([auth.ImportUserRecord(uid=f"imp-{uuid.uuid4().hex[:10]}", phone_number=phone)], app=app)
    assert clash.failure_count == 1 and "PHONE_NUMBER_EXISTS" in clash.errors[0].reason
    auth.delete_user(uid, app=app)


@pytest.mark.parametrize("number", ["12345", "+", "+0123456789", "+1 555 0100", "+1234567890123456", "+1555abc0100"])
def test_invalid_phone_numbers_are_refused(rest, number):
    expect_error(rest.call(f"{V1}/projects/{PROJECT}/accounts", {"phoneNumber": number}, admin="owner"), "INVALID_PHONE_NUMBER")
    expect_error(rest.v1("sendVerificationCode", {"phoneNumber": number}), "INVALID_PHONE_NUMBER")


def codes(rest) -> list:
    r = rest.call(f"/emulator/v1/projects/{PROJECT}/verificationCodes", None, method="GET")
    assert r.status_code == 200, r.text
    return r.json()["verificationCodes"]


def send_code(rest, phone: str) -> tuple[str, str]:
    r = rest.v1("sendVerificationCode", {"phoneNumber": phone, "recaptchaToken": "fake"})
    assert r.status_code == 200, r.text
    session = r.json()["sessionInfo"]
    code = next(c["code"] for c in codes(rest) if c["sessionInfo"] == session)
    assert next(c for c in codes(rest) if c["sessionInfo"] == session)["phoneNumber"] == phone
    return session, code


def test_phone_sign_in_flow(app, rest, hearth_auth):
    phone = random_phone()
    session, code = send_code(rest, phone)
    assert len(code) == 6 and code.isdigit()
    # The code went through the outbox too, as email codes do.
    outbox = hearth_auth.data_dir / "outbox"
    messages = [json.loads(p.read_text()) for p in outbox.glob("*-sms-*.json")]
    assert any(m["sessionInfo"] == session and m["code"] == code and m["to"] == phone for m in messages)

    wrong = "000000" if code != "000000" else "111111"
    expect_error(rest.v1("signInWithPhoneNumber", {"sessionInfo": session, "code": wrong}), "INVALID_CODE")
    r = rest.v1("signInWithPhoneNumber", {"sessionInfo": session, "code": code})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["isNewUser"] is True and body["phoneNumber"] == phone and body["idToken"]
    claims = auth.verify_id_token(body["idToken"], app=app)
    assert claims["firebase"]["sign_in_provider"] == "phone"
    assert claims["phone_number"] == phone and claims["firebase"]["identities"]["phone"] == [phone]
    # A session is spent once used.
    expect_error(rest.v1("signInWithPhoneNumber", {"sessionInfo": session, "code": code}), "INVALID_SESSION_INFO")

    user = auth.get_user(body["localId"], app=app)
    assert user.phone_number == phone
    assert user.user_metadata.last_refresh_timestamp == pytest.approx(time.time() * 1000, abs=60_000)

    # Signing in again finds the same account; the legacy v3 name works too.
    session2, code2 = send_code(rest, phone)
    again = rest.v3("verifyPhoneNumber", {"sessionInfo": session2, "code": code2})
    assert again.status_code == 200, again.text
    assert again.json()["localId"] == body["localId"] and again.json()["isNewUser"] is False
    auth.delete_user(body["localId"], app=app)


def test_phone_link_to_signed_in_user(app, rest):
    anon = rest.sign_up()
    phone = random_phone()
    session, code = send_code(rest, phone)
    r = rest.v1("signInWithPhoneNumber", {"sessionInfo": session, "code": code, "idToken": anon["idToken"]})
    assert r.status_code == 200, r.text
    assert r.json()["localId"] == anon["localId"]
    assert auth.get_user(anon["localId"], app=app).phone_number == phone
    # Another user cannot take the number.
    other = rest.sign_up()
    session2, code2 = send_code(rest, phone)
    expect_error(rest.v1("signInWithPhoneNumber", {"sessionInfo": session2, "code": code2, "idToken": other["idToken"]}),
                 "PHONE_NUMBER_EXISTS")


def test_phone_flow_errors(rest):
    expect_error(rest.v1("sendVerificationCode", {}), "MISSING_PHONE_NUMBER")
    expect_error(rest.v1("signInWithPhoneNumber", {"code": "123456"}), "MISSING_SESSION_INFO")
    expect_error(rest.v1("signInWithPhoneNumber", {"sessionInfo": "x"}), "MISSING_CODE")
    expect_error(rest.v1("signInWithPhoneNumber", {"sessionInfo": "not-a-session", "code": "123456"}), "INVALID_SESSION_INFO")
    r = rest.v1("signInWithPhoneNumber", {"sessionInfo": 5, "code": "123456"})
    assert r.status_code == 400 and "Invalid value at 'sessionInfo'" in r.json()["error"]["message"]
    # Five wrong codes spend the session.
    session, code = send_code(rest, random_phone())
    wrong = "000000" if code != "000000" else "111111"
    for _ in range(5):
        expect_error(rest.v1("signInWithPhoneNumber", {"sessionInfo": session, "code": wrong}), "INVALID_CODE")
    expect_error(rest.v1("signInWithPhoneNumber", {"sessionInfo": session, "code": code}), "INVALID_SESSION_INFO")
