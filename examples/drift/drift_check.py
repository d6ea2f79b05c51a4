#!/usr/bin/env python3
"""Walks Drift's testing checklist against a running Hearth (started in this folder, so that
firebase.json's rules and lifecycle worker apply):

    hearth serve --ready-file /tmp/drift-ready.json      # in examples/drift
    python3 drift_check.py --ready-file /tmp/drift-ready.json

Avatar upload and read-back (and the rules' refusals), a bottle with an image and a whisper,
chat media, then a forced expiry: the worker deletes every bottles/{bottleId}/ object and
record, and the app's reads get clean not-found errors. Needs only `requests`. Exit status 0
when every check passes."""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from urllib.parse import quote

import requests

PROJECT = "demo-hearth"
KEY = "fake-api-key"
TIMEOUT = 30
checks = 0


def check(condition: bool, what: str, detail: object = "") -> None:
    global checks
    if not condition:
        print(f"FAILED: {what} {detail}", file=sys.stderr)
        sys.exit(1)
    checks += 1
    print(f"ok  {what}")


class Drift:
    def __init__(self, ports: dict, project: str):
        self.auth = f"http://127.0.0.1:{ports['auth']}"
        self.docs = f"http://127.0.0.1:{ports['firestore']}/v1/projects/{project}/databases/(default)/documents"
        self.storage = f"http://127.0.0.1:{ports['storage']}/v0/b/{project}.appspot.com/o"

    def sign_up(self) -> tuple[str, str]:
        r = requests.post(f"{self.auth}/identitytoolkit.googleapis.com/v1/accounts:signUp?key={KEY}",
                          json={"email": f"drift-{uuid.uuid4().hex[:8]}@example.com", "password": "drift-pass-1", "returnSecureToken": True},
                          timeout=TIMEOUT)
        r.raise_for_status()
        return r.json()["localId"], r.json()["idToken"]

    # Storage, as the Firebase Storage SDK calls it.
    def upload(self, token: str, path: str, data: bytes, content_type: str):
        return requests.post(f"{self.storage}?name={quote(path, safe='')}", data=data,
                             headers={"Authorization": f"Firebase {token}", "Content-Type": content_type}, timeout=TIMEOUT)

    def download(self, token: str, path: str):
        return requests.get(f"{self.storage}/{quote(path, safe='')}?alt=media", headers={"Authorization": f"Firebase {token}"}, timeout=TIMEOUT)

    # Firestore REST, as a client would write its tree.
    def create(self, token: str, collection: str, doc_id: str, fields: dict):
        return requests.post(f"{self.docs}/{collection}?documentId={doc_id}", json={"fields": fields},
                             headers={"Authorization": f"Bearer {token}"}, timeout=TIMEOUT)

    def get(self, token: str, path: str):
        return requests.get(f"{self.docs}/{path}", headers={"Authorization": f"Bearer {token}"}, timeout=TIMEOUT)

    def patch(self, token: str, path: str, fields: dict):
        mask = "&".join(f"updateMask.fieldPaths={k}" for k in fields)
        return requests.patch(f"{self.docs}/{path}?{mask}", json={"fields": fields}, headers={"Authorization": f"Bearer {token}"}, timeout=TIMEOUT)


def s(value: str) -> dict:
    return {"stringValue": value}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ready-file", required=True, help="the ready file of `hearth serve --ready-file`")
    parser.add_argument("--project", default=PROJECT)
    parser.add_argument("--expiry-timeout", type=float, default=60.0, help="seconds to wait for the worker")
    args = parser.parse_args()
    drift = Drift(json.load(open(args.ready_file)), args.project)

    owner, owner_token = drift.sign_up()
    friend, friend_token = drift.sign_up()
    stranger, stranger_token = drift.sign_up()

    # 1. Avatars: users/{uid}/avatar.png, only one's own, a PNG under 50 KB.
    png = b"\x89PNG\r\n\x1a\n" + bytes(1024)
    avatar = f"users/{owner}/avatar.png"
    check(drift.upload(owner_token, avatar, png, "image/png").status_code == 200, "avatar upload")
    r = drift.download(owner_token, avatar)
    check(r.status_code == 200 and r.content == png, "avatar read-back")
    check(drift.upload(owner_token, avatar, png + bytes(50 * 1024), "image/png").status_code == 403, "avatar over 50 KB refused")
    check(drift.upload(owner_token, avatar, png, "image/jpeg").status_code == 403, "avatar that is not image/png refused")
    check(drift.upload(stranger_token, avatar, png, "image/png").status_code == 403, "someone else's avatar refused")
    check(drift.upload(owner_token, f"users/{owner}/other.png", png, "image/png").status_code == 403, "other paths under users/ refused")

    # 2. A bottle with an image and a whisper; the tree stores only Storage paths.
    bottle = f"b{uuid.uuid4().hex[:12]}"
    content = f"bottles/{bottle}/content"
    fields = {
        "ownerUid": s(owner), "participants": {"arrayValue": {"values": [s(owner), s(friend)]}}, "status": s("live"),
        "expiresAt": {"timestampValue": "2100-01-01T00:00:00Z"},
        "content": {"mapValue": {"fields": {"image_path": s(f"{content}/message_image.jpg"), "audio_path": s(f"{content}/whisper.m4a")}}},
    }
    r = drift.create(owner_token, "bottles", bottle, fields)
    check(r.status_code == 200, "bottle created by its owner", r.text)
    jpeg, m4a = b"\xff\xd8\xff\xe0" + bytes(2048), b"\x00\x00\x00\x20ftypM4A " + bytes(2048)
    check(drift.upload(owner_token, f"{content}/message_image.jpg", jpeg, "image/jpeg").status_code == 200, "bottle image upload")
    check(drift.upload(owner_token, f"{content}/whisper.m4a", m4a, "audio/mp4").status_code == 200, "bottle whisper upload")
    check(drift.upload(friend_token, f"{content}/message_image.jpg", jpeg, "image/jpeg").status_code == 403, "a participant cannot replace the content")
    check(drift.upload(owner_token, f"{content}/extra.png", png, "image/png").status_code == 403, "other content names refused")
    check(drift.download(friend_token, f"{content}/whisper.m4a").content == m4a, "a participant hears the whisper")
    check(drift.download(stranger_token, f"{content}/whisper.m4a").status_code == 403, "a stranger cannot")

    # 3. Chat media: participants write bottles/{id}/chat/{messageId}/{image.jpg|audio.m4a}.
    message = f"m{uuid.uuid4().hex[:8]}"
    chat = f"bottles/{bottle}/chat/{message}"
    r = drift.create(friend_token, f"bottles/{bottle}/chat", message,
                     {"senderUid": s(friend), "text": s("hello"), "image_path": s(f"{chat}/image.jpg"), "audio_path": s(f"{chat}/audio.m4a")})
    check(r.status_code == 200, "chat message by a participant", r.text)
    r = drift.create(friend_token, f"bottles/{bottle}/chat", "bad", {"senderUid": s(friend), "image_path": s(f"users/{friend}/avatar.png")})
    check(r.status_code == 403, "a chat message pointing elsewhere refused")
    check(drift.upload(friend_token, f"{chat}/image.jpg", jpeg, "image/jpeg").status_code == 200, "chat image upload")
    check(drift.upload(friend_token, f"{chat}/audio.m4a", m4a, "audio/mp4").status_code == 200, "chat audio upload")
    check(drift.upload(stranger_token, f"{chat}/image.jpg", jpeg, "image/jpeg").status_code == 403, "a stranger cannot post chat media")
    check(drift.download(owner_token, f"{chat}/image.jpg").content == jpeg, "the owner sees chat media")
    check(drift.upload(owner_token, "misc/anything.bin", b"x", "application/octet-stream").status_code == 403, "nothing else may be written")

    # 4. Forced expiry: the worker deletes the bottle's objects, chat and record.
    r = drift.patch(owner_token, f"bottles/{bottle}", {"expiresAt": {"timestampValue": "2000-01-01T00:00:00Z"}})
    check(r.status_code == 200, "the owner forces expiry", r.text)
    deadline = time.monotonic() + args.expiry_timeout
    while drift.get(owner_token, f"bottles/{bottle}").status_code != 404 and time.monotonic() < deadline:
        time.sleep(0.25)
    check(drift.get(owner_token, f"bottles/{bottle}").status_code == 404, "the expired bottle reads as not found")
    check(drift.get(friend_token, f"bottles/{bottle}/chat/{message}").status_code == 404, "its chat message reads as not found")
    for path in (f"{content}/message_image.jpg", f"{content}/whisper.m4a", f"{chat}/image.jpg", f"{chat}/audio.m4a"):
        check(drift.download(owner_token, path).status_code == 404, f"{path.split('/', 2)[2]} reads as not found")
    check(drift.download(owner_token, avatar).content == png, "the avatar is untouched")
    print(f"drift checklist: {checks} checks passed")


if __name__ == "__main__":
    main()
