"""Realtime listeners through google-cloud-firestore's own Watch (the gRPC Listen stream).

``on_snapshot`` on documents, collections and queries with adds, modifies and removes; many
listeners on one document; limit windows; resume after a server restart (Hearth only: the
emulator keeps no data); and the Listen stream's bad input through grpcio directly.
"""

from __future__ import annotations

import os
import threading
import time
from contextlib import contextmanager

import grpc
import pytest
from google.cloud import firestore
from google.cloud.firestore_v1 import types as fs_types

from conftest import PROJECT, HearthServer, TARGET, _free_port
from fsutil import new_collection_id

WAIT_S = 20.0
DB = f"projects/{PROJECT}/databases/(default)"


# Clients are made from several threads at once (the replicas tests): the variable is process-wide.
_env_lock = threading.Lock()


@contextmanager
def emulator_host(port: int):
    with _env_lock:
        old = os.environ.get("FIRESTORE_EMULATOR_HOST")
        os.environ["FIRESTORE_EMULATOR_HOST"] = f"127.0.0.1:{port}"
        try:
            yield
        finally:
            if old is None:
                os.environ.pop("FIRESTORE_EMULATOR_HOST", None)
            else:
                os.environ["FIRESTORE_EMULATOR_HOST"] = old


def make_client(port: int) -> firestore.Client:
    with emulator_host(port):
        return firestore.Client(project=PROJECT)


@pytest.fixture
def client(server):
    c = make_client(server.port)
    yield c
    c.close()


class Recorder:
    """Collects on_snapshot callbacks; ``wait_for`` blocks until a predicate holds."""

    def __init__(self):
        self.cond = threading.Condition()
        self.snapshots = []  # (sorted ids, {id: dict}, [(change type name, id)], read_time)

    def __call__(self, docs, changes, read_time):
        with self.cond:
            state = {d.id: d.to_dict() for d in docs if d.exists}
            self.snapshots.append((sorted(state), state, [(c.type.name, c.document.id) for c in changes], read_time))
            self.cond.notify_all()

    def wait_for(self, predicate, what: str):
        deadline = time.monotonic() + WAIT_S
        with self.cond:
            while True:
                if self.snapshots and predicate(self.snapshots[-1]):
                    return self.snapshots[-1]
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"timed out waiting for {what}; snapshots: {self.snapshots}")
                self.cond.wait(left)


def test_document_listener_sees_create_update_delete(client):
    ref = client.collection(new_collection_id("watchdoc")).document("d")
    rec = Recorder()
    watch = ref.on_snapshot(rec)
    try:
        rec.wait_for(lambda s: s[0] == [], "the initial (missing) snapshot")
        ref.set({"n": 1})
        rec.wait_for(lambda s: s[1].get("d") == {"n": 1}, "the created document")
        ref.update({"n": firestore.Increment(2)})
        rec.wait_for(lambda s: s[1].get("d") == {"n": 3}, "the updated document")
        ref.delete()
        rec.wait_for(lambda s: s[0] == [], "the deleted document")
    finally:
        watch.unsubscribe()
    read_times = [s[3] for s in rec.snapshots]
    assert read_times == sorted(read_times)


def test_collection_listener_adds_modifies_removes(client):
    col = client.collection(new_collection_id("watchcol"))
    col.document("a").set({"v": 1})
    rec = Recorder()
    watch = col.on_snapshot(rec)
    try:
        snap = rec.wait_for(lambda s: s[0] == ["a"], "initial results")
        assert snap[2] == [("ADDED", "a")]
        col.document("b").set({"v": 2})
        snap = rec.wait_for(lambda s: s[0] == ["a", "b"], "b added")
        assert snap[2] == [("ADDED", "b")]
        col.document("a").set({"v": 10})
        snap = rec.wait_for(lambda s: s[1]["a"] == {"v": 10}, "a modified")
        assert snap[2] == [("MODIFIED", "a")]
        col.document("b").delete()
        snap = rec.wait_for(lambda s: s[0] == ["a"], "b removed")
        assert snap[2] == [("REMOVED", "b")]
        # One batch of three writes arrives as one snapshot.
        batch = client.batch()
        for i in ("x", "y", "z"):
            batch.set(col.document(i), {"v": 0})
        batch.commit()
        snap = rec.wait_for(lambda s: "z" in s[0], "the batch")
        assert snap[0] == ["a", "x", "y", "z"]
        assert sorted(snap[2]) == [("ADDED", "x"), ("ADDED", "y"), ("ADDED", "z")]
    finally:
        watch.unsubscribe()


def test_query_listener_with_filter_order_and_limit(client):
    col = client.collection(new_collection_id("watchq"))
    for i, (team, score) in enumerate([("red", 5), ("red", 3), ("blue", 9), ("red", 8)]):
        col.document(f"p{i}").set({"team": team, "score": score})
    query = col.where(filter=firestore.FieldFilter("team", "==", "red")).order_by("score", direction="DESCENDING").limit(2)
    rec = Recorder()
    watch = query.on_snapshot(rec)
    try:
        rec.wait_for(lambda s: s[0] == ["p0", "p3"], "the top two red scores")
        # A new top score pushes p0 (5) out of the window.
        col.document("p9").set({"team": "red", "score": 7})
        snap = rec.wait_for(lambda s: s[0] == ["p3", "p9"], "p9 entering, p0 leaving")
        assert sorted(snap[2]) == [("ADDED", "p9"), ("REMOVED", "p0")]
        # p3 leaves the team: p0 comes back into the window.
        col.document("p3").update({"team": "blue"})
        rec.wait_for(lambda s: s[0] == ["p0", "p9"], "the window refilled")
        # Changes outside the query do not disturb it.
        col.document("p2").update({"score": 100})
        col.document("p9").update({"score": 1})
        rec.wait_for(lambda s: s[0] == ["p0", "p1"], "p9 falling out of the window")
    finally:
        watch.unsubscribe()


def test_many_listeners_on_one_document(client):
    ref = client.collection(new_collection_id("fanout")).document("hot")
    ref.set({"n": 0})
    recs = [Recorder() for _ in range(25)]
    watches = [ref.on_snapshot(r) for r in recs]
    try:
        for r in recs:
            r.wait_for(lambda s: s[1].get("hot") == {"n": 0}, "initial")
        ref.set({"n": 1})
        for r in recs:
            r.wait_for(lambda s: s[1].get("hot") == {"n": 1}, "the write")
    finally:
        for w in watches:
            w.unsubscribe()


def test_collection_group_listener(client):
    group = new_collection_id("cg")
    root = client.collection(new_collection_id("parents"))
    root.document("a").collection(group).document("x").set({"v": 1})
    rec = Recorder()
    watch = client.collection_group(group).on_snapshot(rec)
    try:
        rec.wait_for(lambda s: s[0] == ["x"], "initial")
        root.document("b").collection(group).document("y").set({"v": 2})
        rec.wait_for(lambda s: s[0] == ["x", "y"], "y from another parent")
    finally:
        watch.unsubscribe()


@pytest.mark.hearth_only(reason="the emulator keeps data in memory; a restart loses it")
@pytest.mark.single_server(reason="restarts one process on the same fixed --firestore-port (test_replicas_realtime.py kills a replica instead)")
def test_listener_resumes_after_server_restart(tmp_path):
    binary = os.environ["HEARTH_BIN"]
    port = _free_port()
    srv = HearthServer(binary, tmp_path, extra_args=("--firestore-port", str(port)))
    srv.start()
    try:
        assert srv.port == port
        c = make_client(port)
        col = c.collection("resume")
        col.document("a").set({"v": 1})
        rec = Recorder()
        watch = col.on_snapshot(rec)
        try:
            rec.wait_for(lambda s: s[0] == ["a"], "initial")
            srv.stop()
            srv.start()
            assert srv.port == port
            col.document("b").set({"v": 2})
            rec.wait_for(lambda s: s[0] == ["a", "b"], "a write after the restart")
        finally:
            watch.unsubscribe()
            c.close()
    finally:
        srv.stop()


# ---------------------------------------------------------------------------------------------
# The raw Listen stream, through grpcio
# ---------------------------------------------------------------------------------------------


def listen(server, requests, timeout=10.0, metadata=(("authorization", "Bearer owner"),), until=None):
    # Google's emulator needs the routing header the client libraries send; Hearth does not.
    prefix = next((r.database for r in requests if not isinstance(r, bytes) and r.database), DB)
    metadata = tuple(metadata) + (("google-cloud-resource-prefix", prefix),)
    """Sends the requests (then keeps the stream open briefly) and returns (responses, error). The
    request side closes after the first global snapshot, or, with `until`, once `until(responses)`
    holds after a global snapshot (targets judged by rules may end after the first one)."""
    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
    call = channel.stream_stream(
        "/google.firestore.v1.Firestore/Listen",
        request_serializer=lambda m: m if isinstance(m, bytes) else fs_types.ListenRequest.serialize(m),
        response_deserializer=fs_types.ListenResponse.deserialize,
    )
    done = threading.Event()

    def gen():
        yield from requests
        done.wait(2.0)

    responses, error, seen_global = [], None, False
    try:
        for r in call(gen(), metadata=metadata, timeout=timeout):
            responses.append(r)
            tc = r.target_change
            if tc.target_change_type == fs_types.TargetChange.TargetChangeType.NO_CHANGE and not tc.target_ids and tc.read_time:
                seen_global = True
            if seen_global and (until is None or until(responses)):
                done.set()
    except grpc.RpcError as e:
        error = e
    finally:
        channel.close()
    return responses, error


def add_query(target_id, collection, db=DB, **kw):
    return fs_types.ListenRequest(
        database=db,
        add_target=fs_types.Target(
            target_id=target_id,
            query=fs_types.Target.QueryTarget(
                parent=f"{db}/documents", structured_query=fs_types.StructuredQuery(
                    from_=[fs_types.StructuredQuery.CollectionSelector(collection_id=collection)])),
            **kw))


def test_raw_listen_protocol_sequence(server, client):
    col = new_collection_id("raw")
    client.collection(col).document("a").set({"v": 1})
    responses, error = listen(server, [add_query(42, col)])
    if TARGET == "hearth":
        # Hearth ends the stream with OK when the client half-closes (the emulator says UNKNOWN).
        assert error is None
    kinds = []
    for r in responses:
        which = fs_types.ListenResponse.pb(r).WhichOneof("response_type")
        if which == "target_change":
            kinds.append((fs_types.TargetChange.TargetChangeType(r.target_change.target_change_type).name, list(r.target_change.target_ids)))
        else:
            kinds.append((which, list(r.document_change.target_ids)))
    assert kinds[0] == ("ADD", [42])
    assert ("document_change", [42]) in kinds
    assert kinds.index(("CURRENT", [42])) > kinds.index(("document_change", [42]))
    assert kinds[-1] == ("NO_CHANGE", [])
    current = next(r for r in responses if r.target_change.target_change_type == fs_types.TargetChange.TargetChangeType.CURRENT)
    assert current.target_change.resume_token


@pytest.mark.hearth_only(reason="the emulator's answers to malformed Listen requests differ")
def test_raw_listen_bad_input(server):
    # Duplicate target ids end the stream with INVALID_ARGUMENT.
    _, error = listen(server, [add_query(1, "dup"), add_query(1, "dup")])
    assert error is not None and error.code() == grpc.StatusCode.INVALID_ARGUMENT
    # Removing an unknown target.
    _, error = listen(server, [fs_types.ListenRequest(database=DB, remove_target=77)])
    assert error is not None and error.code() == grpc.StatusCode.INVALID_ARGUMENT
    # A resume token Hearth never issued.
    _, error = listen(server, [add_query(3, "tok", resume_token=b"\x00garbage")])
    assert error is not None and error.code() == grpc.StatusCode.INVALID_ARGUMENT
    # Bytes that are not a ListenRequest.
    _, error = listen(server, [b"\xff\xff\xff\xff"])
    assert error is not None and error.code() == grpc.StatusCode.INVALID_ARGUMENT
    # The first message must name the database.
    _, error = listen(server, [fs_types.ListenRequest(remove_target=1)])
    assert error is not None and error.code() == grpc.StatusCode.INVALID_ARGUMENT
    # The server is still up and serving.
    responses, _ = listen(server, [add_query(5, "after")])
    assert responses and responses[0].target_change.target_ids == [5]


def test_listen_obeys_security_rules(server):
    """A signed-in user's targets are judged by the rules: their own document is served; another
    user's document and an unconstrained query are removed with PERMISSION_DENIED; the stream
    goes on."""
    import requests as http
    from test_rules import token

    project = "demo-listenrules"
    db = f"projects/{project}/databases/(default)"
    rules = """rules_version = '2';
service cloud.firestore {
  match /databases/{database}/documents {
    match /users/{uid} {
      allow read: if request.auth != null && request.auth.uid == uid;
    }
  }
}"""
    r = http.put(f"{server.rest_base}/emulator/v1/projects/{project}:securityRules",
                 json={"rules": {"files": [{"name": "firestore.rules", "content": rules}]}}, timeout=30)
    assert r.status_code == 200, r.text
    for uid in ("alice", "bob"):
        r = http.patch(f"{server.rest_base}/v1/{db}/documents/users/{uid}", headers={"Authorization": "Bearer owner"},
                       json={"fields": {"name": {"stringValue": uid}}}, timeout=30)
        assert r.status_code == 200, r.text

    def add_docs(target_id, *paths):
        return fs_types.ListenRequest(database=db, add_target=fs_types.Target(
            target_id=target_id, documents=fs_types.Target.DocumentsTarget(documents=[f"{db}/documents/{p}" for p in paths])))

    def both_removed(responses):
        ended = {t for r in responses for t in r.target_change.target_ids
                 if r.target_change.target_change_type == fs_types.TargetChange.TargetChangeType.REMOVE}
        return {2, 3} <= ended

    responses, _ = listen(server, [add_docs(1, "users/alice"), add_docs(2, "users/bob"), add_query(3, "users", db=db)],
                          metadata=(("authorization", "Bearer " + token("alice")),), until=both_removed)
    removed = {}
    docs = set()
    for resp in responses:
        which = fs_types.ListenResponse.pb(resp).WhichOneof("response_type")
        if which == "target_change" and resp.target_change.target_change_type == fs_types.TargetChange.TargetChangeType.REMOVE:
            for t in resp.target_change.target_ids:
                removed[t] = resp.target_change.cause.code
        elif which == "document_change":
            docs.add(resp.document_change.document.name.rsplit("/", 1)[-1])
    assert removed == {2: grpc.StatusCode.PERMISSION_DENIED.value[0], 3: grpc.StatusCode.PERMISSION_DENIED.value[0]}
    assert docs == {"alice"}
