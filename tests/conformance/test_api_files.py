"""The api port's file registry (docs/app-backend.md) through HTTP with real ID tokens: the
reference FastAPI service's flow (presign -> PUT -> complete -> presign-download -> GET), the
presigned-POST variant, listing, deletion, expiry, and every error path."""

from __future__ import annotations

import re
import threading
import time

import jwt
import pytest
import requests
from openapi_spec_validator import validate

from apiutil import JPEG, PNG, ApiUser, admin_document, admin_object, start_api_server

pytestmark = pytest.mark.hearth_only(reason="the api port is served by Hearth, not by the Firestore emulator")

ULID = re.compile(r"^[0-7][0-9A-HJKMNP-TV-Z]{25}$")
LIMIT = 4096


FILES_RULES = """rules_version = '2';
service cloud.firestore {
  match /databases/{database}/documents {
    match /files/{fileId} {
      allow read: if request.auth != null && resource.data.ownerUid == request.auth.uid;
      allow write: if false;
    }
  }
}
"""


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    rules = tmp_path_factory.mktemp("api-files-rules") / "firestore.rules"
    rules.write_text(FILES_RULES)  # the rules docs/app-backend.md tells apps to ship
    s = start_api_server(tmp_path_factory, "api-files", {"maxUploadBytes": LIMIT, "bucket": "app-uploads"},
                         extra_args=("--firestore-rules", str(rules)))
    yield s
    s.stop()


@pytest.fixture(scope="module")
def alice(srv):
    return ApiUser(srv)


@pytest.fixture(scope="module")
def bob(srv):
    return ApiUser(srv)


def detail(r, status: int) -> str:
    assert r.status_code == status, f"{r.status_code} {r.text}"
    assert r.headers["Content-Type"].startswith("application/json")
    return r.json()["detail"]


def test_health_readiness_and_openapi(srv):
    assert requests.get(f"{srv.api_base}/healthz", timeout=10).json() == {"status": "ok"}
    r = requests.get(f"{srv.api_base}/readyz", timeout=10)
    assert r.status_code == 200 and r.json() == {"status": "ready"}
    spec = requests.get(f"{srv.api_base}/openapi.json", timeout=10).json()
    validate(spec)  # raises on an invalid OpenAPI document
    assert spec["openapi"].startswith("3.1")
    for path in ("/v1/files/presign-upload", "/v1/files/{fileId}/complete", "/v1/files/{fileId}/presign-download", "/v1/files",
                 "/v1/files/{fileId}", "/healthz", "/readyz"):
        assert path in spec["paths"], path
    assert detail(requests.get(f"{srv.api_base}/nope", timeout=10), 404) == "Not Found"
    assert detail(requests.get(f"{srv.api_base}/v1/files/presign-upload", timeout=10), 405) == "Method Not Allowed"


def test_reference_flow_put(srv, alice):
    p = alice.presign("image/jpeg", "jpg")
    assert ULID.match(p["fileId"])
    assert p["bucket"] == "app-uploads"
    assert p["key"] == f"users/{alice.uid}/uploads/{p['fileId']}.jpg"
    assert p["upload"]["method"] == "PUT"
    assert p["upload"]["headers"] == {"Content-Type": "image/jpeg"}
    assert p["upload"]["expiresInSeconds"] == 300
    assert f":{srv.ports['s3']}/" in p["upload"]["url"] and "X-Amz-Signature=" in p["upload"]["url"]

    doc = admin_document(srv, p["fileId"]).json()["fields"]
    assert doc["status"] == {"stringValue": "pending"}
    assert doc["ownerUid"] == {"stringValue": alice.uid}
    assert "timestampValue" in doc["createdAt"] and "timestampValue" in doc["updatedAt"]
    assert "sizeBytes" not in doc

    r = alice.upload(p, JPEG)
    assert r.status_code == 200, r.text
    c = alice.complete(p["fileId"])
    assert c.status_code == 200, c.text
    assert c.json() == {"fileId": p["fileId"], "status": "ready", "sizeBytes": len(JPEG)}

    doc = admin_document(srv, p["fileId"]).json()["fields"]
    assert doc["status"] == {"stringValue": "ready"}
    assert doc["sizeBytes"] == {"integerValue": str(len(JPEG))}
    assert doc["key"] == {"stringValue": p["key"]} and doc["bucket"] == {"stringValue": "app-uploads"}
    assert doc["contentType"] == {"stringValue": "image/jpeg"}
    assert doc["updatedAt"]["timestampValue"] > doc["createdAt"]["timestampValue"]

    d = alice.call("POST", f"/v1/files/{p['fileId']}/presign-download")
    assert d.status_code == 200, d.text
    download = d.json()["download"]
    assert download["method"] == "GET" and download["expiresInSeconds"] == 300
    got = requests.get(download["url"], timeout=30)
    assert got.status_code == 200 and got.content == JPEG

    listed = alice.call("GET", "/v1/files").json()
    mine = [f for f in listed["files"] if f["fileId"] == p["fileId"]]
    assert mine and mine[0]["status"] == "ready" and mine[0]["sizeBytes"] == len(JPEG) and mine[0]["key"] == p["key"]

    # A replayed complete answers the same and changes nothing.
    again = alice.complete(p["fileId"])
    assert again.status_code == 200 and again.json() == c.json()


def test_presigned_put_cannot_be_redirected_or_retyped(srv, alice):
    p = alice.presign("image/jpeg", "jpg")
    # Another key with the same signature, or another content type: S3 refuses (SigV4).
    other = p["upload"]["url"].replace(f"{p['fileId']}.jpg", "evil.jpg")
    assert requests.put(other, data=JPEG, headers=p["upload"]["headers"], timeout=30).status_code == 403
    assert alice.upload(p, JPEG, content_type="text/html").status_code == 403
    assert detail(alice.complete(p["fileId"]), 409)


def test_missing_and_invalid_credentials(srv, alice):
    base = srv.api_base
    for headers in ({}, {"Authorization": ""}, {"Authorization": "Basic dXNlcjpwYXNz"}, {"Authorization": "Bearer "}):
        r = requests.post(f"{base}/v1/files/presign-upload", json={"contentType": "image/jpeg", "fileExtension": "jpg"},
                          headers=headers, timeout=10)
        assert detail(r, 401) == "Missing bearer token"
    claims = jwt.decode(alice.token, options={"verify_signature": False})
    from cryptography.hazmat.primitives.asymmetric import rsa
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    forged = jwt.encode(claims, stranger, algorithm="RS256", headers={"kid": jwt.get_unverified_header(alice.token)["kid"]})
    unsigned = jwt.encode(claims, None, algorithm="none")
    tampered = alice.token[:-4] + ("AAAA" if not alice.token.endswith("AAAA") else "BBBB")
    for token in (forged, unsigned, tampered, "not-a-jwt", "api-test-admin-token"):
        for method, path in (("POST", "/v1/files/presign-upload"), ("GET", "/v1/files"), ("POST", "/v1/files/01ARYZ6S410000000000000000/complete")):
            r = requests.request(method, base + path, json={"contentType": "image/jpeg", "fileExtension": "jpg"},
                                 headers={"Authorization": f"Bearer {token}"}, timeout=10)
            assert detail(r, 401) == "Invalid or expired Firebase ID token", (token[:20], path)


@pytest.mark.parametrize("body, loc, kind", [
    ({"fileExtension": "jpg"}, ["body", "contentType"], "missing"),
    ({"contentType": "image/jpeg"}, ["body", "fileExtension"], "missing"),
    ({"contentType": 5, "fileExtension": "jpg"}, ["body", "contentType"], "string_type"),
    ({"contentType": "image/jpeg", "fileExtension": "jpg", "sizeBytes": "big"}, ["body", "sizeBytes"], "int_type"),
])
def test_presign_body_validation(alice, body, loc, kind):
    problems = detail(alice.call("POST", "/v1/files/presign-upload", json=body), 422)
    assert isinstance(problems, list) and problems[0]["loc"] == loc and problems[0]["type"] == kind


def test_presign_malformed_json(alice):
    for raw in (b"{", b"", b"[1,2]", b'"x"', b"\xff\xfe"):
        problems = detail(alice.call("POST", "/v1/files/presign-upload", data=raw, headers={"Content-Type": "application/json"}), 422)
        assert isinstance(problems, list) and problems[0]["loc"][0] == "body"


@pytest.mark.parametrize("content_type, ext, size, message", [
    ("application/x-msdownload", "exe", None, "not allowed"),
    ("text/html", "html", None, "not allowed"),
    ("image/jpeg", "../x", None, "letters or digits"),
    ("image/jpeg", "a/b", None, "letters or digits"),
    ("image/jpeg", "jp\x00g", None, "letters or digits"),
    ("image/jpeg", "", None, "letters or digits"),
    ("image/jpeg", "png", None, "does not match"),
    ("image/jpeg", "jpg", LIMIT + 1, "larger than the limit"),
    ("image/jpeg", "jpg", -1, "negative"),
])
def test_presign_bad_input(srv, alice, content_type, ext, size, message):
    before = len(alice.call("GET", "/v1/files?pageSize=100").json()["files"])
    body = {"contentType": content_type, "fileExtension": ext}
    if size is not None:
        body["sizeBytes"] = size
    assert message in detail(alice.call("POST", "/v1/files/presign-upload", json=body), 422)
    assert len(alice.call("GET", "/v1/files?pageSize=100").json()["files"]) == before  # nothing recorded


def test_complete_before_upload_stays_pending(srv, alice):
    p = alice.presign()
    assert "not found" in detail(alice.complete(p["fileId"]), 409)
    assert admin_document(srv, p["fileId"]).json()["fields"]["status"] == {"stringValue": "pending"}
    assert "not ready" in detail(alice.call("POST", f"/v1/files/{p['fileId']}/presign-download"), 409)
    # Uploading afterwards still works.
    assert alice.upload(p, JPEG).status_code == 200
    assert alice.complete(p["fileId"]).json()["status"] == "ready"


def test_oversize_upload_is_deleted_and_failed(srv, alice):
    p = alice.presign()
    data = JPEG + bytes(LIMIT)
    assert alice.upload(p, data).status_code == 200
    assert admin_object(srv, p["bucket"], p["key"]).status_code == 200
    assert "larger than the limit" in detail(alice.complete(p["fileId"]), 422)
    fields = admin_document(srv, p["fileId"]).json()["fields"]
    assert fields["status"] == {"stringValue": "failed"}
    assert admin_object(srv, p["bucket"], p["key"]).status_code == 404
    # A replay does not revive it.
    assert "failed" in detail(alice.complete(p["fileId"]), 409)
    assert "not ready" in detail(alice.call("POST", f"/v1/files/{p['fileId']}/presign-download"), 409)


@pytest.mark.parametrize("content_type, ext, data", [
    ("image/png", "png", b"hello, not a png"),
    ("image/jpeg", "jpg", PNG),
    ("application/pdf", "pdf", b"<html></html>"),
    ("image/jpeg", "jpg", b""),
])
def test_content_not_matching_declared_type_is_refused(srv, alice, content_type, ext, data):
    p = alice.presign(content_type, ext)
    assert alice.upload(p, data).status_code == 200
    assert "does not match" in detail(alice.complete(p["fileId"]), 422)
    assert admin_document(srv, p["fileId"]).json()["fields"]["status"] == {"stringValue": "failed"}
    assert admin_object(srv, p["bucket"], p["key"]).status_code == 404


def test_concurrent_completes_agree(srv, alice):
    p = alice.presign("image/png", "png")
    assert alice.upload(p, PNG).status_code == 200
    results = []

    def go():
        r = alice.complete(p["fileId"])
        results.append((r.status_code, r.json()))

    threads = [threading.Thread(target=go) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [s for s, _ in results] == [200] * 8
    assert all(body == {"fileId": p["fileId"], "status": "ready", "sizeBytes": len(PNG)} for _, body in results)


def test_concurrent_completes_of_a_bad_upload_leave_it_failed(srv, alice):
    p = alice.presign("image/png", "png")
    assert alice.upload(p, b"not a png at all").status_code == 200
    statuses = []
    threads = [threading.Thread(target=lambda: statuses.append(alice.complete(p["fileId"]).status_code)) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert set(statuses) <= {409, 422} and 422 in statuses
    assert admin_document(srv, p["fileId"]).json()["fields"]["status"] == {"stringValue": "failed"}


def test_other_users_and_unknown_files(srv, alice, bob):
    p = alice.upload_ready()
    fid = p["fileId"]
    assert detail(bob.complete(fid), 403) == "Not your file"
    assert detail(bob.call("POST", f"/v1/files/{fid}/presign-download"), 403) == "Not your file"
    assert detail(bob.call("DELETE", f"/v1/files/{fid}"), 403) == "Not your file"
    assert all(f["fileId"] != fid for f in bob.call("GET", "/v1/files").json()["files"])
    for unknown in ("01ARYZ6S410000000000000000", "nope", "01arYZ6S410000000000000000", "8ZZZZZZZZZZZZZZZZZZZZZZZZZ"):
        assert detail(alice.complete(unknown), 404) == "File not found", unknown
        assert detail(alice.call("POST", f"/v1/files/{unknown}/presign-download"), 404) == "File not found"
        assert detail(alice.call("DELETE", f"/v1/files/{unknown}"), 404) == "File not found"
    # Still alice's and still ready.
    assert alice.call("POST", f"/v1/files/{fid}/presign-download").status_code == 200


def test_delete_removes_object_and_record(srv, alice):
    p = alice.upload_ready()
    assert admin_object(srv, p["bucket"], p["key"]).status_code == 200
    r = alice.call("DELETE", f"/v1/files/{p['fileId']}")
    assert r.status_code == 204 and r.content == b""
    assert admin_object(srv, p["bucket"], p["key"]).status_code == 404
    assert admin_document(srv, p["fileId"]).status_code == 404
    assert detail(alice.call("POST", f"/v1/files/{p['fileId']}/presign-download"), 404) == "File not found"
    assert detail(alice.call("DELETE", f"/v1/files/{p['fileId']}"), 404) == "File not found"


def test_list_is_newest_first_and_paginated(srv):
    carol = ApiUser(srv)
    ids = [carol.presign()["fileId"] for _ in range(5)]
    seen, token, pages = [], None, 0
    while True:
        r = carol.call("GET", "/v1/files", params={"pageSize": 2, **({"pageToken": token} if token else {})})
        assert r.status_code == 200, r.text
        body = r.json()
        assert len(body["files"]) <= 2
        seen += [f["fileId"] for f in body["files"]]
        pages += 1
        token = body["nextPageToken"]
        if token is None:
            break
    assert seen == list(reversed(ids)) and pages == 3
    assert all(f["status"] == "pending" and f["sizeBytes"] is None for f in carol.call("GET", "/v1/files").json()["files"])
    assert detail(carol.call("GET", "/v1/files", params={"pageToken": "garbage!"}), 400) == "Invalid pageToken"
    for size in ("0", "101", "x"):
        problems = detail(carol.call("GET", "/v1/files", params={"pageSize": size}), 422)
        assert problems[0]["loc"] == ["query", "pageSize"]


@pytest.fixture(scope="module")
def strict(tmp_path_factory):
    s = start_api_server(tmp_path_factory, "api-strict", {"strictUploads": True, "maxUploadBytes": LIMIT, "presignExpiresSeconds": 120})
    yield s
    s.stop()


def test_reference_flow_presigned_post(strict):
    user = ApiUser(strict)
    p = user.presign("image/png", "png")
    up = p["upload"]
    assert up["method"] == "POST" and up["expiresInSeconds"] == 120
    assert up["fields"]["key"] == p["key"] == f"users/{user.uid}/uploads/{p['fileId']}.png"
    assert up["fields"]["Content-Type"] == "image/png" and "policy" in up["fields"] and "x-amz-signature" in up["fields"]
    r = user.upload(p, PNG)
    assert r.status_code == 204, r.text
    c = user.complete(p["fileId"])
    assert c.status_code == 200 and c.json() == {"fileId": p["fileId"], "status": "ready", "sizeBytes": len(PNG)}
    d = user.call("POST", f"/v1/files/{p['fileId']}/presign-download").json()["download"]
    assert requests.get(d["url"], timeout=30).content == PNG


def test_presigned_post_enforces_the_limits(strict):
    user = ApiUser(strict)
    p = user.presign("image/png", "png")
    too_big = user.upload(p, PNG + bytes(LIMIT))
    assert too_big.status_code == 400 and "EntityTooLarge" in too_big.text
    fields = dict(p["upload"]["fields"], key=p["key"].replace(p["fileId"], "01ARYZ6S410000000000000000"))
    moved = requests.post(p["upload"]["url"], data=fields, files={"file": ("f", PNG, "image/png")}, timeout=30)
    assert moved.status_code == 403
    fields = dict(p["upload"]["fields"], **{"Content-Type": "text/html"})
    retyped = requests.post(p["upload"]["url"], data=fields, files={"file": ("f", PNG, "text/html")}, timeout=30)
    assert retyped.status_code == 403
    assert "not found" in detail(user.complete(p["fileId"]), 409)


def test_unfinished_uploads_expire(tmp_path_factory):
    s = start_api_server(tmp_path_factory, "api-expiry", {"pendingTimeoutSeconds": 2, "sweepIntervalSeconds": 1})
    try:
        user = ApiUser(s)
        p = user.presign()
        assert user.upload(p, JPEG).status_code == 200  # uploaded but never completed
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            fields = admin_document(s, p["fileId"]).json()["fields"]
            if fields["status"]["stringValue"] == "failed":
                break
            time.sleep(0.5)
        assert fields["status"] == {"stringValue": "failed"}
        assert "not completed" in fields["failureReason"]["stringValue"]
        assert admin_object(s, p["bucket"], p["key"]).status_code == 404
        assert "failed" in detail(user.complete(p["fileId"]), 409)
    finally:
        s.stop()


def test_overwrite_after_complete_is_caught(srv, alice):
    p = alice.presign("image/jpeg", "jpg")
    assert alice.upload(p, JPEG).status_code == 200
    assert alice.complete(p["fileId"]).status_code == 200
    # The presigned PUT is still valid: unchecked bytes replace the checked ones.
    assert alice.upload(p, b"<script>not a jpeg</script>").status_code == 200
    assert "changed after the upload" in detail(alice.call("POST", f"/v1/files/{p['fileId']}/presign-download"), 409)
    fields = admin_document(srv, p["fileId"]).json()["fields"]
    assert fields["status"] == {"stringValue": "failed"}
    assert admin_object(srv, p["bucket"], p["key"]).status_code == 404


def test_clients_read_their_records_through_firestore(srv, alice, bob):
    p = alice.upload_ready()
    docs = f"{srv.rest_base}/v1/projects/demo-hearth/databases/(default)/documents"
    mine = requests.get(f"{docs}/files/{p['fileId']}", headers={"Authorization": f"Bearer {alice.token}"}, timeout=30)
    assert mine.status_code == 200 and mine.json()["fields"]["status"] == {"stringValue": "ready"}
    assert requests.get(f"{docs}/files/{p['fileId']}", headers={"Authorization": f"Bearer {bob.token}"}, timeout=30).status_code == 403
    query = {"structuredQuery": {"from": [{"collectionId": "files"}],
                                 "where": {"fieldFilter": {"field": {"fieldPath": "ownerUid"}, "op": "EQUAL", "value": {"stringValue": alice.uid}}}}}
    rows = requests.post(f"{docs}:runQuery", json=query, headers={"Authorization": f"Bearer {alice.token}"}, timeout=30).json()
    names = {r["document"]["name"].rsplit("/", 1)[1] for r in rows if "document" in r}
    assert p["fileId"] in names
    # Nobody writes the registry but the server.
    patch = requests.patch(f"{docs}/files/{p['fileId']}", json={"fields": {"status": {"stringValue": "ready"}, "ownerUid": {"stringValue": alice.uid}}},
                           headers={"Authorization": f"Bearer {alice.token}"}, timeout=30)
    assert patch.status_code == 403
    assert requests.delete(f"{docs}/files/{p['fileId']}", headers={"Authorization": f"Bearer {alice.token}"}, timeout=30).status_code == 403


def test_default_rules_let_owners_read_their_records(strict):
    """Production mode without a rules file: Hearth's default rules — the owner may read a
    files/{fileId} record, nobody may write one, everything else stays denied."""
    owner, other = ApiUser(strict), ApiUser(strict)
    p = owner.presign("image/png", "png")
    docs = f"{strict.rest_base}/v1/projects/demo-hearth/databases/(default)/documents"
    mine = requests.get(f"{docs}/files/{p['fileId']}", headers={"Authorization": f"Bearer {owner.token}"}, timeout=30)
    assert mine.status_code == 200 and mine.json()["fields"]["status"] == {"stringValue": "pending"}
    assert requests.get(f"{docs}/files/{p['fileId']}", headers={"Authorization": f"Bearer {other.token}"}, timeout=30).status_code == 403
    assert requests.get(f"{docs}/files/{p['fileId']}", timeout=30).status_code == 403
    query = {"structuredQuery": {"from": [{"collectionId": "files"}],
                                 "where": {"fieldFilter": {"field": {"fieldPath": "ownerUid"}, "op": "EQUAL", "value": {"stringValue": owner.uid}}}}}
    rows = requests.post(f"{docs}:runQuery", json=query, headers={"Authorization": f"Bearer {owner.token}"}, timeout=30)
    assert rows.status_code == 200 and any(p["fileId"] in r.get("document", {}).get("name", "") for r in rows.json())
    assert requests.post(f"{docs}:runQuery", json={"structuredQuery": {"from": [{"collectionId": "files"}]}},
                         headers={"Authorization": f"Bearer {owner.token}"}, timeout=30).status_code == 403
    patch = requests.patch(f"{docs}/files/{p['fileId']}", json={"fields": {"status": {"stringValue": "ready"}}},
                           headers={"Authorization": f"Bearer {owner.token}"}, timeout=30)
    assert patch.status_code == 403
    assert requests.get(f"{docs}/other/x", headers={"Authorization": f"Bearer {owner.token}"}, timeout=30).status_code == 403


@pytest.mark.parametrize("config, message", [
    ({"maxUploadBytes": -1}, "maxUploadBytes"),
    ({"surprise": True}, "unknown setting surprise"),
    ({"contentTypes": {"image/png": []}}, "contentTypes"),
    ({"appCheck": {"enforcement": {"api": "sometimes"}}}, "off, monitor or enforce"),
    ({"s3PublicURL": "ftp://x"}, "s3PublicURL"),
])
def test_bad_api_config_stops_the_server(tmp_path, config, message):
    import json
    import subprocess
    from authutil import hearth_binary
    path = tmp_path / "api.json"
    path.write_text(json.dumps(config))
    r = subprocess.run([hearth_binary(), "serve", "--data-dir", str(tmp_path / "data"), "--api-config", str(path), "--api-port", "0",
                        "--firestore-port", "0", "--auth-port", "0", "--storage-port", "0", "--s3-port", "0", "--database-port", "0",
                        "--console-port", "0"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and message in r.stderr, r.stderr
