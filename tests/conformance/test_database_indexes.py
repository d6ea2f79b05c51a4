"""`.indexOn` indexes, Firebase's `Index not defined` answer in production, the rules file
reloaded when it changes, and denials explained in emulator mode (`X-Firebase-Auth-Debug`)."""

from __future__ import annotations

import json
import os
import time

import pytest

from authutil import start
from dbutil import DatabaseRest, unique

pytestmark = pytest.mark.hearth_only(reason="the Realtime Database is served by Hearth, not by the Firestore emulator")


def put_rules(db: DatabaseRest, rules: dict):
    r = db.request("PUT", "/.settings/rules.json", data=json.dumps(rules))
    assert r.status_code == 200, r.text


@pytest.fixture
def admin_db(server):
    """firebase-admin's `db` module against the database port, on a fresh namespace."""
    import firebase_admin
    from firebase_admin import db as admin_db

    ns = unique("idx")
    os.environ["FIREBASE_DATABASE_EMULATOR_HOST"] = f"127.0.0.1:{server.ports['database']}"
    app = firebase_admin.initialize_app(options={"databaseURL": f"https://{ns}.firebaseio.com"}, name=unique("dbapp"))
    try:
        yield ns, admin_db.reference("/", app)
    finally:
        firebase_admin.delete_app(app)
        os.environ.pop("FIREBASE_DATABASE_EMULATOR_HOST", None)


def test_firebase_admin_order_by_child_limit_is_served_from_the_index(server, admin_db):
    ns, root = admin_db
    raw = DatabaseRest(server, ns=ns)
    put_rules(raw, {"rules": {"scores": {".indexOn": ["points", "meta/level", ".value"]},
                              "boards": {"$board": {".indexOn": "points"}}}})
    players = {f"p{i:04d}": {"points": (i * 37) % 1000, "meta": {"level": i % 7}} for i in range(2000)}
    players["nopoints"] = {"meta": {"level": 3}}
    players["text"] = {"points": "many"}
    root.child("scores").set(players)

    def expected(key, first=None, last=None, start=None, end=None):
        rows = [(k, v) for k, v in players.items()]
        def sort(kv):
            value = kv[1]
            for part in key.split("/"):
                value = value.get(part) if isinstance(value, dict) else None
            rank = 0 if value is None else (3 if isinstance(value, (int, float)) else 4)
            return (rank, value if rank == 3 else 0, value if rank == 4 else "", kv[0])
        rows.sort(key=sort)
        if start is not None:
            rows = [kv for kv in rows if sort(kv)[0] != 3 or sort(kv)[1] >= start]
            rows = [kv for kv in rows if sort(kv)[0] >= 3]
        if end is not None:
            rows = [kv for kv in rows if sort(kv)[0] < 3 or (sort(kv)[0] == 3 and sort(kv)[1] <= end)]
        if first is not None:
            rows = rows[:first]
        if last is not None:
            rows = rows[-last:]
        return [k for k, _ in rows]

    top = root.child("scores").order_by_child("points").limit_to_first(10).get()
    assert list(top.keys()) == expected("points", first=10)
    assert list(top.keys())[0] == "nopoints"  # null sorts first
    best = root.child("scores").order_by_child("points").limit_to_last(3).get()
    assert list(best.keys()) == expected("points", last=3)
    assert list(best.keys())[-1] == "text"  # strings after numbers
    window = root.child("scores").order_by_child("points").start_at(100).end_at(120).get()
    assert list(window.keys()) == expected("points", start=100, end=120)
    assert all(100 <= v["points"] <= 120 for v in window.values())
    nested = root.child("scores").order_by_child("meta/level").equal_to(6).limit_to_first(5).get()
    assert [v["meta"]["level"] for v in nested.values()] == [6] * 5

    # The index follows writes: a new leader, a deleted one, a field changed to an object.
    root.child("scores/p0000").delete()
    root.child("scores/zz").set({"points": -5})
    root.child("scores").update({"p0001/points": {"nested": True}})
    top = root.child("scores").order_by_child("points").limit_to_first(2).get()
    assert list(top.keys()) == ["nopoints", "zz"]
    objects_last = root.child("scores").order_by_child("points").limit_to_last(1).get()
    assert list(objects_last.keys()) == ["p0001"]

    # A wildcard location's index, and $value.
    root.child("boards").set({"b1": {"x": {"points": 3}, "y": {"points": 1}}, "b2": {"z": {"points": 2}}})
    assert list(root.child("boards/b1").order_by_child("points").limit_to_first(1).get().keys()) == ["y"]
    raw.put("/levels.json", {"a": 3, "b": 1, "c": 2})
    put_rules(raw, {"rules": {"levels": {".indexOn": ".value"}}})  # built from the data already there
    assert list(root.child("levels").order_by_value().limit_to_first(2).get().keys()) == ["b", "c"]

    # Emulator mode serves an unindexed query by scanning (the emulator only warns).
    assert list(root.child("scores").order_by_child("meta").limit_to_first(1).get().keys())


def test_production_refuses_unindexed_child_queries_as_firebase_does(tmp_path_factory):
    srv = start(tmp_path_factory, "database-indexes-production", emulator=False,
                extra_args=("--admin-token", "idx-admin-secret"), service_account=False)
    try:
        admin = DatabaseRest(srv, ns="prod-idx", token="idx-admin-secret")
        assert admin.put("/dinosaurs.json", {"a": {"height": 3}, "b": {"height": 1}, "c": {"height": 2}}).status_code == 200
        params = {"orderBy": '"height"', "limitToFirst": "2"}
        r = admin.get("/dinosaurs.json", params=params)
        assert r.status_code == 400
        assert r.json() == {"error": 'Index not defined, add ".indexOn": "height", for path "/dinosaurs", to the rules'}
        r = admin.get("/dinosaurs.json", params={"orderBy": '"$value"'})
        assert r.json() == {"error": 'Index not defined, add ".indexOn": ".value", for path "/dinosaurs", to the rules'}
        # Event streams are refused the same way, before they start.
        r = admin.get("/dinosaurs.json", params=params, headers={"Accept": "text/event-stream"})
        assert r.status_code == 400 and "Index not defined" in r.json()["error"]
        # $key and $priority need no index.
        assert admin.get("/dinosaurs.json", params={"orderBy": '"$key"', "limitToFirst": "1"}).json() == {"a": {"height": 3}}
        put_rules(admin, {"rules": {"dinosaurs": {".indexOn": ["height"]}}})
        r = admin.get("/dinosaurs.json", params=params)
        assert r.status_code == 200 and r.json() == {"b": {"height": 1}, "c": {"height": 2}}
        # A denial in production says only "Permission denied".
        r = DatabaseRest(srv, ns="prod-idx", token=None).get("/dinosaurs.json")
        assert r.status_code == 401 and r.json() == {"error": "Permission denied"}
        assert "X-Firebase-Auth-Debug" not in r.headers
    finally:
        srv.stop()


def wait_for(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def test_rules_file_is_reloaded_when_it_changes_and_a_broken_edit_is_ignored(tmp_path_factory, tmp_path):
    rules_file = tmp_path / "database.rules.json"
    rules_file.write_text(json.dumps({"rules": {"public": {".read": True}}}))
    srv = start(tmp_path_factory, "database-rules-reload", emulator=True, extra_args=("--database-rules", str(rules_file)),
                service_account=False)
    try:
        admin = DatabaseRest(srv, ns=None)
        anonymous = DatabaseRest(srv, ns=None, token=None)
        assert admin.put("/open/x.json", 1).status_code == 200
        assert anonymous.get("/open/x.json").status_code == 401
        # The denial is explained in emulator mode; the body stays Firebase's.
        denied = anonymous.get("/open/x.json")
        assert denied.json() == {"error": "Permission denied"}
        explanation = denied.headers["X-Firebase-Auth-Debug"]
        assert "/open/x" in explanation and ".read" in explanation

        edited = {"rules": {"public": {".read": True}, "open": {".read": "auth == null", ".indexOn": "n"}}}
        rules_file.write_text(json.dumps(edited))
        assert wait_for(lambda: admin.get("/.settings/rules.json").json() == edited), admin.get("/.settings/rules.json").text
        r = anonymous.get("/open/x.json")
        assert r.status_code == 200 and r.json() == 1

        rules_file.write_text('{"rules": {"open": {".read": "auth ==="}}}')
        assert wait_for(lambda: "database rules not reloaded" in srv.output())
        assert admin.get("/.settings/rules.json").json() == edited
        assert anonymous.get("/open/x.json").status_code == 200
    finally:
        srv.stop()
