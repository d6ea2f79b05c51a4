"""Request-size limits on every port (docs/production.md, "Request-size limits"): `--max-request-bytes`
for request bodies and gRPC messages, `--max-object-bytes` for Storage and S3 uploads. Each refusal
comes in its protocol's own shape — through the official clients where they exist — a declared
`Content-Length` over the limit is answered before the body is sent, a chunked body is counted as it
arrives, and nothing is half-written."""

from __future__ import annotations

import json
import os
import socket
import uuid
import xml.etree.ElementTree as ET

import boto3
import pytest
import requests
from botocore.client import Config
from botocore.exceptions import ClientError
from google.api_core import exceptions as gexc
from google.auth.credentials import AnonymousCredentials
from google.cloud import firestore, storage

from apiutil import ApiUser
from authutil import API_KEY, start
from rawhttp import read_response

pytestmark = pytest.mark.hearth_only(reason="Hearth's own limits")

LIMIT = 64 * 1024
OBJECT_LIMIT = 200_000
PROJECT = "demo-hearth"
BUCKET = f"{PROJECT}.appspot.com"
TIMEOUT = 30
HUGE = 10 * 1024 ** 3  # declared, never sent


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    server = start(
        tmp_path_factory, "limits", emulator=True, service_account=False,
        extra_args=("--max-request-bytes", str(LIMIT), "--max-object-bytes", str(OBJECT_LIMIT)))
    yield server
    server.stop()


def refused_before_body(port: int, head: str) -> tuple[int, dict, bytes]:
    """Sends only the head of a request declaring HUGE bytes; the answer must come at once, with
    the connection closing instead of reading gigabytes."""
    with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
        sock.sendall(head.encode())
        status, headers, body = read_response(sock)
        assert headers.get("connection") == "close", headers
        closed = False
        try:
            for _ in range(4096):  # 256 MiB at most: the server stops reading long before
                sock.sendall(b"\0" * 65536)
        except (BrokenPipeError, ConnectionResetError):
            closed = True
        assert closed, "the server kept reading a body over the limit"
    return status, headers, body


def chunks(total: int, size: int = 16384):
    sent = 0
    while sent < total:
        n = min(size, total - sent)
        sent += n
        yield b" " * n


# Firestore ----------------------------------------------------------------------------------


def test_firestore_rest_refuses_a_large_body_in_googles_shape(srv):
    url = f"{srv.rest_base}/v1/projects/{PROJECT}/databases/(default)/documents/limits?documentId=big"
    auth = {"Authorization": "Bearer owner", "Content-Type": "application/json"}
    body = json.dumps({"fields": {"s": {"stringValue": "x" * (LIMIT + 10)}}})
    r = requests.post(url, data=body, headers=auth, timeout=TIMEOUT)
    assert r.status_code == 400, r.text
    assert r.json() == {"error": {
        "code": 400, "message": f"Request payload size exceeds the limit: {LIMIT} bytes.", "status": "INVALID_ARGUMENT"}}
    # Chunked (no Content-Length): counted as it arrives.
    r = requests.post(url, data=chunks(LIMIT + 100), headers=auth, timeout=TIMEOUT)
    assert r.status_code == 400 and r.json()["error"]["status"] == "INVALID_ARGUMENT", r.text
    # Declared: answered from the headers.
    status, _, raw = refused_before_body(
        srv.port,
        f"POST /v1/projects/{PROJECT}/databases/(default)/documents/limits?documentId=big HTTP/1.1\r\nHost: x\r\n"
        f"Authorization: Bearer owner\r\nContent-Type: application/json\r\nContent-Length: {HUGE}\r\n\r\n")
    assert status == 400 and json.loads(raw)["error"]["message"].startswith("Request payload size exceeds the limit")
    assert requests.get(url.split("?")[0] + "/big", headers=auth, timeout=TIMEOUT).status_code == 404
    # Under the limit still works.
    ok = requests.post(url, data=json.dumps({"fields": {"s": {"stringValue": "small"}}}), headers=auth, timeout=TIMEOUT)
    assert ok.status_code == 200, ok.text


def test_firestore_grpc_message_over_the_limit_is_resource_exhausted(srv, monkeypatch):
    monkeypatch.setenv("FIRESTORE_EMULATOR_HOST", f"127.0.0.1:{srv.port}")
    db = firestore.Client(project=PROJECT)
    doc = db.collection("limits-grpc").document(uuid.uuid4().hex)
    with pytest.raises(gexc.ResourceExhausted):
        doc.set({"s": "x" * (LIMIT + 10)}, retry=None, timeout=20)
    assert not doc.get(timeout=20).exists
    doc.set({"s": "fits"}, timeout=20)
    assert doc.get(timeout=20).to_dict() == {"s": "fits"}


# Auth ---------------------------------------------------------------------------------------


def test_identity_toolkit_refuses_a_large_body_in_its_shape(srv):
    url = f"{srv.auth_base}/identitytoolkit.googleapis.com/v1/accounts:signUp?key={API_KEY}"
    email = f"big-{uuid.uuid4().hex[:8]}@example.com"
    r = requests.post(url, json={"email": email, "password": "secret-pass", "displayName": "x" * (LIMIT + 10)}, timeout=TIMEOUT)
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["code"] == 400 and err["message"] == f"Request payload size exceeds the limit: {LIMIT} bytes."
    status, _, raw = refused_before_body(
        srv.auth_port,
        f"POST /identitytoolkit.googleapis.com/v1/accounts:signUp?key={API_KEY} HTTP/1.1\r\nHost: x\r\n"
        f"Content-Type: application/json\r\nContent-Length: {HUGE}\r\n\r\n")
    assert status == 400 and json.loads(raw)["error"]["code"] == 400
    # Nobody was signed up.
    lookup = requests.post(
        f"{srv.auth_base}/identitytoolkit.googleapis.com/v1/projects/{PROJECT}/accounts:lookup",
        json={"email": [email]}, headers={"Authorization": "Bearer owner"}, timeout=TIMEOUT)
    assert "users" not in lookup.json(), lookup.text


# Realtime Database --------------------------------------------------------------------------


def test_database_refuses_a_large_write_with_its_error_json(srv):
    base = f"http://127.0.0.1:{srv.ports['database']}"
    path = f"/limits/{uuid.uuid4().hex}.json?ns={PROJECT}-default-rtdb"
    headers = {"Authorization": "Bearer owner"}
    r = requests.put(base + path, data=json.dumps("x" * (LIMIT + 10)), headers=headers, timeout=TIMEOUT)
    assert r.status_code == 413, r.text
    assert set(r.json()) == {"error"} and "exceeds the maximum size" in r.json()["error"]
    status, _, raw = refused_before_body(
        srv.ports["database"], f"PUT {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer owner\r\nContent-Length: {HUGE}\r\n\r\n")
    assert status == 413 and "error" in json.loads(raw)
    assert requests.get(base + path, headers=headers, timeout=TIMEOUT).json() is None


# Storage ------------------------------------------------------------------------------------


def test_storage_upload_over_the_object_limit_is_413_json(srv, monkeypatch):
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", srv.storage_base)
    client = storage.Client(project=PROJECT, credentials=AnonymousCredentials())
    bucket = client.bucket(BUCKET)
    name = f"big-{uuid.uuid4().hex[:8]}.bin"
    with pytest.raises(gexc.GoogleAPICallError) as e:
        bucket.blob(name).upload_from_string(b"x" * (OBJECT_LIMIT + 1), retry=None)
    assert e.value.code == 413, e.value
    assert bucket.get_blob(name) is None
    bucket.blob(name).upload_from_string(b"x" * OBJECT_LIMIT)
    assert bucket.get_blob(name).size == OBJECT_LIMIT

    # Firebase's v0 API: declared, and streamed without a length.
    v0 = f"/v0/b/{BUCKET}/o?name=v0-{name}"
    status, _, raw = refused_before_body(
        srv.ports["storage"],
        f"POST {v0} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer owner\r\nContent-Type: application/octet-stream\r\n"
        f"Content-Length: {HUGE}\r\n\r\n")
    assert status == 413 and json.loads(raw)["error"]["code"] == 413
    r = requests.post(srv.storage_base + v0, data=chunks(OBJECT_LIMIT + 1), headers={"Authorization": "Bearer owner"}, timeout=TIMEOUT)
    assert r.status_code == 413, r.text
    assert requests.get(f"{srv.storage_base}/v0/b/{BUCKET}/o/v0-{name}", headers={"Authorization": "Bearer owner"},
                        timeout=TIMEOUT).status_code == 404
    # Metadata bodies have the request limit.
    r = requests.patch(f"{srv.storage_base}/v0/b/{BUCKET}/o/{name}", json={"metadata": {"k": "v" * (LIMIT + 10)}},
                       headers={"Authorization": "Bearer owner"}, timeout=TIMEOUT)
    assert r.status_code == 413, r.text


# S3 -----------------------------------------------------------------------------------------


def test_s3_put_over_the_object_limit_is_entity_too_large(srv):
    import subprocess
    out = subprocess.run([os.environ["HEARTH_BIN"], "admin", "s3-keys", "create", "--data-dir", str(srv.data_dir), "--json"],
                         check=True, capture_output=True, text=True, timeout=60).stdout
    key = json.loads(out)
    s3 = boto3.client(
        "s3", endpoint_url=srv.s3_base, region_name="us-east-1", aws_access_key_id=key["accessKeyId"],
        aws_secret_access_key=key["secretAccessKey"],
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}, signature_version="s3v4"))
    bucket = f"limits-{uuid.uuid4().hex[:8]}"
    s3.create_bucket(Bucket=bucket)
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="big.bin", Body=b"x" * (OBJECT_LIMIT + 1))
    assert e.value.response["Error"]["Code"] == "EntityTooLarge"
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="big.bin")
    s3.put_object(Bucket=bucket, Key="fits.bin", Body=b"x" * OBJECT_LIMIT)
    # An XML document over the request limit (a batch delete of many keys).
    many = [{"Key": f"k{i:06d}-" + "x" * 200} for i in range(1000)]
    with pytest.raises(ClientError) as e:
        s3.delete_objects(Bucket=bucket, Delete={"Objects": many})
    assert e.value.response["Error"]["Code"] == "MaxMessageLengthExceeded"
    assert s3.head_object(Bucket=bucket, Key="fits.bin")["ContentLength"] == OBJECT_LIMIT


# The api port and the console -----------------------------------------------------------------


def test_api_port_and_console_refuse_large_bodies(srv):
    user = ApiUser(srv)
    srv.api_base = f"http://127.0.0.1:{srv.ports['api']}"
    r = user.call("POST", "/v1/files/presign-upload", data=b"{" + b" " * (LIMIT + 10) + b"}",
                  headers={"Content-Type": "application/json"})
    assert r.status_code == 413, r.text
    assert "detail" in r.json()
    status, _, raw = refused_before_body(
        srv.ports["console"],
        f"POST /api/session HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {HUGE}\r\n\r\n")
    assert status == 400 and json.loads(raw)["error"]["status"] == "INVALID_ARGUMENT", raw


def test_request_head_over_the_decoder_limit_is_400(srv):
    with socket.create_connection(("127.0.0.1", srv.auth_port), timeout=20) as sock:
        sock.sendall(b"GET /emulator/v1/projects/demo-hearth/config HTTP/1.1\r\nHost: x\r\n"
                     + b"X-Big: " + b"a" * (100 * 1024) + b"\r\n\r\n")
        status, _, _ = read_response(sock)
        assert status == 400
    # The server still serves.
    assert requests.get(f"http://127.0.0.1:{srv.ports['api']}/healthz", timeout=TIMEOUT).status_code == 200
