"""The Realtime Database across replicas (issue 18 part 3, docs/postgres.md "Several replicas"):
two `hearth serve --database-url` processes over ONE PostgreSQL database behave as one Realtime
Database — a listener (REST streaming, `Accept: text/event-stream`, what firebase-admin's
`listen()` uses) on one server hears every write made on the other once, in order, and rules set
on one server hold on the other from its next request on.

Uses HEARTH_TEST_DATABASE_URL's server when it is set, else starts a PostgreSQL of its own
(``LocalPostgres``); skipped, with the reason, where PostgreSQL's binaries are not installed."""

from __future__ import annotations

import os
import threading
import time

import pytest

from conftest import HearthServer, TARGET, fresh_database_url
from dbutil import DatabaseRest, EventStream, unique

pytestmark = pytest.mark.skipif(TARGET != "hearth", reason="hearth serve --database-url is Hearth's own")


@pytest.fixture(scope="module")
def database_url():
    if not os.environ.get("HEARTH_BIN"):
        pytest.skip("HEARTH_BIN is not set")
    yield from fresh_database_url()


@pytest.fixture(scope="module")
def replicas(database_url, tmp_path_factory):
    servers = [HearthServer(os.environ["HEARTH_BIN"], tmp_path_factory.mktemp(f"replica{i}"), database_url=database_url) for i in range(2)]
    try:
        for server in servers:
            server.start()
        yield servers
    finally:
        for server in servers:
            server.stop()


class Stream:
    """An event stream read on a thread of its own, so that events are collected while writes run."""

    def __init__(self, db: DatabaseRest, path: str):
        self.stream = EventStream(db, path)
        self.events: list[tuple[str, object]] = []
        self.cond = threading.Condition()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        try:
            while True:
                event = self.stream.next()
                if event[0] == "keep-alive":
                    continue
                with self.cond:
                    self.events.append(event)
                    self.cond.notify_all()
        except Exception:
            with self.cond:
                self.cond.notify_all()

    def wait_for(self, count: int, timeout: float = 20) -> list[tuple[str, object]]:
        with self.cond:
            self.cond.wait_for(lambda: len(self.events) >= count, timeout=timeout)
            return list(self.events)

    def close(self):
        self.stream.close()


def put(db: DatabaseRest, path: str, value, **kw):
    r = db.put(path, value, **kw)
    assert r.status_code == 200, r.text
    return r


def test_a_listener_on_one_server_hears_every_write_made_on_the_other_once_in_order(replicas):
    a, b = (DatabaseRest(server) for server in replicas)
    p = f"/{unique()}"
    stream = Stream(b, f"{p}.json")
    try:
        assert stream.wait_for(1) == [("put", {"path": "/", "data": None})]
        put(a, f"{p}/users/alice.json", {"name": "Alice", "age": 30})
        name = a.post(f"{p}/log.json", "hello").json()["name"]
        assert a.patch(f"{p}/users/alice.json", {"age": 31}).status_code == 200
        # A multi-path update: one write, several paths, atomically.
        assert a.patch(f"{p}.json", {"users/bob/name": "Bob", "counters/visits": 1}).status_code == 200
        assert a.delete(f"{p}/users/alice.json").status_code == 200
        # A transaction as the SDKs send it: read with the ETag, write only if unchanged.
        current = a.get(f"{p}/counters/visits.json", headers={"X-Firebase-ETag": "true"})
        etag = current.headers["ETag"]
        put(a, f"{p}/counters/visits.json", current.json() + 1, headers={"if-match": etag})
        stale = a.put(f"{p}/counters/visits.json", 99, headers={"if-match": etag})
        assert stale.status_code == 412, stale.text
        put(a, f"{p}/done.json", True)
        expected = [
            ("put", {"path": "/", "data": None}),
            ("put", {"path": "/users/alice", "data": {"age": 30, "name": "Alice"}}),
            ("put", {"path": f"/log/{name}", "data": "hello"}),
            ("patch", {"path": "/users/alice", "data": {"age": 31}}),
            ("put", {"path": "/users/bob/name", "data": "Bob"}),
            ("put", {"path": "/counters/visits", "data": 1}),
            ("put", {"path": "/users/alice", "data": None}),
            ("put", {"path": "/counters/visits", "data": 2}),
            ("put", {"path": "/done", "data": True}),
        ]
        assert stream.wait_for(len(expected)) == expected
        # Nothing arrives twice: the next event after a last write on B itself is that write.
        put(b, f"{p}/last.json", 1)
        assert stream.wait_for(len(expected) + 1) == expected + [("put", {"path": "/last", "data": 1})]
        # Both servers read the same tree.
        assert a.get(f"{p}.json").json() == b.get(f"{p}.json").json()
    finally:
        stream.close()


def test_concurrent_writers_on_both_servers_are_heard_in_the_same_order_everywhere(replicas):
    a, b = (DatabaseRest(server) for server in replicas)
    p = f"/{unique()}"
    streams = [Stream(a, f"{p}.json"), Stream(b, f"{p}.json")]
    try:
        for stream in streams:
            assert stream.wait_for(1) == [("put", {"path": "/", "data": None})]

        def writer(db, base):
            for i in range(15):
                put(db, f"{p}/k{(base + i) % 4}.json", base + i)

        threads = [threading.Thread(target=writer, args=(db, base)) for db, base in ((a, 0), (b, 100))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        on_a, on_b = (stream.wait_for(31) for stream in streams)
        assert len(on_a) == 31 and on_a == on_b, (on_a, on_b)
        # Each key's last event is its stored value.
        last = {}
        for _, event in on_a[1:]:
            last[event["path"][1:]] = event["data"]
        assert last == a.get(f"{p}.json").json() == b.get(f"{p}.json").json()
        # Every write was heard once.
        assert sorted(e["data"] for _, e in on_a[1:]) == sorted([*range(15), *range(100, 115)])
    finally:
        for stream in streams:
            stream.close()


def test_rules_set_on_one_server_hold_on_the_other_at_once(replicas):
    ns = unique("rules")
    admin_a, admin_b = (DatabaseRest(server, ns=ns) for server in replicas)
    anonymous_b = DatabaseRest(replicas[1], ns=ns, token=None)
    open_rules = {"rules": {".read": True, ".write": True}}
    closed_rules = {"rules": {".read": False, ".write": False}}
    put(admin_b, "/.settings/rules.json", open_rules)
    put(anonymous_b, "/x.json", 1)
    assert anonymous_b.get("/x.json").json() == 1
    stream = Stream(anonymous_b, "/x.json")
    try:
        assert stream.wait_for(1) == [("put", {"path": "/", "data": 1})]
        put(admin_a, "/.settings/rules.json", closed_rules)
        # B's very next requests are judged by A's rules.
        denied = anonymous_b.put("/x.json", 2)
        assert denied.status_code == 401 and denied.json() == {"error": "Permission denied"}, denied.text
        assert anonymous_b.get("/x.json").status_code == 401
        assert admin_b.get("/.settings/rules.json").json() == closed_rules
        assert admin_b.get("/x.json").json() == 1, "the denied write stored nothing"
        # B's listener that may no longer read is cancelled.
        assert stream.wait_for(2) == [("put", {"path": "/", "data": 1}), ("cancel", None)]
        put(admin_a, "/.settings/rules.json", open_rules)
        put(anonymous_b, "/x.json", 3)
        assert admin_a.get("/x.json").json() == 3
    finally:
        stream.close()


def test_firebase_admin_listen_on_one_server_hears_the_writes_and_transactions_of_the_other(replicas):
    """firebase-admin's `db` module: `listen()` on B (its REST stream), writes and a transaction on A."""
    import firebase_admin
    from firebase_admin import db as admin_db

    ns = unique("admin")
    refs, apps = [], []
    try:
        # The emulator host is read when an app's database client is first made: one app per server.
        for server in replicas:
            os.environ["FIREBASE_DATABASE_EMULATOR_HOST"] = f"127.0.0.1:{server.ports['database']}"
            app = firebase_admin.initialize_app(options={"databaseURL": f"https://{ns}.firebaseio.com"}, name=unique("replica"))
            apps.append(app)
            refs.append(admin_db.reference(f"/{unique()}", app))
            refs[-1].get()
        on_b = admin_db.reference(refs[0].path, apps[1])
        on_a = refs[0]
        events, cond = [], threading.Condition()

        def record(event):
            with cond:
                events.append((event.event_type, event.path, event.data))
                cond.notify_all()

        registration = on_b.listen(record)
        try:
            def wait_for(count):
                with cond:
                    cond.wait_for(lambda: len(events) >= count, timeout=20)
                    return list(events)

            assert wait_for(1) == [("put", "/", None)]
            on_a.child("users/alice").set({"name": "Alice"})
            key = on_a.child("log").push("hello").key
            on_a.update({"users/bob/name": "Bob", "counters/visits": 1})
            on_a.child("users/alice").delete()
            assert on_a.child("counters/visits").transaction(lambda v: (v or 0) + 1) == 2
            expected = [
                ("put", "/", None),
                ("put", "/users/alice", {"name": "Alice"}),
                ("put", f"/log/{key}", "hello"),
                ("put", "/users/bob/name", "Bob"),
                ("put", "/counters/visits", 1),
                ("put", "/users/alice", None),
                ("put", "/counters/visits", 2),
            ]
            assert wait_for(len(expected)) == expected
            time.sleep(1.5)
            assert wait_for(len(expected)) == expected, "nothing arrives twice"
        finally:
            registration.close()
    finally:
        for app in apps:
            firebase_admin.delete_app(app)
        os.environ.pop("FIREBASE_DATABASE_EMULATOR_HOST", None)
