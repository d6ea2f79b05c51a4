"""The Realtime Database's event streams (`Accept: text/event-stream`): the initial put, events as
fine-grained as each write and in write order, patches, query-filtered streams, auth_revoked
when the ID token expires, and refusals before the stream starts."""

from __future__ import annotations

import base64
import json
import threading
import time

import pytest

from dbutil import DatabaseRest, EventStream, unique

pytestmark = pytest.mark.hearth_only(reason="the Realtime Database is served by Hearth, not by the Firestore emulator")


@pytest.fixture(scope="module")
def db(server):
    r = DatabaseRest(server)
    yield r
    r.session.close()


def unsigned_token(uid: str, lifetime_s: int) -> str:
    enc = lambda obj: base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()
    now = int(time.time())
    payload = {"sub": uid, "user_id": uid, "iat": now, "exp": now + lifetime_s, "aud": "demo-hearth",
               "iss": "https://securetoken.google.com/demo-hearth", "firebase": {"sign_in_provider": "anonymous"}}
    return f"{enc({'alg': 'none', 'typ': 'JWT'})}.{enc(payload)}."


def test_initial_put_then_fine_grained_events_in_write_order(db):
    p = f"/{unique()}"
    db.put(f"{p}.json", {"a": 1})
    stream = EventStream(db, f"{p}.json")
    try:
        assert stream.next() == ("put", {"path": "/", "data": {"a": 1}})
        name = db.post(f"{p}/users.json", "").json()["name"]
        assert stream.next() == ("put", {"path": f"/users/{name}", "data": ""})
        db.patch(f"{p}.json", {"a": 2, "b": None})
        assert stream.next() == ("patch", {"path": "/", "data": {"a": 2, "b": None}})
        db.put(f"{p}/a.json", None)
        assert stream.next() == ("put", {"path": "/a", "data": None})
        db.put(f"/{unique()}.json", "elsewhere")  # not under the location: no event
        for i in range(20):
            db.put(f"{p}/seq.json", i)
        got = [stream.next() for _ in range(20)]
        assert got == [("put", {"path": "/seq", "data": i}) for i in range(20)]
        db.put(f"{p}.json", {"replaced": True})
        assert stream.next() == ("put", {"path": "/", "data": {"replaced": True}})
    finally:
        stream.close()


def test_concurrent_writers_are_streamed_in_commit_order(db):
    p = f"/{unique()}"
    stream = EventStream(db, f"{p}.json")
    try:
        assert stream.next() == ("put", {"path": "/", "data": None})
        def writer(w):
            for i in range(10):
                db.put(f"{p}/w{w}.json", i)
        threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        events = [stream.next() for _ in range(40)]
        per_writer = {}
        for kind, body in events:
            assert kind == "put"
            per_writer.setdefault(body["path"], []).append(body["data"])
        assert per_writer == {f"/w{w}": list(range(10)) for w in range(4)}
        final = db.get(f"{p}.json").json()
        assert final == {f"w{w}": 9 for w in range(4)}
    finally:
        stream.close()


def test_query_streams_carry_the_filtered_result(db):
    p = f"/{unique()}"
    db.put(f"{p}.json", {"a": 1, "b": 5, "c": 9})
    stream = EventStream(db, f"{p}.json", params={"orderBy": '"$value"', "startAt": "4"})
    try:
        assert stream.next() == ("put", {"path": "/", "data": {"b": 5, "c": 9}})
        db.put(f"{p}/a.json", 7)
        assert stream.next() == ("put", {"path": "/", "data": {"a": 7, "b": 5, "c": 9}})
        db.put(f"{p}/b.json", 0)
        assert stream.next() == ("put", {"path": "/", "data": {"a": 7, "c": 9}})
    finally:
        stream.close()


def test_auth_revoked_when_the_id_token_expires(server):
    user = DatabaseRest(server, ns=unique("sse"), token=unsigned_token("u1", 2))
    stream = EventStream(user, "/x.json")
    try:
        assert stream.next() == ("put", {"path": "/", "data": None})
        assert stream.next() == ("auth_revoked", "credential is no longer valid")
    finally:
        stream.close()


def test_streams_are_cancelled_when_rules_stop_allowing_the_read(server):
    ns = unique("sse")
    admin = DatabaseRest(server, ns=ns)
    admin.put("/room.json", {"m": 1})
    anonymous = DatabaseRest(server, ns=ns, token=None)
    client = EventStream(anonymous, "/room.json")
    owner = EventStream(admin, "/room.json")
    try:
        assert client.next() == ("put", {"path": "/", "data": {"m": 1}})
        assert owner.next() == ("put", {"path": "/", "data": {"m": 1}})
        admin.request("PUT", "/.settings/rules.json", data=json.dumps({"rules": {".read": "false"}}))
        assert client.next() == ("cancel", None)
        with pytest.raises(EOFError):
            client.next()
        admin.put("/room/m.json", 2)  # the admin's stream goes on
        assert owner.next() == ("put", {"path": "/m", "data": 2})
    finally:
        client.close()
        owner.close()


def test_refusals_come_before_the_stream(server):
    ns = unique("sse")
    admin = DatabaseRest(server, ns=ns)
    admin.request("PUT", "/.settings/rules.json", data=json.dumps({"rules": {".read": "false"}}))
    anonymous = DatabaseRest(server, ns=ns, token=None)
    r = anonymous.get("/x.json", headers={"Accept": "text/event-stream"})
    assert r.status_code == 401 and r.json() == {"error": "Permission denied"}
    bad = DatabaseRest(server, ns=ns, token="not-a-token")
    r = bad.get("/x.json", headers={"Accept": "text/event-stream"})
    assert r.status_code == 401 and r.json() == {"error": "Could not parse auth token."}


def test_a_client_that_does_not_read_has_its_stream_ended_not_thinned(db):
    """A stream's queue of changes is bounded: a client that stops reading while the location
    changes gets the events up to the limit, in order and without gaps, then the end of the
    stream (it reconnects for a fresh put); the writes themselves are unaffected."""
    import re
    import socket

    p = f"/{unique()}"
    sock = socket.create_connection(("127.0.0.1", db.srv.ports["database"]), timeout=30)
    sock.sendall(f"GET {p}.json?ns={db.ns} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
                 f"Authorization: Bearer owner\r\n\r\n".encode())
    time.sleep(0.3)
    pad = "x" * 32_000
    writes = 2000  # ~64 MB of events: more than socket buffers and the 1024-change queue hold
    for i in range(writes):
        assert db.put(f"{p}/v.json", {"i": i, "pad": pad}, params={"print": "silent"}).status_code == 204
    received = bytearray()
    deadline = time.time() + 120
    while not received.endswith(b"\r\n0\r\n\r\n") and time.time() < deadline:
        chunk = sock.recv(1 << 20)
        if not chunk:
            break
        received += chunk
    sock.close()
    assert db.get(f"{p}/v/i.json").json() == writes - 1
    seen = [int(m) for m in re.findall(rb'"i":(\d+)', bytes(received))]
    assert received.endswith(b"\r\n0\r\n\r\n"), f"the stream was not ended after {len(seen)} events"
    assert seen[0] == 0 and seen == list(range(len(seen)))  # in order, no gaps
    assert len(seen) < writes
