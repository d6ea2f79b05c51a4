"""Email delivery over SMTP (--smtp-url): password-reset, verification and sign-in emails reach a
real SMTP server (aiosmtpd) — plaintext with AUTH, and STARTTLS with a CA of our own — and their
links' codes work; a server that refuses or is unreachable leaves the email in the outbox."""

from __future__ import annotations

import datetime
import email
import email.policy
import ipaddress
import ssl
import threading
import time
import urllib.parse
import uuid

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult

from authutil import V1, AuthRest, start
from conftest import PROJECT, _free_port

pytestmark = pytest.mark.hearth_only(reason="email delivery is Hearth's")

USER, PASSWORD = "mailer", "s3cret pass"


class Inbox:
    """aiosmtpd handler that keeps every message it accepts."""

    def __init__(self):
        self.messages: list[tuple[str, list[str], email.message.EmailMessage]] = []
        self.arrived = threading.Condition()

    async def handle_DATA(self, server, session, envelope):
        msg = email.message_from_bytes(envelope.content, policy=email.policy.default)
        with self.arrived:
            self.messages.append((envelope.mail_from, list(envelope.rcpt_tos), msg))
            self.arrived.notify_all()
        return "250 OK"

    def wait_for(self, to: str, srv=None, timeout: float = 20.0):
        deadline = time.monotonic() + timeout
        with self.arrived:
            while True:
                for m in self.messages:
                    if to in m[1]:
                        return m
                left = deadline - time.monotonic()
                if left <= 0:
                    log = srv.output() if srv is not None else ""
                    raise AssertionError(f"no email to {to} within {timeout}s; got {[m[1] for m in self.messages]}\n{log}")
                self.arrived.wait(left)


def authenticator(server, session, envelope, mechanism, auth_data):
    ok = auth_data.login == USER.encode() and auth_data.password == PASSWORD.encode()
    return AuthResult(success=ok)


def self_signed(tmp_path):
    """A self-signed certificate for localhost (its own trust root)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = tmp_path / "smtp.pem", tmp_path / "smtp.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    """An SMTP server without TLS that requires AUTH, and a Hearth sending to it."""
    inbox = Inbox()
    port = _free_port()
    ctl = Controller(inbox, hostname="127.0.0.1", port=port, authenticator=authenticator, auth_required=True,
                     auth_require_tls=False)
    ctl.start()
    url = f"smtp://{USER}:{urllib.parse.quote(PASSWORD)}@127.0.0.1:{port}"
    srv = start(tmp_path_factory, "auth-smtp", emulator=True, service_account=False,
                extra_args=("--smtp-url", url, "--mail-from", "accounts@example.com"))
    yield srv, inbox
    srv.stop()
    ctl.stop()


def oob_code(msg) -> tuple[str, str]:
    body = msg.get_body(preferencelist=("plain",)).get_content()
    link = next(w for w in body.split() if "oobCode=" in w)
    return link, urllib.parse.parse_qs(urllib.parse.urlparse(link).query)["oobCode"][0]


def test_password_reset_email_arrives_and_its_code_works(plain):
    srv, inbox = plain
    rest = AuthRest(srv)
    addr = f"reset-{uuid.uuid4().hex[:8]}@example.com"
    rest.sign_up(addr, "old-password")
    r = rest.v1("sendOobCode", {"requestType": "PASSWORD_RESET", "email": addr})
    assert r.status_code == 200, r.text
    sender, rcpts, msg = inbox.wait_for(addr, srv)
    assert sender == "accounts@example.com" and rcpts == [addr]
    assert msg["To"] == addr and msg["From"] == "accounts@example.com"
    assert msg["Subject"] == f"Reset your password for {PROJECT}"
    assert msg["Message-ID"] and msg["Date"]
    link, code = oob_code(msg)
    assert "mode=resetPassword" in link
    r = rest.v1("resetPassword", {"oobCode": code, "newPassword": "new-password"})
    assert r.status_code == 200, r.text
    r = rest.v1("signInWithPassword", {"email": addr, "password": "new-password", "returnSecureToken": True})
    assert r.status_code == 200, r.text
    # Delivered by SMTP, so not kept in the outbox.
    outbox = srv.data_dir / "outbox"
    assert not outbox.exists() or not [p for p in outbox.iterdir() if code[:8] in p.name]


def test_verification_and_sign_in_emails(plain):
    srv, inbox = plain
    rest = AuthRest(srv)
    addr = f"verify-{uuid.uuid4().hex[:8]}@example.com"
    up = rest.sign_up(addr, "password1")
    r = rest.v1("sendOobCode", {"requestType": "VERIFY_EMAIL", "idToken": up["idToken"]})
    assert r.status_code == 200, r.text
    _, _, msg = inbox.wait_for(addr, srv)
    assert msg["Subject"] == f"Verify your email for {PROJECT}"
    _, code = oob_code(msg)
    r = rest.v1("update", {"oobCode": code})
    assert r.status_code == 200 and r.json()["emailVerified"] is True, r.text

    other = f"link-{uuid.uuid4().hex[:8]}@example.com"
    r = rest.v1("sendOobCode", {"requestType": "EMAIL_SIGNIN", "email": other, "continueUrl": "https://app.example.com/done"})
    assert r.status_code == 200, r.text
    _, _, msg = inbox.wait_for(other, srv)
    assert msg["Subject"].startswith(f"Sign in to {PROJECT}")
    _, code = oob_code(msg)
    r = rest.v1("signInWithEmailLink", {"email": other, "oobCode": code})
    assert r.status_code == 200 and r.json()["email"] == other, r.text


def test_starttls_with_our_own_ca(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("smtp-tls")
    cert, key = self_signed(tmp)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    inbox = Inbox()
    port = _free_port()
    ctl = Controller(inbox, hostname="127.0.0.1", port=port, tls_context=context, require_starttls=True,
                     authenticator=authenticator, auth_required=True)
    ctl.start()
    try:
        url = f"smtp://{USER}:{urllib.parse.quote(PASSWORD)}@localhost:{port}?starttls=require&ca={cert}"
        srv = start(tmp_path_factory, "auth-smtp-tls", emulator=True, service_account=False, extra_args=("--smtp-url", url))
        try:
            rest = AuthRest(srv)
            addr = f"tls-{uuid.uuid4().hex[:8]}@example.com"
            rest.sign_up(addr, "password1")
            assert rest.v1("sendOobCode", {"requestType": "PASSWORD_RESET", "email": addr}).status_code == 200
            sender, _, msg = inbox.wait_for(addr, srv)
            assert sender == f"noreply@{PROJECT}.firebaseapp.com"
            assert oob_code(msg)[1]
        finally:
            srv.stop()
    finally:
        ctl.stop()


def wait_for_outbox(srv, timeout: float = 20.0):
    outbox = srv.data_dir / "outbox"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        files = [p for p in outbox.iterdir() if p.suffix == ".json"] if outbox.exists() else []
        if files:
            return files
        time.sleep(0.1)
    raise AssertionError(f"nothing in {outbox}; log:\n{srv.output()}")


class Refusing(Inbox):
    """Refuses every recipient, as a relay does for an unknown mailbox."""

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        return "550 5.1.1 mailbox unavailable"


def test_refused_or_unreachable_smtp_keeps_the_email_in_the_outbox(tmp_path_factory):
    inbox = Refusing()
    port = _free_port()
    ctl = Controller(inbox, hostname="127.0.0.1", port=port)
    ctl.start()
    try:
        for name, url in (("auth-smtp-refused", f"smtp://127.0.0.1:{port}"),
                          ("auth-smtp-down", f"smtp://127.0.0.1:{_free_port()}?starttls=never")):
            srv = start(tmp_path_factory, name, emulator=True, service_account=False, extra_args=("--smtp-url", url))
            try:
                rest = AuthRest(srv)
                addr = f"kept-{uuid.uuid4().hex[:8]}@example.com"
                rest.sign_up(addr, "password1")
                r = rest.v1("sendOobCode", {"requestType": "PASSWORD_RESET", "email": addr})
                assert r.status_code == 200, r.text
                files = wait_for_outbox(srv)
                assert addr in files[0].read_text()
                assert "email not sent; kept in the outbox" in srv.output()
                if name == "auth-smtp-refused":
                    assert "RCPT TO" in srv.output() and "550" in srv.output()
            finally:
                srv.stop()
        assert inbox.messages == []
    finally:
        ctl.stop()


def test_bad_smtp_url_is_refused_at_startup(tmp_path_factory):
    from conftest import HearthServer
    from authutil import hearth_binary

    srv = HearthServer(hearth_binary(), tmp_path_factory.mktemp("smtp-bad"), emulator=True,
                       extra_args=("--smtp-url", "http://mail.example.com"))
    with pytest.raises(RuntimeError) as e:
        srv.start()
    assert "--smtp-url" in str(e.value) and "smtp://" in str(e.value)
