#!/usr/bin/env python3
"""Walks Drift's testing checklist against a running Hearth (started in this folder, so that
firebase.json's rules and lifecycle worker apply):

    hearth serve --ready-file /tmp/drift-ready.json      # in examples/drift
    python3 drift_check.py --ready-file /tmp/drift-ready.json

Avatar upload and read-back (and the rules' refusals), a bottle with an image and a whisper,
chat messages (under push keys) with media, then a forced expiry: the worker deletes every
bottles/{bottleId}/ object, the bottle's ownership record and the bottle in the Realtime
Database, and the app's reads get clean not-found answers. Needs only `requests`. Exit status 0
when every check passes."""

from __future__ import annotations

import argparse
import json
import secrets
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


PUSH_CHARS = "-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz"


def push_key() -> str:
    """A Realtime Database push key, made on the client as the SDKs' push() makes it (8
    characters of time, 12 random): the message's Storage paths can name it before it exists."""
    now, chars = int(time.time() * 1000), []
    for _ in range(8):
        chars.append(PUSH_CHARS[now % 64])
        now //= 64
    return "".join(reversed(chars)) + "".join(secrets.choice(PUSH_CHARS) for _ in range(12))


class Drift:
    def __init__(self, ports: dict, project: str):
        self.auth = f"http://127.0.0.1:{ports['auth']}"
        self.docs = f"http://127.0.0.1:{ports['firestore']}/v1/projects/{project}/databases/(default)/documents"
        self.storage = f"http://127.0.0.1:{ports['storage']}/v0/b/{project}.appspot.com/o"
        self.database = f"http://127.0.0.1:{ports['database']}"

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

    # The Realtime Database's REST API (the tree), as a client writes it.
    def db_put(self, token: str, path: str, value):
        return requests.put(f"{self.database}/{path}.json", params={"auth": token}, json=value, timeout=TIMEOUT)

    def db_get(self, token: str, path: str):
        return requests.get(f"{self.database}/{path}.json", params={"auth": token}, timeout=TIMEOUT)

    # Firestore REST: only the ownership records (bottleOwners/{bottleId}) Storage rules read.
    def create_owner_record(self, token: str, bottle: str, owner: str, participants: list[str]):
        fields = {"ownerUid": s(owner), "participants": {"arrayValue": {"values": [s(p) for p in participants]}}}
        return requests.post(f"{self.docs}/bottleOwners?documentId={bottle}", json={"fields": fields},
                             headers={"Authorization": f"Bearer {token}"}, timeout=TIMEOUT)

    def get_owner_record(self, token: str, bottle: str):
        return requests.get(f"{self.docs}/bottleOwners/{bottle}", headers={"Authorization": f"Bearer {token}"}, timeout=TIMEOUT)


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

    # 1. Avatars: users/{uid}/avatar.png, only one's own, a PNG under 50 KB; the profile in the
    #    Realtime Database holds its path.
    png = b"\x89PNG\r\n\x1a\n" + bytes(1024)
    avatar = f"users/{owner}/avatar.png"
    check(drift.upload(owner_token, avatar, png, "image/png").status_code == 200, "avatar upload")
    r = drift.download(owner_token, avatar)
    check(r.status_code == 200 and r.content == png, "avatar read-back")
    check(drift.upload(owner_token, avatar, png + bytes(50 * 1024), "image/png").status_code == 403, "avatar over 50 KB refused")
    check(drift.upload(owner_token, avatar, png, "image/jpeg").status_code == 403, "avatar that is not image/png refused")
    check(drift.upload(stranger_token, avatar, png, "image/png").status_code == 403, "someone else's avatar refused")
    check(drift.upload(owner_token, f"users/{owner}/other.png", png, "image/png").status_code == 403, "other paths under users/ refused")
    check(drift.db_put(owner_token, f"users/{owner}", {"avatar_path": avatar}).status_code == 200, "profile in the Realtime Database")
    check(drift.db_put(stranger_token, f"users/{owner}", {"avatar_path": "x"}).status_code == 401, "someone else's profile refused")

    # 2. A bottle with an image and a whisper. The owner first claims the id with its Firestore
    #    ownership record (what Storage rules read), then writes the bottle to the tree, which
    #    stores only Storage paths.
    bottle = f"b{uuid.uuid4().hex[:12]}"
    content = f"bottles/{bottle}/content"
    check(drift.create_owner_record(stranger_token, bottle, owner, [owner, friend]).status_code == 403,
          "nobody can claim a bottle for someone else")
    r = drift.create_owner_record(owner_token, bottle, owner, [owner, friend])
    check(r.status_code == 200, "ownership record created by the owner", r.text)
    tree = {"ownerUid": owner, "participants": {owner: True, friend: True}, "status": "live",
            "expiresAt": int(time.time() * 1000) + 86_400_000,
            "content": {"image_path": f"{content}/message_image.jpg", "audio_path": f"{content}/whisper.m4a"}}
    check(drift.db_put(stranger_token, f"bottles/{bottle}", {**tree, "ownerUid": stranger}).status_code == 401,
          "a bottle owned by someone else refused")
    r = drift.db_put(owner_token, f"bottles/{bottle}", tree)
    check(r.status_code == 200, "bottle written to the Realtime Database by its owner", r.text)
    bad = {**tree, "content": {"image_path": f"users/{owner}/avatar.png"}}
    check(drift.db_put(owner_token, f"bottles/{bottle}", bad).status_code in (400, 401), "content pointing elsewhere refused")
    jpeg, m4a = b"\xff\xd8\xff\xe0" + bytes(2048), b"\x00\x00\x00\x20ftypM4A " + bytes(2048)
    check(drift.upload(owner_token, f"{content}/message_image.jpg", jpeg, "image/jpeg").status_code == 200, "bottle image upload")
    check(drift.upload(owner_token, f"{content}/whisper.m4a", m4a, "audio/mp4").status_code == 200, "bottle whisper upload")
    check(drift.upload(friend_token, f"{content}/message_image.jpg", jpeg, "image/jpeg").status_code == 403, "a participant cannot replace the content")
    check(drift.upload(owner_token, f"{content}/extra.png", png, "image/png").status_code == 403, "other content names refused")
    check(drift.download(friend_token, f"{content}/whisper.m4a").content == m4a, "a participant hears the whisper")
    check(drift.download(stranger_token, f"{content}/whisper.m4a").status_code == 403, "a stranger cannot")
    check(drift.db_get(friend_token, f"bottles/{bottle}").json()["content"]["audio_path"] == f"{content}/whisper.m4a",
          "a participant reads the bottle")
    check(drift.db_get(stranger_token, f"bottles/{bottle}").status_code == 401, "a stranger cannot read it")

    # 3. Chat: messages under push keys, bottles/{id}/chat/{messageId}, media at
    #    bottles/{id}/chat/{messageId}/{image.jpg|audio.m4a}.
    message = push_key()
    chat = f"bottles/{bottle}/chat/{message}"
    r = drift.db_put(friend_token, chat, {"senderUid": friend, "text": "hello", "image_path": f"{chat}/image.jpg", "audio_path": f"{chat}/audio.m4a"})
    check(r.status_code == 200, "chat message by a participant (push key)", r.text)
    r = drift.db_put(friend_token, f"bottles/{bottle}/chat/{push_key()}", {"senderUid": friend, "image_path": f"users/{friend}/avatar.png"})
    check(r.status_code in (400, 401), "a chat message pointing elsewhere refused")
    check(drift.db_put(stranger_token, f"bottles/{bottle}/chat/{push_key()}", {"senderUid": stranger, "text": "hi"}).status_code == 401,
          "a stranger cannot post")
    check(drift.upload(friend_token, f"{chat}/image.jpg", jpeg, "image/jpeg").status_code == 200, "chat image upload")
    check(drift.upload(friend_token, f"{chat}/audio.m4a", m4a, "audio/mp4").status_code == 200, "chat audio upload")
    check(drift.upload(stranger_token, f"{chat}/image.jpg", jpeg, "image/jpeg").status_code == 403, "a stranger cannot post chat media")
    check(drift.download(owner_token, f"{chat}/image.jpg").content == jpeg, "the owner sees chat media")
    check(drift.upload(owner_token, "misc/anything.bin", b"x", "application/octet-stream").status_code == 403, "nothing else may be written")

    # 4. Forced expiry: the worker deletes the bottle's objects, its ownership record and the
    #    bottle (with its chat) from the tree.
    r = drift.db_put(owner_token, f"bottles/{bottle}/expiresAt", 946_684_800_000)  # 2000-01-01
    check(r.status_code == 200, "the owner forces expiry", r.text)
    deadline = time.monotonic() + args.expiry_timeout
    while drift.db_get(owner_token, f"bottles/{bottle}").json() is not None and time.monotonic() < deadline:
        time.sleep(0.25)
    r = drift.db_get(owner_token, f"bottles/{bottle}")
    check(r.status_code == 200 and r.json() is None, "the expired bottle reads as null (not found)", r.text)
    r = drift.db_get(friend_token, chat)
    check(r.status_code == 200 and r.json() is None, "its chat message reads as null (not found)", r.text)
    check(drift.get_owner_record(owner_token, bottle).status_code == 404, "its ownership record is gone")
    for path in (f"{content}/message_image.jpg", f"{content}/whisper.m4a", f"{chat}/image.jpg", f"{chat}/audio.m4a"):
        check(drift.download(owner_token, path).status_code == 404, f"{path.split('/', 2)[2]} reads as not found")
    check(drift.download(owner_token, avatar).content == png, "the avatar is untouched")
    check(drift.db_get(owner_token, f"users/{owner}").json() == {"avatar_path": avatar}, "the profile is untouched")
    print(f"drift checklist: {checks} checks passed")


if __name__ == "__main__":
    main()
