"""TLS on every port (`--tls-cert/--tls-key`), with a certificate from `hearth admin tls
self-signed`: clients connect with only the CA file configured, plain HTTP is refused with a
readable answer, the Firestore port negotiates h2 and http/1.1 by ALPN, certificates reload
without dropping connections, X-Forwarded-* count only from trusted proxies, and refused
certificates stop the start with a clear message and exit status 78."""

from __future__ import annotations

import datetime
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import time
import uuid

import boto3
import grpc
import pytest
import requests
from google.cloud.firestore_v1.services.firestore import FirestoreClient
from google.cloud.firestore_v1.services.firestore.transports.grpc import FirestoreGrpcTransport
from google.cloud.firestore_v1.types import Document, Value

from authutil import hearth_binary
from conftest import PROJECT
from tlsutil import https, self_signed, start_tls_server, write_cert

pytestmark = pytest.mark.hearth_only(reason="TLS and production mode are Hearth's")

ADMIN = "tls-admin-" + uuid.uuid4().hex
SERVICES = ["firestore", "auth", "storage", "s3", "database", "api", "console"]
TLS_EXIT = 78


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    server = start_tls_server(tmp_path_factory.mktemp("tls"), "--trusted-proxy", "10.9.0.0/16", admin_token=ADMIN)
    yield server
    server.stop()


def auth():
    return {"Authorization": f"Bearer {ADMIN}"}


def peer_certificate(port: int, ca) -> bytes:
    ctx = ssl.create_default_context(cafile=str(ca))
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            return tls.getpeercert(binary_form=True)


def test_every_port_speaks_tls_with_only_the_ca(srv):
    docs = f"{https(srv, 'firestore')}/v1/projects/{PROJECT}/databases/(default)/documents/tls/a"
    r = requests.patch(docs, json={"fields": {"n": {"integerValue": "1"}}}, headers=auth(), verify=str(srv.ca), timeout=30)
    assert r.status_code == 200, r.text
    assert requests.get(docs, headers=auth(), verify=str(srv.ca), timeout=30).json()["fields"]["n"] == {"integerValue": "1"}
    for service, path in [("auth", "/v1/accounts:signUp?key=k"), ("storage", f"/v0/b/{PROJECT}.appspot.com/o"),
                          ("s3", "/"), ("database", "/.json"), ("api", "/healthz"), ("console", "/")]:
        method = "POST" if service == "auth" else "GET"
        r = requests.request(method, https(srv, service) + path, json={} if method == "POST" else None, verify=str(srv.ca), timeout=30)
        assert r.status_code < 500, (service, r.status_code, r.text)
    # Without the CA the certificate is not trusted (it is not a public one).
    with pytest.raises(requests.exceptions.SSLError):
        requests.get(https(srv, "api") + "/healthz", timeout=30)


def test_console_and_its_proxy_over_tls(srv):
    """The console signs in over TLS and its proxy reaches the other ports over TLS on loopback."""
    s = requests.Session()  # verify= on each call: a session's own is overridden by REQUESTS_CA_BUNDLE
    console = https(srv, "console")
    r = s.post(console + "/api/session", json={"method": "token", "token": ADMIN}, timeout=30, verify=str(srv.ca))
    assert r.status_code == 200, r.text
    info = s.get(console + "/api/session", timeout=30, verify=str(srv.ca)).json()
    assert info["publicURLs"]["firestore"] == f"https://127.0.0.1:{srv.port}", info
    r = s.get(console + f"/api/proxy/firestore/v1/projects/{PROJECT}/databases/(default)/documents/tls/a", timeout=30, verify=str(srv.ca))
    assert r.status_code == 200 and r.json()["fields"]["n"] == {"integerValue": "1"}, r.text
    r = s.post(console + f"/api/proxy/firestore/v1/projects/{PROJECT}/databases/(default)/documents/tls?documentId=console",
               json={"fields": {}}, headers={"X-CSRF-Token": info["csrfToken"], "Origin": console}, timeout=30, verify=str(srv.ca))
    assert r.status_code == 200, r.text


def test_alpn_offers_h2_on_firestore_and_http1_elsewhere(srv):
    for service, offered, expected in [("firestore", ["h2", "http/1.1"], "h2"), ("firestore", ["http/1.1"], "http/1.1"),
                                       ("storage", ["h2", "http/1.1"], "http/1.1")]:
        ctx = ssl.create_default_context(cafile=str(srv.ca))
        ctx.set_alpn_protocols(offered)
        with socket.create_connection(("127.0.0.1", srv.ports[service]), timeout=10) as raw:
            with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
                assert tls.selected_alpn_protocol() == expected, service


def test_grpcio_with_the_ca_as_root(srv):
    creds = grpc.ssl_channel_credentials(root_certificates=srv.ca.read_bytes())
    channel = grpc.secure_channel(f"127.0.0.1:{srv.port}", creds)
    client = FirestoreClient(transport=FirestoreGrpcTransport(channel=channel))
    name = f"projects/{PROJECT}/databases/(default)/documents/tls/grpc"
    md = [("authorization", f"Bearer {ADMIN}")]
    client.update_document(document=Document(name=name, fields={"v": Value(string_value="h2")}), metadata=md, timeout=30)
    assert client.get_document(request={"name": name}, metadata=md, timeout=30).fields["v"].string_value == "h2"
    # Without the CA the handshake fails (never a cleartext fallback).
    untrusted = FirestoreClient(transport=FirestoreGrpcTransport(
        channel=grpc.secure_channel(f"127.0.0.1:{srv.port}", grpc.ssl_channel_credentials())))
    with pytest.raises(Exception) as info:
        untrusted.get_document(request={"name": name}, metadata=md, timeout=10, retry=None)
    assert "CERTIFICATE_VERIFY_FAILED" in str(info.value), info.value


def test_boto3_with_only_the_ca(srv, tmp_path):
    out = subprocess.run([hearth_binary(), "admin", "s3-keys", "create", "--data-dir", str(srv.data_dir), "--json"],
                         check=True, capture_output=True, text=True, timeout=60)
    key = json.loads(out.stdout)
    s3 = boto3.client("s3", endpoint_url=https(srv, "s3"), verify=str(srv.ca), region_name="us-east-1",
                      aws_access_key_id=key["accessKeyId"], aws_secret_access_key=key["secretAccessKey"])
    s3.put_object(Bucket=f"{PROJECT}.appspot.com", Key="tls/boto3.txt", Body=b"tls")
    assert s3.get_object(Bucket=f"{PROJECT}.appspot.com", Key="tls/boto3.txt")["Body"].read() == b"tls"


def test_plain_http_on_a_tls_port_is_refused_cleanly(srv):
    for service in SERVICES:
        r = requests.get(f"http://127.0.0.1:{srv.ports[service]}/", timeout=10)
        assert r.status_code == 400, service
        assert "TLS" in r.text and "https://" in r.text, r.text
    # h2c prior knowledge (a gRPC client without TLS) gets the same answer and a closed connection.
    with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as s:
        s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        data = b""
        while chunk := s.recv(4096):
            data += chunk
        assert data.startswith(b"HTTP/1.1 400 ")
    # The server is unharmed.
    assert requests.get(https(srv, "api") + "/healthz", verify=str(srv.ca), timeout=10).status_code == 200


def test_forwarded_headers_count_only_from_trusted_proxies(srv):
    """The test client (127.0.0.1) is not a trusted proxy (10.9.0.0/16 is): its X-Forwarded-Proto
    is replaced by the real scheme, so the URLs Hearth writes say https."""
    bucket = f"{PROJECT}.appspot.com"
    up = requests.post(f"{https(srv, 'storage')}/upload/storage/v1/b/{bucket}/o?uploadType=media&name=tls/fwd.txt",
                       data=b"x", headers={**auth(), "X-Forwarded-Proto": "http", "Content-Type": "text/plain"},
                       verify=str(srv.ca), timeout=30)
    assert up.status_code == 200, up.text
    assert up.json()["mediaLink"].startswith(f"https://127.0.0.1:{srv.ports['storage']}/"), up.json()["mediaLink"]


def test_forwarded_headers_from_a_trusted_proxy(tmp_path):
    """Behind a TLS-terminating proxy on loopback (--trusted-proxy 127.0.0.1), a cleartext server
    writes https URLs when the proxy says so, and not when an untrusted header would."""
    from conftest import HearthServer
    srv = HearthServer(hearth_binary(), tmp_path, emulator=False,
                       extra_args=("--admin-token", ADMIN, "--trusted-proxy", "127.0.0.1/32", "--log-level", "debug"))
    srv.start()
    try:
        bucket = f"{PROJECT}.appspot.com"
        url = f"http://127.0.0.1:{srv.ports['storage']}/upload/storage/v1/b/{bucket}/o?uploadType=media&name=p.txt"
        for proto, expected in [("https", "https://"), (None, "http://"), ("gopher", "http://")]:
            headers = {**auth(), "Content-Type": "text/plain", "X-Forwarded-For": "203.0.113.9"}
            if proto:
                headers["X-Forwarded-Proto"] = proto
            r = requests.post(url, data=b"p", headers=headers, timeout=30)
            assert r.status_code == 200, r.text
            assert r.json()["mediaLink"].startswith(expected), (proto, r.json()["mediaLink"])
        # Logs name the client the proxy reported (the right-most hop that is not a trusted proxy).
        r = requests.post(f"http://127.0.0.1:{srv.ports['auth']}/v1/accounts:signInWithPassword?key=k", json={},
                          headers={"X-Forwarded-For": "198.51.100.1, 203.0.113.77, 127.0.0.1"}, timeout=30)
        assert r.status_code == 400
        deadline = time.monotonic() + 10
        while "client=203.0.113.77" not in srv.output():
            assert time.monotonic() < deadline, srv.output()[-3000:]
            time.sleep(0.1)
    finally:
        srv.stop()


@pytest.mark.single_server(reason="SIGHUP to the one process; its connections stay open across the reload")
def test_certificate_reloads_on_change_and_sighup_without_dropping_connections(tmp_path):
    srv = start_tls_server(tmp_path, admin_token=ADMIN)
    try:
        port = srv.ports["api"]
        first = peer_certificate(port, srv.ca)
        session = requests.Session()
        assert session.get(https(srv, "api") + "/healthz", verify=str(srv.ca), timeout=10).status_code == 200
        # A new pair from a new CA replaces the files (as certbot does): new handshakes present it …
        fresh = self_signed(hearth_binary(), tmp_path / "fresh", "127.0.0.1")
        shutil.copy(fresh / "server-key.pem", tmp_path / "certs" / "server-key.pem")
        shutil.copy(fresh / "server.pem", tmp_path / "certs" / "server.pem")
        deadline = time.monotonic() + 15
        while True:
            try:
                now = peer_certificate(port, fresh / "ca.pem")
                break
            except ssl.SSLError:
                assert time.monotonic() < deadline, srv.output()
                time.sleep(0.2)
        assert now != first
        # … and the connection opened before the change still works, on the old certificate.
        assert session.get(https(srv, "api") + "/healthz", verify=str(srv.ca), timeout=10).status_code == 200
        # A half-written pair (a key that does not match) is refused; the pair in force stays.
        third = self_signed(hearth_binary(), tmp_path / "third", "127.0.0.1")
        shutil.copy(third / "server-key.pem", tmp_path / "certs" / "server-key.pem")
        time.sleep(2.5)
        assert peer_certificate(port, fresh / "ca.pem") == now
        assert "not reloaded" in srv.output()
        # SIGHUP reloads too (here once the certificate matches the key again).
        shutil.copy(third / "server.pem", tmp_path / "certs" / "server.pem")
        os.kill(srv.proc.pid, signal.SIGHUP)
        deadline = time.monotonic() + 15
        while True:
            try:
                peer_certificate(port, third / "ca.pem")
                break
            except ssl.SSLError:
                assert time.monotonic() < deadline, srv.output()
                time.sleep(0.2)
        assert srv.proc.poll() is None
    finally:
        srv.stop()


def start_failure(tmp_path, *args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [hearth_binary(), "serve", "--data-dir", str(tmp_path / "data"), "--admin-token", ADMIN,
         "--firestore-port", "0", "--auth-port", "0", "--storage-port", "0", "--s3-port", "0", "--database-port", "0",
         "--api-port", "0", "--console-port", "0", *args],
        capture_output=True, text=True, timeout=60)


def test_expired_certificate_is_reported_at_start(tmp_path):
    now = datetime.datetime.now(datetime.timezone.utc)
    cert, key = write_cert(tmp_path / "old", not_before=now - datetime.timedelta(days=30), not_after=now - datetime.timedelta(days=1))
    r = start_failure(tmp_path, "--tls-cert", str(cert), "--tls-key", str(key))
    assert r.returncode == TLS_EXIT, r.stderr
    assert "expired" in r.stderr and str(cert) in r.stderr, r.stderr
    assert not (tmp_path / "data" / "hearth.sqlite").exists()


def test_mismatched_pair_missing_and_unreadable_files(tmp_path):
    a = self_signed(hearth_binary(), tmp_path / "a", "127.0.0.1")
    b = self_signed(hearth_binary(), tmp_path / "b", "127.0.0.1")
    r = start_failure(tmp_path, "--tls-cert", str(a / "server.pem"), "--tls-key", str(b / "server-key.pem"))
    assert r.returncode == TLS_EXIT and "does not belong to the certificate" in r.stderr, r.stderr
    r = start_failure(tmp_path, "--tls-cert", str(tmp_path / "nope.pem"), "--tls-key", str(a / "server-key.pem"))
    assert r.returncode == TLS_EXIT and "does not exist" in r.stderr, r.stderr
    r = start_failure(tmp_path, "--tls-cert", str(a / "server-key.pem"), "--tls-key", str(a / "server-key.pem"))
    assert r.returncode == TLS_EXIT and "no PEM certificate" in r.stderr, r.stderr
    r = start_failure(tmp_path, "--tls-cert", str(a / "server.pem"), "--tls-key", str(a / "server.pem"))
    assert r.returncode == TLS_EXIT and "no PEM private key" in r.stderr, r.stderr
    if os.geteuid() != 0:
        locked = tmp_path / "locked.pem"
        shutil.copy(a / "server-key.pem", locked)
        locked.chmod(0)
        r = start_failure(tmp_path, "--tls-cert", str(a / "server.pem"), "--tls-key", str(locked))
        assert r.returncode == TLS_EXIT and "cannot be read" in r.stderr, r.stderr
    r = start_failure(tmp_path, "--tls-cert", str(a / "server.pem"))
    assert r.returncode != 0 and "--tls-key" in r.stderr, r.stderr


def test_self_signed_names_every_host_and_refuses_to_overwrite(tmp_path):
    from cryptography import x509
    out = self_signed(hearth_binary(), tmp_path / "c", "hearth.example.com", "10.1.2.3")
    leaf = x509.load_pem_x509_certificates((out / "server.pem").read_bytes())[0]
    san = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert set(san.get_values_for_type(x509.DNSName)) == {"hearth.example.com", "localhost"}
    assert {str(ip) for ip in san.get_values_for_type(x509.IPAddress)} == {"10.1.2.3", "127.0.0.1", "::1"}
    assert oct((out / "server-key.pem").stat().st_mode & 0o777) == "0o600"
    assert oct((out / "ca-key.pem").stat().st_mode & 0o777) == "0o600"
    # The chain verifies against the CA with OpenSSL's strict checks.
    r = subprocess.run(["openssl", "verify", "-x509_strict", "-CAfile", str(out / "ca.pem"), str(out / "server.pem")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    again = subprocess.run([hearth_binary(), "admin", "tls", "self-signed", "--out", str(out)], capture_output=True, text=True)
    assert again.returncode != 0 and "--force" in again.stderr


def test_tls_from_firebase_json_and_the_environment(tmp_path):
    """`hearth.tls` and `hearth.trustedProxies` in firebase.json (paths relative to it) turn TLS on;
    HEARTH_TLS_CERT/HEARTH_TLS_KEY win over firebase.json."""
    from tlsutil import ServeProcess
    self_signed(hearth_binary(), tmp_path / "certs", "127.0.0.1")
    (tmp_path / "firebase.json").write_text(json.dumps({"hearth": {
        "tls": {"cert": "certs/server.pem", "key": "certs/server-key.pem"}, "trustedProxies": ["10.0.0.0/8"]}}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEARTH_")}
    srv = ServeProcess(hearth_binary(), tmp_path, ["--admin-token", ADMIN], 1, env=env)
    try:
        r = requests.get(f"https://127.0.0.1:{srv.ports['api']}/healthz", verify=str(tmp_path / "certs" / "ca.pem"), timeout=10)
        assert r.status_code == 200
        assert requests.get(f"http://127.0.0.1:{srv.ports['api']}/healthz", timeout=10).status_code == 400
    finally:
        srv.stop()
    now = datetime.datetime.now(datetime.timezone.utc)
    cert, key = write_cert(tmp_path / "old", not_before=now - datetime.timedelta(days=9), not_after=now - datetime.timedelta(days=2))
    r = subprocess.run([hearth_binary(), "serve", "--admin-token", ADMIN, "--firestore-port", "0"], cwd=tmp_path,
                       env={**env, "HEARTH_TLS_CERT": str(cert), "HEARTH_TLS_KEY": str(key)}, capture_output=True, text=True, timeout=60)
    assert r.returncode == TLS_EXIT and "expired" in r.stderr, r.stderr
    bad = json.dumps({"hearth": {"trustedProxies": ["10.0.0.0/99"]}})
    (tmp_path / "firebase.json").write_text(bad)
    r = subprocess.run([hearth_binary(), "serve", "--admin-token", ADMIN], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "10.0.0.0/99" in r.stderr, r.stderr
