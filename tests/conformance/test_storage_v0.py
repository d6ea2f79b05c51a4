"""Firebase Storage's v0 REST API as the Firebase SDKs send it, against a live `hearth serve`.

Raw HTTP, shaped like the iOS SDK's requests (object path as one percent-encoded segment,
`Authorization: Firebase <ID token>`, GTM's resumable headers) and the JS SDK's header
variants. Storage rules are loaded through the Storage emulator's `PUT /internal/setRules`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import socket
import time
import urllib.parse
import uuid

import pytest
import requests

from rawhttp import read_response

pytestmark = pytest.mark.hearth_only("Firebase Storage is served by Hearth; Google's Firestore emulator has no storage port")

BUCKET = "demo-hearth.appspot.com"
OWNER = {"Authorization": "Bearer owner"}
TIMEOUT = 60


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def b64crc(data: bytes) -> str:
    return base64.b64encode(crc32c(data).to_bytes(4, "big")).decode()


def token(uid: str) -> str:
    def b64(obj) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()
    now = int(time.time())
    return b64({"alg": "none", "typ": "JWT"}) + "." + b64(
        {"sub": uid, "user_id": uid, "iat": now, "exp": now + 3600, "auth_time": now,
         "firebase": {"sign_in_provider": "password", "identities": {}}}) + "."


def as_user(uid: str) -> dict:
    return {"Authorization": "Firebase " + token(uid)}


@pytest.fixture
def base(server):
    """Read per test: test_resumable_upload_survives_a_crash_of_the_server restarts the server on new ports."""
    if getattr(server, "kind", "") != "hearth":
        pytest.skip("storage is a Hearth service")
    return server.storage_base


def obj_url(base: str, name: str, bucket: str = BUCKET) -> str:
    return f"{base}/v0/b/{bucket}/o/{urllib.parse.quote(name, safe='')}"


def upload_media(base, name, data, content_type="application/octet-stream", headers=None, bucket=BUCKET):
    return requests.post(f"{base}/v0/b/{bucket}/o", params={"name": name}, data=data,
                         headers={"Content-Type": content_type, **(headers or OWNER)}, timeout=TIMEOUT)


def unique(prefix="t") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def test_root_and_media_upload_metadata_and_download(base):
    name = f"{unique()}/avatar.png"
    data = os.urandom(70_000)
    r = upload_media(base, name, data, "image/png")
    assert r.status_code == 200, r.text
    meta = r.json()
    assert meta["name"] == name and meta["bucket"] == BUCKET
    assert meta["size"] == str(len(data)) and meta["contentType"] == "image/png"
    assert meta["md5Hash"] == base64.b64encode(hashlib.md5(data).digest()).decode()
    assert meta["crc32c"] == b64crc(data)
    assert meta["downloadTokens"] and meta["generation"].isdigit() and meta["metageneration"] == "1"
    assert meta["timeCreated"].endswith("Z") and meta["storageClass"] == "STANDARD"
    got = requests.get(obj_url(base, name), headers=OWNER, timeout=TIMEOUT)
    assert got.status_code == 200 and got.json()["md5Hash"] == meta["md5Hash"]
    media = requests.get(obj_url(base, name), params={"alt": "media"}, headers=OWNER, timeout=TIMEOUT)
    assert media.status_code == 200 and media.content == data
    assert media.headers["Content-Type"] == "image/png"
    assert f"crc32c={meta['crc32c']}" in media.headers["x-goog-hash"]
    # The download URL the SDK builds: the token alone authorises the read.
    by_token = requests.get(obj_url(base, name), params={"alt": "media", "token": meta["downloadTokens"].split(",")[0]},
                            timeout=TIMEOUT)
    assert by_token.status_code == 200 and by_token.content == data


def test_ranges(base):
    name = unique("range")
    data = bytes(range(256)) * 40
    assert upload_media(base, name, data).status_code == 200
    r = requests.get(obj_url(base, name), params={"alt": "media"}, headers={**OWNER, "Range": "bytes=2-5"}, timeout=TIMEOUT)
    assert r.status_code == 206 and r.content == data[2:6]
    assert r.headers["Content-Range"] == f"bytes 2-5/{len(data)}"
    r = requests.get(obj_url(base, name), params={"alt": "media"}, headers={**OWNER, "Range": "bytes=-10"}, timeout=TIMEOUT)
    assert r.status_code == 206 and r.content == data[-10:]
    r = requests.get(obj_url(base, name), params={"alt": "media"}, headers={**OWNER, "Range": "bytes=99999-"}, timeout=TIMEOUT)
    assert r.status_code == 416


def test_multipart_upload_with_metadata(base):
    name = f"{unique()}/doc.txt"
    boundary = "hearth-boundary-123"
    meta = {"name": name, "contentType": "text/plain", "cacheControl": "max-age=60", "metadata": {"owner": "alice"}}
    data = b"hello multipart\r\n--not-the-boundary\r\n" * 100
    body = (f"--{boundary}\r\nContent-Type: application/json; charset=utf-8\r\n\r\n{json.dumps(meta)}\r\n"
            f"--{boundary}\r\nContent-Type: text/plain\r\n\r\n").encode() + data + f"\r\n--{boundary}--\r\n".encode()
    r = requests.post(f"{base}/v0/b/{BUCKET}/o", params={"name": name}, data=body,
                      headers={**OWNER, "X-Goog-Upload-Protocol": "multipart",
                               "Content-Type": f"multipart/related; boundary={boundary}"}, timeout=TIMEOUT)
    assert r.status_code == 200, r.text
    m = r.json()
    assert m["contentType"] == "text/plain" and m["cacheControl"] == "max-age=60" and m["metadata"] == {"owner": "alice"}
    assert m["size"] == str(len(data))
    media = requests.get(obj_url(base, name), params={"alt": "media"}, headers=OWNER, timeout=TIMEOUT)
    assert media.content == data


@pytest.mark.parametrize("variant", ["ios", "js"])
def test_resumable_upload_interrupted_and_resumed(base, variant):
    name = f"{unique()}/video.mp4"
    data = os.urandom(600_000)
    size_header = "X-Goog-Upload-Content-Length" if variant == "ios" else "X-Goog-Upload-Header-Content-Length"
    type_header = "X-Goog-Upload-Content-Type" if variant == "ios" else "X-Goog-Upload-Header-Content-Type"
    start = requests.post(f"{base}/v0/b/{BUCKET}/o", params={"name": name, "uploadType": "resumable"},
                          json={"name": name, "contentType": "video/mp4"},
                          headers={**OWNER, "X-Goog-Upload-Protocol": "resumable", "X-Goog-Upload-Command": "start",
                                   size_header: str(len(data)), type_header: "video/mp4"}, timeout=TIMEOUT)
    assert start.status_code == 200, start.text
    assert start.headers["X-Goog-Upload-Status"] == "active"
    url = start.headers["X-Goog-Upload-URL"]
    first = requests.put(url, data=data[:262144], headers={**OWNER, "X-Goog-Upload-Command": "upload",
                                                           "X-Goog-Upload-Offset": "0"}, timeout=TIMEOUT)
    assert first.status_code == 200 and first.headers["X-Goog-Upload-Status"] == "active"
    # The client lost the answer and asks where to resume; then resends from an earlier offset.
    q = requests.post(url, headers={**OWNER, "X-Goog-Upload-Command": "query"}, timeout=TIMEOUT)
    assert q.headers["X-Goog-Upload-Size-Received"] == "262144"
    again = requests.put(url, data=data[131072:], headers={**OWNER, "X-Goog-Upload-Command": "upload, finalize",
                                                           "X-Goog-Upload-Offset": "131072"}, timeout=TIMEOUT)
    assert again.status_code == 200, again.text
    assert again.headers["X-Goog-Upload-Status"] == "final"
    assert again.json()["size"] == str(len(data)) and again.json()["contentType"] == "video/mp4"
    media = requests.get(obj_url(base, name), params={"alt": "media"}, headers=OWNER, timeout=TIMEOUT)
    assert media.content == data
    # A repeated finalize answers the same object; cancel after finalize is refused.
    rep = requests.post(url, headers={**OWNER, "X-Goog-Upload-Command": "finalize"}, timeout=TIMEOUT)
    assert rep.status_code == 200 and rep.json()["md5Hash"] == again.json()["md5Hash"]
    assert requests.post(url, headers={**OWNER, "X-Goog-Upload-Command": "cancel"}, timeout=TIMEOUT).status_code == 400


def test_resumable_upload_survives_a_crash_of_the_server(server, base, restart_server):
    """A session and the chunks it took live in the metadata store, not in the process: after a
    SIGKILL and a restart (every replica, in replicas mode) the client asks where to resume and
    finishes; the object has every byte."""
    name = f"{unique()}/crash.bin"
    data = os.urandom(700_000)
    start = requests.post(f"{base}/v0/b/{BUCKET}/o", params={"name": name},
                          json={"name": name, "contentType": "application/x-test", "metadata": {"k": "v"}},
                          headers={**OWNER, "X-Goog-Upload-Protocol": "resumable", "X-Goog-Upload-Command": "start",
                                   "X-Goog-Upload-Content-Length": str(len(data))}, timeout=TIMEOUT)
    assert start.status_code == 200, start.text
    upload_id = start.headers["X-GUploader-UploadID"]
    first = requests.put(start.headers["X-Goog-Upload-URL"], data=data[:262144],
                         headers={**OWNER, "X-Goog-Upload-Command": "upload", "X-Goog-Upload-Offset": "0"}, timeout=TIMEOUT)
    assert first.status_code == 200 and first.headers["X-Goog-Upload-Size-Received"] == "262144"
    restart_server()
    url = f"{server.storage_base}/v0/b/{BUCKET}/o?name={urllib.parse.quote(name, safe='')}&upload_id={upload_id}&upload_protocol=resumable"
    q = requests.post(url, headers={**OWNER, "X-Goog-Upload-Command": "query"}, timeout=TIMEOUT)
    assert q.status_code == 200 and q.headers["X-Goog-Upload-Size-Received"] == "262144", q.text
    done = requests.put(url, data=data[262144:], headers={**OWNER, "X-Goog-Upload-Command": "upload, finalize",
                                                           "X-Goog-Upload-Offset": "262144"}, timeout=TIMEOUT)
    assert done.status_code == 200, done.text
    assert done.json()["size"] == str(len(data)) and done.json()["metadata"] == {"k": "v"}
    assert done.json()["contentType"] == "application/x-test"
    media = requests.get(obj_url(server.storage_base, name), params={"alt": "media"}, headers=OWNER, timeout=TIMEOUT)
    assert media.content == data


def test_resumable_cancel_and_unknown_sessions(base):
    name = unique("cancel")
    start = requests.post(f"{base}/v0/b/{BUCKET}/o", params={"name": name},
                          headers={**OWNER, "X-Goog-Upload-Protocol": "resumable", "X-Goog-Upload-Command": "start"},
                          json={}, timeout=TIMEOUT)
    url = start.headers["X-Goog-Upload-URL"]
    requests.put(url, data=b"abc", headers={**OWNER, "X-Goog-Upload-Command": "upload", "X-Goog-Upload-Offset": "0"},
                 timeout=TIMEOUT)
    assert requests.post(url, headers={**OWNER, "X-Goog-Upload-Command": "cancel"}, timeout=TIMEOUT).status_code == 200
    assert requests.get(obj_url(base, name), headers=OWNER, timeout=TIMEOUT).status_code == 404
    bad = requests.put(f"{base}/v0/b/{BUCKET}/o?name=x&upload_id=nope&upload_protocol=resumable",
                       headers={**OWNER, "X-Goog-Upload-Command": "upload", "X-Goog-Upload-Offset": "0"}, data=b"x",
                       timeout=TIMEOUT)
    assert bad.status_code == 404 and bad.json()["error"]["code"] == 404


def test_metadata_update_and_delete(base):
    name = unique("meta")
    assert upload_media(base, name, b"x", "text/plain").status_code == 200
    r = requests.patch(obj_url(base, name), json={"contentType": "text/csv", "metadata": {"a": "1", "b": "2"}},
                       headers=OWNER, timeout=TIMEOUT)
    assert r.status_code == 200 and r.json()["contentType"] == "text/csv" and r.json()["metageneration"] == "2"
    r = requests.patch(obj_url(base, name), json={"metadata": {"a": None}, "cacheControl": "no-cache"}, headers=OWNER,
                       timeout=TIMEOUT)
    assert r.json()["metadata"] == {"b": "2"} and r.json()["cacheControl"] == "no-cache"
    assert requests.delete(obj_url(base, name), headers=OWNER, timeout=TIMEOUT).status_code == 204
    assert requests.get(obj_url(base, name), headers=OWNER, timeout=TIMEOUT).status_code == 404
    assert requests.delete(obj_url(base, name), headers=OWNER, timeout=TIMEOUT).status_code == 404


def test_list_with_prefixes_and_pages(base):
    root = unique("list")
    names = [f"{root}/a{i:02d}.txt" for i in range(25)] + [f"{root}/sub{i}/x.txt" for i in range(5)]
    for n in names:
        assert upload_media(base, n, b"1").status_code == 200
    items, prefixes, token_ = [], [], None
    pages = 0
    while True:
        params = {"prefix": f"{root}/", "delimiter": "/", "maxResults": "7"}
        if token_:
            params["pageToken"] = token_
        r = requests.get(f"{base}/v0/b/{BUCKET}/o", params=params, headers=OWNER, timeout=TIMEOUT)
        assert r.status_code == 200, r.text
        body = r.json()
        assert len(body["items"]) + len(body["prefixes"]) <= 7
        items += [i["name"] for i in body["items"]]
        prefixes += body["prefixes"]
        pages += 1
        token_ = body.get("nextPageToken")
        if not token_:
            break
    assert items == sorted(n for n in names if "/sub" not in n)
    assert prefixes == [f"{root}/sub{i}/" for i in range(5)]
    assert pages == 5


@pytest.mark.parametrize("name", ["a\x00b", "../../etc/passwd", "a/./b", "x" * 1025])
def test_bad_names_are_refused_and_store_nothing(base, name):
    r = upload_media(base, name, b"evil")
    assert r.status_code == 400 and r.json()["error"]["code"] == 400
    listing = requests.get(f"{base}/v0/b/{BUCKET}/o", params={"prefix": name[:3]}, headers=OWNER, timeout=TIMEOUT)
    assert all(i["name"] != name for i in listing.json().get("items", []))


def test_malformed_multipart_is_400_and_stores_nothing(base):
    name = unique("badmp")
    r = requests.post(f"{base}/v0/b/{BUCKET}/o", params={"name": name},
                      data=b"--b\r\nContent-Type: application/json\r\n\r\n{}\r\n--b\r\n\r\nbytes-without-end",
                      headers={**OWNER, "X-Goog-Upload-Protocol": "multipart",
                               "Content-Type": "multipart/related; boundary=b"}, timeout=TIMEOUT)
    assert r.status_code == 400
    assert requests.get(obj_url(base, name), headers=OWNER, timeout=TIMEOUT).status_code == 404


STORAGE_RULES = """rules_version = '2';
service firebase.storage {
  match /b/{bucket}/o {
    match /users/{uid}/{file} {
      allow read: if request.auth != null && request.auth.uid == uid;
      allow create: if request.auth != null && request.auth.uid == uid
                    && request.resource.size < 1000 && request.resource.contentType.matches('image/.*');
      allow delete: if request.auth.uid == uid;
      allow update: if request.auth.uid == uid && request.resource.metadata.keys().hasOnly(['caption']);
    }
    match /public/{file=**} {
      allow read;
      allow list;
    }
  }
}
"""


@pytest.fixture
def storage_rules(base):
    r = requests.put(f"{base}/internal/setRules",
                     json={"rules": {"files": [{"name": "storage.rules", "content": STORAGE_RULES}]}}, timeout=TIMEOUT)
    assert r.status_code == 200, r.text
    yield
    assert requests.post(f"{base}/internal/reset", timeout=TIMEOUT).status_code == 200


def test_storage_rules_for_several_users(base, storage_rules):
    def up(uid, path, data=b"\x89PNG", ctype="image/png"):
        return upload_media(base, path, data, ctype, headers=as_user(uid)).status_code
    assert up("alice", "users/alice/a.png") == 200
    assert up("bob", "users/alice/b.png") == 403
    assert up("alice", "users/alice/big.png", b"x" * 2000) == 403
    assert up("alice", "users/alice/a.txt", b"x", "text/plain") == 403
    for denied in ("users/alice/b.png", "users/alice/big.png", "users/alice/a.txt"):
        assert requests.get(obj_url(base, denied), headers=OWNER, timeout=TIMEOUT).status_code == 404
    assert requests.get(obj_url(base, "users/alice/a.png"), headers=as_user("alice"), timeout=TIMEOUT).status_code == 200
    assert requests.get(obj_url(base, "users/alice/a.png"), headers=as_user("bob"), timeout=TIMEOUT).status_code == 403
    assert requests.get(obj_url(base, "users/alice/a.png"), timeout=TIMEOUT).status_code == 403
    # The download token still works for anyone who has the URL, as Firebase's do.
    meta = requests.get(obj_url(base, "users/alice/a.png"), headers=OWNER, timeout=TIMEOUT).json()
    tok = meta["downloadTokens"].split(",")[0]
    assert requests.get(obj_url(base, "users/alice/a.png"), params={"alt": "media", "token": tok},
                        timeout=TIMEOUT).status_code == 200
    assert requests.get(obj_url(base, "users/alice/a.png"), params={"alt": "media", "token": "forged"},
                        timeout=TIMEOUT).status_code == 403
    # Metadata changes are `update`; listing is `list` (covered by `read`).
    ok = requests.patch(obj_url(base, "users/alice/a.png"), json={"metadata": {"caption": "hi"}}, headers=as_user("alice"),
                        timeout=TIMEOUT)
    assert ok.status_code == 200
    assert requests.patch(obj_url(base, "users/alice/a.png"), json={"metadata": {"other": "x"}}, headers=as_user("alice"),
                          timeout=TIMEOUT).status_code == 403
    assert requests.get(f"{base}/v0/b/{BUCKET}/o", params={"prefix": "users/alice/", "delimiter": "/"},
                        headers=as_user("bob"), timeout=TIMEOUT).status_code == 403
    assert requests.get(f"{base}/v0/b/{BUCKET}/o", params={"prefix": "users/alice/", "delimiter": "/"},
                        timeout=TIMEOUT).status_code == 403
    assert requests.get(f"{base}/v0/b/{BUCKET}/o", params={"prefix": "public/", "delimiter": "/"},
                        timeout=TIMEOUT).status_code == 200
    assert requests.delete(obj_url(base, "users/alice/a.png"), headers=as_user("bob"), timeout=TIMEOUT).status_code == 403
    assert requests.delete(obj_url(base, "users/alice/a.png"), headers=as_user("alice"), timeout=TIMEOUT).status_code == 204


def test_broken_storage_rules_are_refused(base):
    r = requests.put(f"{base}/internal/setRules",
                     json={"rules": {"files": [{"name": "storage.rules", "content": "service firebase.storage { match /b { allow read: if ( } }"}]}},
                     timeout=TIMEOUT)
    assert r.status_code == 400 and "storage.rules:1:" in r.json()["error"]["message"]


def test_large_upload_streams(base):
    name = unique("large")
    data = os.urandom(24 * 1024 * 1024)
    r = upload_media(base, name, data)
    assert r.status_code == 200 and r.json()["md5Hash"] == base64.b64encode(hashlib.md5(data).digest()).decode()
    got = requests.get(obj_url(base, name), params={"alt": "media"}, headers=OWNER, timeout=TIMEOUT, stream=True)
    h = hashlib.md5()
    n = 0
    for chunk in got.iter_content(1 << 20):
        h.update(chunk)
        n += len(chunk)
    assert n == len(data) and h.digest() == hashlib.md5(data).digest()


def test_kill_during_upload_leaves_no_partial_object(base, server, restart_server):
    name = unique("killed")
    host, port = "127.0.0.1", server.ports["storage"]
    s = socket.create_connection((host, port), timeout=10)
    path = f"/v0/b/{BUCKET}/o?name={urllib.parse.quote(name, safe='')}"
    s.sendall((f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer owner\r\n"
               f"Content-Type: application/octet-stream\r\nContent-Length: {10 * 1024 * 1024}\r\n\r\n").encode())
    s.sendall(os.urandom(1024 * 1024))
    time.sleep(0.3)
    srv = restart_server()
    s.close()
    new_base = srv.storage_base
    assert requests.get(obj_url(new_base, name), headers=OWNER, timeout=TIMEOUT).status_code == 404
    tmp = srv.data_dir / "objects" / "tmp"
    if getattr(srv, "database_url", None):
        # Over PostgreSQL other servers may share the data directory, so a start keeps temporary
        # files younger than an hour (their uploads in flight; docs/postgres.md). What counts
        # holds: no partial object (above).
        return
    assert not any(tmp.iterdir()), "temporary upload files survive a restart"


CROSS_SERVICE_RULES = """rules_version = '2';
service firebase.storage {
  match /b/{bucket}/o {
    match /bottles/{bottleId}/{file} {
      allow read: if firestore.exists(/databases/(default)/documents/bottles/$(bottleId));
      allow create: if request.auth != null
        && firestore.get(/databases/(default)/documents/bottles/$(bottleId)).data.ownerId == request.auth.uid;
    }
  }
}
"""


def set_storage_rules(base, content):
    r = requests.put(f"{base}/internal/setRules",
                     json={"rules": {"files": [{"name": "storage.rules", "content": content}]}}, timeout=TIMEOUT)
    assert r.status_code == 200, r.text


def test_cross_service_rules_read_firestore_documents(base, server):
    """Drift's bottles: the owner of `bottles/{id}` in Firestore decides who may upload to it
    (`firestore.get`), and who may read depends on the document existing (`firestore.exists`)."""
    base = server.storage_base  # the kill test above restarts the server on new ports
    bottle, gone = unique("bottle"), unique("gone")
    doc = f"{server.rest_base}/v1/projects/demo-hearth/databases/(default)/documents/bottles/{bottle}"
    r = requests.patch(doc, json={"fields": {"ownerId": {"stringValue": "alice"}}}, headers=OWNER, timeout=TIMEOUT)
    assert r.status_code == 200, r.text
    set_storage_rules(base, CROSS_SERVICE_RULES)
    try:
        def up(uid, bid, name="photo.jpg"):
            return upload_media(base, f"bottles/{bid}/{name}", b"\xff\xd8 jpeg", "image/jpeg", headers=as_user(uid))
        ok = up("alice", bottle)
        assert ok.status_code == 200, ok.text
        denied = up("mallory", bottle)
        assert denied.status_code == 403 and denied.json()["error"]["code"] == 403, denied.text
        # A missing document: get() fails (deny), exists() is false (deny).
        assert up("alice", gone).status_code == 403
        assert requests.get(obj_url(base, f"bottles/{bottle}/photo.jpg"), timeout=TIMEOUT).status_code == 200
        assert requests.get(obj_url(base, f"bottles/{gone}/photo.jpg"), timeout=TIMEOUT).status_code == 403
        # The live document is read: a new owner takes over at once.
        r = requests.patch(doc, json={"fields": {"ownerId": {"stringValue": "mallory"}}}, headers=OWNER, timeout=TIMEOUT)
        assert r.status_code == 200, r.text
        assert up("mallory", bottle, "second.jpg").status_code == 200
        assert up("alice", bottle, "third.jpg").status_code == 403
        requests.delete(doc, headers=OWNER, timeout=TIMEOUT)
        assert requests.get(obj_url(base, f"bottles/{bottle}/photo.jpg"), timeout=TIMEOUT).status_code == 403
        assert requests.get(obj_url(base, f"bottles/{bottle}/photo.jpg"), headers=OWNER, timeout=TIMEOUT).status_code == 200
        # The lookups are counted in the rules coverage like any expression. Coverage is counted
        # per server (docs/postgres.md, "Rules loaded at run time"): through several replicas each
        # counts the requests it judged, so the totals are checked on one server only.
        cov = requests.get(f"{base}/internal/ruleCoverage", timeout=TIMEOUT).json()
        lookups = {e["text"].split("(")[0]: e for e in cov["report"] if e["text"].startswith("firestore.")}
        assert set(lookups) == {"firestore.get", "firestore.exists"}, lookups
        if getattr(server, "replicas", 1) == 1:
            # 5 uploads; the 2 allowed ones are judged twice (declared size first, then the bytes).
            assert lookups["firestore.get"]["evaluations"] == 7 and lookups["firestore.get"]["error"] == 1, lookups
            assert lookups["firestore.exists"]["true"] == 1 and lookups["firestore.exists"]["false"] == 2, lookups
    finally:
        assert requests.post(f"{base}/internal/reset", timeout=TIMEOUT).status_code == 200


SIZE_RULES = """rules_version = '2';
service firebase.storage {
  match /b/{bucket}/o {
    match /{all=**} {
      allow read;
      allow create: if request.auth != null && request.resource.size < 5 * 1024 * 1024;
    }
  }
}
"""


def wait_closed(sock, timeout=20.0) -> bool:
    """True once the server closes the connection (dropping anything it still sends)."""
    sock.settimeout(timeout)
    try:
        while sock.recv(65536):
            pass
        return True
    except ConnectionResetError:
        return True


@pytest.mark.parametrize("variant", ["media", "media-expect", "resumable-ios", "resumable-js"])
def test_upload_denied_by_declared_size_is_refused_before_the_body(base, server, variant):
    """6 MiB against `request.resource.size < 5 MiB`: the 403 arrives after the headers alone
    (no byte of the body sent), and the server is fine afterwards."""
    base = server.storage_base
    set_storage_rules(base, SIZE_RULES)
    try:
        host, port = "127.0.0.1", server.ports["storage"]
        name = urllib.parse.quote(unique("big"), safe="")
        size = 6 * 1024 * 1024
        auth = f"Authorization: Firebase {token('alice')}\r\n"
        if variant.startswith("media"):
            expect = "Expect: 100-continue\r\n" if variant == "media-expect" else ""
            head = (f"POST /v0/b/{BUCKET}/o?name={name} HTTP/1.1\r\nHost: {host}:{port}\r\n{auth}{expect}"
                    f"Content-Type: image/png\r\nContent-Length: {size}\r\n\r\n")
        else:
            length = "X-Goog-Upload-Content-Length" if variant == "resumable-ios" else "X-Goog-Upload-Header-Content-Length"
            meta = json.dumps({"name": unique("big"), "contentType": "image/png"})
            head = (f"POST /v0/b/{BUCKET}/o?name={name} HTTP/1.1\r\nHost: {host}:{port}\r\n{auth}"
                    f"X-Goog-Upload-Protocol: resumable\r\nX-Goog-Upload-Command: start\r\n{length}: {size}\r\n"
                    f"Content-Type: application/json\r\nContent-Length: {len(meta)}\r\n\r\n{meta}")
        with socket.create_connection((host, port), timeout=20) as s:
            s.sendall(head.encode())
            # The final answer comes instead of `100 Continue`: the client need not send the body.
            assert not s.recv(12, socket.MSG_PEEK).startswith(b"HTTP/1.1 100")
            status, headers, body = read_response(s)
            assert status == 403, body
            assert json.loads(body)["error"]["code"] == 403
            if variant.startswith("media"):
                # The body never came: the refusal ends the connection rather than wait for it.
                assert headers.get("connection") == "close"
                s.sendall(b"x" * 65536)
                assert wait_closed(s)
        # A client that sends the whole body before reading (requests) gets the 403 too …
        r = upload_media(base, unique("big"), b"x" * size, "image/png", headers=as_user("alice"))
        assert r.status_code == 403, r.text
        # … and the server goes on serving: a small upload on a fresh connection succeeds.
        ok = upload_media(base, unique("small"), b"x" * 1024, "image/png", headers=as_user("alice"))
        assert ok.status_code == 200, ok.text
    finally:
        assert requests.post(f"{base}/internal/reset", timeout=TIMEOUT).status_code == 200


def test_resumable_chunk_past_the_declared_size_is_refused_before_it_is_read(base, server):
    base = server.storage_base
    name = unique("chunked")
    start = requests.post(f"{base}/v0/b/{BUCKET}/o", params={"name": name}, data=b"{}", timeout=TIMEOUT, headers={
        **OWNER, "X-Goog-Upload-Protocol": "resumable", "X-Goog-Upload-Command": "start",
        "X-Goog-Upload-Header-Content-Length": "1000", "Content-Type": "application/json"})
    assert start.status_code == 200, start.text
    url = urllib.parse.urlsplit(start.headers["X-Goog-Upload-URL"])
    host, port = "127.0.0.1", server.ports["storage"]
    with socket.create_connection((host, port), timeout=20) as s:
        s.sendall((f"POST {url.path}?{url.query} HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer owner\r\n"
                   f"X-Goog-Upload-Command: upload, finalize\r\nX-Goog-Upload-Offset: 0\r\n"
                   f"Content-Length: 2000\r\n\r\n").encode())
        status, headers, body = read_response(s)
        assert status == 400 and headers.get("connection") == "close", body
    # The session still takes the right bytes.
    r = requests.post(start.headers["X-Goog-Upload-URL"], data=b"y" * 1000, timeout=TIMEOUT, headers={
        **OWNER, "X-Goog-Upload-Command": "upload, finalize", "X-Goog-Upload-Offset": "0"})
    assert r.status_code == 200 and r.json()["size"] == "1000", r.text
