"""The Realtime Database's REST API on the database port: reads, writes, push ids, priorities,
server values, ETags, queries, namespaces, print/format/shallow/download; and the same through
firebase-admin's own `db` module (FIREBASE_DATABASE_EMULATOR_HOST)."""

from __future__ import annotations

import json
import re
import time

import pytest

from dbutil import DatabaseRest, unique

pytestmark = pytest.mark.hearth_only(reason="the Realtime Database is served by Hearth, not by the Firestore emulator")


@pytest.fixture(scope="module")
def db(server):
    r = DatabaseRest(server)
    yield r
    r.session.close()


def test_put_get_patch_post_delete(db):
    p = f"/{unique()}"
    r = db.put(f"{p}.json", {"name": "Alice", "age": 30, "tags": ["a", "b"]})
    assert r.status_code == 200 and r.json() == {"name": "Alice", "age": 30, "tags": ["a", "b"]}
    assert db.get(f"{p}/name.json").json() == "Alice"
    assert db.get(f"{p}/tags/1.json").json() == "b"
    r = db.patch(f"{p}.json", {"age": 31, "tags": None, "address/city": "Paris"})
    assert r.status_code == 200 and r.json() == {"age": 31, "tags": None, "address/city": "Paris"}
    assert db.get(f"{p}.json").json() == {"name": "Alice", "age": 31, "address": {"city": "Paris"}}
    r = db.post(f"{p}/list.json", "first")
    name = r.json()["name"]
    assert re.fullmatch(r"[-0-9A-Za-z_]{20}", name)
    second = db.post(f"{p}/list.json", "second").json()["name"]
    assert second > name
    assert db.get(f"{p}/list.json").json() == {name: "first", second: "second"}
    r = db.delete(f"{p}/list.json")
    assert r.status_code == 200 and r.json() is None
    assert db.get(f"{p}/list.json").json() is None
    assert db.get(f"{p}/missing/deep.json").json() is None


def test_print_silent_pretty_shallow_download(db):
    p = f"/{unique()}"
    r = db.put(f"{p}.json", {"a": {"b": 1}, "c": 2}, params={"print": "silent"})
    assert r.status_code == 204 and r.content == b""
    r = db.get(f"{p}.json", params={"print": "pretty"})
    assert r.json() == {"a": {"b": 1}, "c": 2} and "\n" in r.text
    assert db.get(f"{p}.json", params={"shallow": "true"}).json() == {"a": True, "c": True}
    assert db.get(f"{p}/c.json", params={"shallow": "true"}).json() == 2
    r = db.get(f"{p}.json", params={"download": "backup.json"})
    assert 'filename="backup.json"' in r.headers["Content-Disposition"]
    assert db.get(f"{p}.json", params={"timeout": "3s"}).status_code == 200


def test_priorities_and_export_format(db):
    p = f"/{unique()}"
    db.put(f"{p}.json", {"x": {".value": "hi", ".priority": 2}, "y": {"z": 1, ".priority": "p"}})
    assert db.get(f"{p}.json").json() == {"x": "hi", "y": {"z": 1}}
    assert db.get(f"{p}.json", params={"format": "export"}).json() == {
        "x": {".value": "hi", ".priority": 2}, "y": {"z": 1, ".priority": "p"}}
    r = db.get(f"{p}.json", params={"orderBy": '"$priority"', "limitToFirst": "1"})
    assert r.json() == {"x": "hi"}


def test_server_values(db):
    p = f"/{unique()}"
    before = int(time.time() * 1000)
    r = db.put(f"{p}.json", {"at": {".sv": "timestamp"}, "n": {".sv": {"increment": 2}}})
    after = int(time.time() * 1000)
    got = r.json()
    assert before - 5 <= got["at"] <= after + 5 and got["n"] == 2
    db.put(f"{p}/n.json", {".sv": {"increment": 40}})
    assert db.get(f"{p}/n.json").json() == 42


def test_etags_if_match_and_if_none_match(db):
    p = f"/{unique()}"
    db.put(f"{p}.json", {"v": 1})
    r = db.get(f"{p}.json", headers={"X-Firebase-ETag": "true"})
    etag = r.headers["ETag"]
    assert etag
    assert db.get(f"{p}.json", headers={"if-none-match": etag}).status_code == 304
    r = db.put(f"{p}.json", {"v": 2}, headers={"if-match": "stale"})
    assert r.status_code == 412 and r.json() == {"v": 1} and r.headers["ETag"] == etag
    assert db.get(f"{p}.json").json() == {"v": 1}
    r = db.put(f"{p}.json", {"v": 2}, headers={"if-match": etag})
    assert r.status_code == 200 and r.headers["ETag"] != etag
    r = db.delete(f"{p}.json", headers={"if-match": etag})
    assert r.status_code == 412 and r.json() == {"v": 2}


def test_queries_and_mixed_type_order(db):
    p = f"/{unique()}"
    db.put(f"{p}.json", {"a": {"h": 3}, "b": {"h": 1}, "c": {"h": "x"}, "d": {"h": True}, "e": {"g": 1}, "f": {"h": 2}})
    q = lambda **kw: db.get(f"{p}.json", params={"orderBy": '"h"', **kw}).json()
    assert set(q(startAt="2")) == {"a", "c", "f"}
    assert set(q(startAfter="2", endAt="3")) == {"a"}
    assert set(q(endBefore="2")) == {"b", "d", "e"}
    assert set(q(equalTo="true")) == {"d"}
    assert set(q(limitToFirst="2")) == {"e", "d"}  # null < true
    assert set(q(limitToLast="2")) == {"a", "c"}
    assert set(db.get(f"{p}.json", params={"orderBy": '"$key"', "startAt": '"c"', "limitToFirst": "2"}).json()) == {"c", "d"}
    db.put(f"{p}/scores.json", {"x": 5, "y": "s", "z": 1})
    assert set(db.get(f"{p}/scores.json", params={"orderBy": '"$value"', "limitToLast": "2"}).json()) == {"x", "y"}


def test_namespaces_by_parameter_host_and_default(db, server, project):
    p = f"/{unique()}"
    db.put(f"{p}.json", "in-conformance")
    other = DatabaseRest(server, ns="other-ns")
    assert other.get(f"{p}.json").json() is None
    port = server.ports["database"]
    r = other.session.get(f"{other.base}{p}.json", headers={"Host": f"conformance.localhost:{port}"}, timeout=10)
    assert r.json() == "in-conformance"
    default = DatabaseRest(server, ns=None)
    default.put(f"{p}.json", "default")
    assert DatabaseRest(server, ns=f"{project}-default-rtdb").get(f"{p}.json").json() == "default"


def test_rules_settings_endpoint(db, server):
    ns = DatabaseRest(server, ns=unique("rules"))
    r = ns.get("/.settings/rules.json", params={"format": "strict"})
    assert r.status_code == 200 and r.json() == {"rules": {".read": True, ".write": True}}
    rules = {"rules": {"public": {".read": "true"}}}
    assert ns.request("PUT", "/.settings/rules.json", data=json.dumps(rules)).status_code == 200
    assert ns.get("/.settings/rules.json").json() == rules
    r = ns.request("PUT", "/.settings/rules.json", data="{not json")
    assert r.status_code == 400 and "error" in r.json()
    anonymous = DatabaseRest(server, ns=ns.ns, token=None)
    r = anonymous.get("/.settings/rules.json")
    assert r.status_code == 401 and r.json() == {"error": "Permission denied"}


def test_firebase_admin_db_module(server):
    """firebase-admin's own `db` module against the database port (emulator mode)."""
    import os

    import firebase_admin
    from firebase_admin import db as admin_db

    os.environ["FIREBASE_DATABASE_EMULATOR_HOST"] = f"127.0.0.1:{server.ports['database']}"
    app = firebase_admin.initialize_app(
        options={"databaseURL": "https://admin-conformance.firebaseio.com"}, name=unique("dbapp"))
    try:
        root = admin_db.reference(f"/{unique()}", app)
        root.set({"users": {"a": {"n": 1}}})
        ref = root.child("users").push({"n": 2})
        assert ref.get() == {"n": 2}
        root.child("users").update({f"{ref.key}/n": 3, "a/n": 4})
        assert root.child("users").get() == {"a": {"n": 4}, ref.key: {"n": 3}}
        assert root.child("users/a/n").transaction(lambda v: (v or 0) + 1) == 5
        top = root.child("users").order_by_child("n").limit_to_last(1).get()
        assert list(top.keys()) == ["a"]
        events = []
        registration = root.listen(events.append)
        try:
            root.child("users/b").set("x")
            deadline = time.time() + 5
            while len(events) < 2 and time.time() < deadline:
                time.sleep(0.02)
        finally:
            registration.close()
        assert events[0].path == "/" and events[1].path == "/users/b" and events[1].data == "x"
        raw = DatabaseRest(server, ns="admin-conformance")
        assert raw.get(f"{root.path}/users/b.json").json() == "x"
    finally:
        firebase_admin.delete_app(app)
        os.environ.pop("FIREBASE_DATABASE_EMULATOR_HOST", None)
