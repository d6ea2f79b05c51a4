"""Two `hearth serve --database-url` processes over ONE PostgreSQL database (docs/postgres.md,
"Several replicas"): a listener on one server hears every write made on the other — each change
once, in commit order — and a Listen stream resumed on the other server with its resume token
misses nothing.

The database comes from ``HEARTH_TEST_DATABASE_URL`` (an admin URL: a fresh database is created
on it) or, without it, from a PostgreSQL of the test's own (``LocalPostgres``); skipped, with the
reason, where neither is available."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import grpc

import pytest
from google.cloud import firestore
from google.cloud.firestore_v1 import types as fs_types

from conftest import HearthServer, TARGET, fresh_database_url
from fsutil import new_collection_id
from test_listen import DB, Recorder, add_query, listen, make_client

pytestmark = pytest.mark.skipif(TARGET != "hearth", reason="several servers over one PostgreSQL database are Hearth's own")


@pytest.fixture(scope="module")
def database_url():
    """A new database: on HEARTH_TEST_DATABASE_URL's server, else on a PostgreSQL of our own."""
    yield from fresh_database_url()


@pytest.fixture(scope="module")
def replicas(database_url, tmp_path_factory):
    """Two servers, each with its own data directory, over the one database."""
    binary = os.environ.get("HEARTH_BIN")
    if not binary:
        pytest.skip("HEARTH_BIN is not set")
    servers = [HearthServer(binary, Path(tmp_path_factory.mktemp(name)), database_url=database_url) for name in ("replica-a", "replica-b")]
    try:
        for s in servers:
            s.start()
        yield servers
    finally:
        for s in servers:
            s.stop()


def changes_since(rec: Recorder, start: int) -> list:
    with rec.cond:
        return [c for snap in rec.snapshots[start:] for c in snap[2]]


def test_listener_on_one_server_hears_every_write_on_the_other(replicas):
    a, b = replicas
    reader, writer = make_client(a.port), make_client(b.port)
    col_id = new_collection_id("replicas")
    col = writer.collection(col_id)
    col.document("seed").set({"v": 0})
    rec = Recorder()
    watch = reader.collection(col_id).on_snapshot(rec)
    try:
        rec.wait_for(lambda s: s[0] == ["seed"], "the initial snapshot on A")
        seen = len(rec.snapshots)

        def step(write, what, state_ok, changes):
            """One write on B; the listener on A reaches the state, and the changes it was told
            since the previous step are exactly `changes` (each once; sorted within one commit)."""
            nonlocal seen
            write()
            rec.wait_for(state_ok, what)
            got = changes_since(rec, seen)
            assert sorted(got) == sorted(changes) and len(got) == len(changes), f"{what}: {got}"
            with rec.cond:
                seen = len(rec.snapshots)

        step(lambda: col.document("x").set({"v": 1}), "a set on B", lambda s: s[1].get("x") == {"v": 1}, [("ADDED", "x")])
        step(lambda: col.document("x").update({"w": 2}), "an update on B", lambda s: s[1].get("x") == {"v": 1, "w": 2},
             [("MODIFIED", "x")])
        step(lambda: col.document("seed").delete(), "a delete on B", lambda s: "seed" not in s[1], [("REMOVED", "seed")])

        def batch():
            wb = writer.batch()
            wb.set(col.document("y"), {"v": 3})
            wb.set(col.document("z"), {"v": 4})
            wb.update(col.document("x"), {"v": 5})
            wb.commit()

        step(batch, "a batch on B", lambda s: s[0] == ["x", "y", "z"] and s[1]["x"]["v"] == 5,
             [("ADDED", "y"), ("ADDED", "z"), ("MODIFIED", "x")])

        @firestore.transactional
        def move(transaction):
            y = col.document("y").get(transaction=transaction).to_dict()
            transaction.update(col.document("z"), {"v": y["v"] + 100})
            transaction.delete(col.document("y"))

        step(lambda: move(writer.transaction()), "a transaction on B", lambda s: s[0] == ["x", "z"] and s[1]["z"]["v"] == 103,
             [("REMOVED", "y"), ("MODIFIED", "z")])

        # Many quick writes on B: the listener's last state has them all, each change once.
        for i in range(20):
            col.document(f"n{i:02}").set({"i": i})
        rec.wait_for(lambda s: all(f"n{i:02}" in s[1] for i in range(20)), "twenty quick writes on B")
        got = changes_since(rec, seen)
        assert sorted(got) == sorted(("ADDED", f"n{i:02}") for i in range(20)), got
    finally:
        watch.unsubscribe()
        reader.close()
        writer.close()


def listen_until(server, requests, until, wait: float = 30.0):
    """A raw Listen stream (as test_listen.listen) held open until ``until(responses)`` holds
    after a global snapshot, or ``wait`` seconds; returns (responses, error)."""
    metadata = (("authorization", "Bearer owner"), ("google-cloud-resource-prefix", DB))
    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
    call = channel.stream_stream(
        "/google.firestore.v1.Firestore/Listen", request_serializer=fs_types.ListenRequest.serialize,
        response_deserializer=fs_types.ListenResponse.deserialize)
    done = threading.Event()

    def gen():
        yield from requests
        done.wait(wait)

    responses, error, seen_global = [], None, False
    try:
        for r in call(gen(), metadata=metadata, timeout=wait + 10):
            responses.append(r)
            tc = r.target_change
            if tc.target_change_type == fs_types.TargetChange.TargetChangeType.NO_CHANGE and not tc.target_ids and tc.read_time:
                seen_global = True
            if seen_global and until(responses):
                done.set()
    except grpc.RpcError as e:
        error = e
    finally:
        channel.close()
    return responses, error


def names(responses) -> set:
    return {r.document_change.document.name.rsplit("/", 1)[-1] for r in responses if r.document_change.document.name}


def last_token(responses) -> bytes:
    tokens = [r.target_change.resume_token for r in responses if r.target_change.resume_token]
    assert tokens, responses
    return tokens[-1]


def test_listen_resumed_on_the_other_server_misses_nothing(replicas):
    a, b = replicas
    writer_a, writer_b = make_client(a.port), make_client(b.port)
    col_id = new_collection_id("resume")
    try:
        writer_a.collection(col_id).document("kept").set({"v": 1})
        writer_a.collection(col_id).document("changed").set({"v": 1})
        writer_a.collection(col_id).document("gone").set({"v": 1})
        # A Listen stream on A: its initial snapshot and resume token.
        responses, error = listen(a, [add_query(1, col_id)])
        assert error is None, error
        first = {r.document_change.document.name.rsplit("/", 1)[-1] for r in responses if r.document_change.document.name}
        assert first == {"kept", "changed", "gone"}
        token = last_token(responses)

        # Writes on both servers after the token.
        writer_b.collection(col_id).document("changed").set({"v": 2})
        writer_a.collection(col_id).document("gone").delete()
        writer_b.collection(col_id).document("new").set({"v": 3})

        # The stream resumed on B with A's token: what changed since, nothing else, nothing missed;
        # then a write made on A after the resume reaches it through B's change feed.
        late = {"written": False}

        def complete(rs):
            deleted = {(r.document_delete.document or r.document_remove.document).rsplit("/", 1)[-1]
                       for r in rs if r.document_delete.document or r.document_remove.document}
            if not (names(rs) >= {"changed", "new"} and "gone" in deleted):
                return False
            if not late["written"]:
                late["written"] = True
                writer_a.collection(col_id).document("late").set({"v": 4})
                return False
            return "late" in names(rs)

        responses, error = listen_until(b, [add_query(1, col_id, resume_token=token)], until=complete)
        assert error is None, error
        assert late["written"] and "late" in names(responses), "a write on A after the resume reaches the stream on B"
        responses = [r for r in responses if r.document_change.document.name.rsplit("/", 1)[-1] != "late"]
        changed = {r.document_change.document.name.rsplit("/", 1)[-1]: dict(r.document_change.document.fields)
                   for r in responses if r.document_change.document.name}
        assert set(changed) == {"changed", "new"}, changed
        assert changed["changed"]["v"].integer_value == 2 and changed["new"]["v"].integer_value == 3
        deleted = {(r.document_delete.document or r.document_remove.document).rsplit("/", 1)[-1]
                   for r in responses if r.document_delete.document or r.document_remove.document}
        assert deleted == {"gone"}, deleted
        kinds = {fs_types.ListenResponse.pb(r).WhichOneof("response_type") for r in responses}
        assert "filter" not in kinds, "the state at the token was readable: an exact delta, no existence filter"
    finally:
        writer_a.close()
        writer_b.close()
