"""Helpers for the api-port tests (test_api_*.py): Hearth in production mode with an api
config, users with real (RS256) ID tokens, and calls to the file registry."""

from __future__ import annotations

import json
import uuid

import requests

from authutil import AuthRest, start

ADMIN_TOKEN = "api-test-admin-token"
TIMEOUT = 30

JPEG = bytes([0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10]) + b"JFIF\x00" + bytes(range(256)) * 4
PNG = bytes([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) + b"\x00\x00\x00\x0dIHDR" + bytes(64)


def start_api_server(tmp_path_factory, name: str, config: dict | None = None, extra_args: tuple = (), service_account: bool = False):
    """`hearth serve` (production mode, signed ID tokens) with `--api-config` written from `config`."""
    args = ["--admin-token", ADMIN_TOKEN, *extra_args]
    if config is not None:
        path = tmp_path_factory.mktemp(f"{name}-config") / "api.json"
        path.write_text(json.dumps(config))
        args += ["--api-config", str(path)]
    srv = start(tmp_path_factory, name, emulator=False, extra_args=tuple(args), service_account=service_account)
    assert "api" in srv.ports, f"the ready file has no api port: {srv.ports}"
    srv.api_base = f"http://127.0.0.1:{srv.ports['api']}"
    return srv


class ApiUser:
    """A signed-up user calling the api port with `Authorization: Bearer <ID token>`."""

    def __init__(self, srv):
        self.srv = srv
        up = AuthRest(srv).sign_up(f"api-{uuid.uuid4().hex[:10]}@example.com", "secret-pass-1")
        self.uid = up["localId"]
        self.token = up["idToken"]
        self.session = requests.Session()

    def call(self, method: str, path: str, **kw):
        headers = kw.pop("headers", {})
        headers.setdefault("Authorization", f"Bearer {self.token}")
        return self.session.request(method, self.srv.api_base + path, headers=headers, timeout=TIMEOUT, **kw)

    def presign(self, content_type="image/jpeg", ext="jpg", **extra):
        r = self.call("POST", "/v1/files/presign-upload", json={"contentType": content_type, "fileExtension": ext, **extra})
        assert r.status_code == 200, r.text
        return r.json()

    def complete(self, file_id: str):
        return self.call("POST", f"/v1/files/{file_id}/complete")

    def upload(self, presigned: dict, data: bytes, content_type: str | None = None):
        """Sends the bytes the way the presign answer says (PUT with its headers, or the POST form)."""
        up = presigned["upload"]
        if up["method"] == "PUT":
            headers = dict(up["headers"])
            if content_type is not None:
                headers["Content-Type"] = content_type
            return requests.put(up["url"], data=data, headers=headers, timeout=TIMEOUT)
        assert up["method"] == "POST"
        return requests.post(up["url"], data=up["fields"], files={"file": ("f", data, content_type or up["fields"]["Content-Type"])},
                             timeout=TIMEOUT)

    def upload_ready(self, content_type="image/jpeg", ext="jpg", data=JPEG) -> dict:
        p = self.presign(content_type, ext)
        r = self.upload(p, data)
        assert r.status_code in (200, 204), r.text
        c = self.complete(p["fileId"])
        assert c.status_code == 200, c.text
        return p


def admin_document(srv, file_id: str):
    """The `files/{fileId}` document, read through Firestore REST with the admin credential."""
    return requests.get(
        f"{srv.rest_base}/v1/projects/demo-hearth/databases/(default)/documents/files/{file_id}",
        headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, timeout=TIMEOUT)


def admin_object(srv, bucket: str, key: str):
    """The object's metadata through the Cloud Storage JSON API with the admin credential."""
    from urllib.parse import quote
    return requests.get(f"{srv.storage_base}/storage/v1/b/{bucket}/o/{quote(key, safe='')}",
                        headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, timeout=TIMEOUT)
