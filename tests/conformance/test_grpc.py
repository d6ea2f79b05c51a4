"""Firestore's gRPC API on the Firestore port, through the high-level ``google.cloud.firestore.Client``.

The client talks grpcio (HTTP/2 with prior knowledge) to ``FIRESTORE_EMULATOR_HOST`` and sends
``authorization: Bearer owner``, as it does against Google's emulator. The REST API keeps
working on the same port.
"""

from __future__ import annotations

import datetime as dt
import os
import threading

import pytest
import requests
from google.api_core import exceptions as gexc
from google.cloud import firestore
from google.cloud.firestore_v1.base_query import FieldFilter, Or

from conftest import PROJECT
from fsutil import new_collection_id


def _client(server, database: str | None = None) -> firestore.Client:
    previous = os.environ.get("FIRESTORE_EMULATOR_HOST")
    os.environ["FIRESTORE_EMULATOR_HOST"] = f"127.0.0.1:{server.port}"
    try:
        return firestore.Client(project=PROJECT, database=database) if database else firestore.Client(project=PROJECT)
    finally:
        if previous is None:
            os.environ.pop("FIRESTORE_EMULATOR_HOST", None)
        else:
            os.environ["FIRESTORE_EMULATOR_HOST"] = previous


@pytest.fixture(scope="module")
def db(server):
    client = _client(server)
    yield client
    client.close()


@pytest.fixture
def col(db):
    return db.collection(new_collection_id("g"))


def test_crud(col):
    ref = col.document("alice")
    assert not ref.get().exists
    ref.set({"name": "Alice", "age": 30, "tags": ["a", "b"], "nested": {"x": 1.5}, "nothing": None})
    snap = ref.get()
    assert snap.exists
    assert snap.to_dict() == {"name": "Alice", "age": 30, "tags": ["a", "b"], "nested": {"x": 1.5}, "nothing": None}
    assert snap.create_time is not None and snap.update_time is not None
    with pytest.raises(gexc.AlreadyExists):
        ref.create({"name": "again"})
    ref.update({"age": 31, "nested.y": "z"})
    assert ref.get().to_dict()["nested"] == {"x": 1.5, "y": "z"}
    assert ref.get(field_paths=["age"]).to_dict() == {"age": 31}
    with pytest.raises(gexc.NotFound):
        col.document("nobody").update({"a": 1})
    ref.delete()
    assert not ref.get().exists
    # Auto ids through CreateDocument-style add().
    _, added = col.add({"k": 1})
    assert len(added.id) == 20 and added.get().to_dict() == {"k": 1}


def test_values_round_trip(col):
    ref = col.document("values")
    when = dt.datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=dt.timezone.utc)
    data = {
        "b": True, "i": -(2**63), "d": float("inf"), "s": "ünïcødé", "by": b"\x00\xff",
        "t": when, "g": firestore.GeoPoint(12.5, -45.25), "r": col.document("other"),
        "a": [1, "two", {"three": [3]}], "m": {"deep": {"er": [None]}},
    }
    ref.set(data)
    got = ref.get().to_dict()
    assert got["b"] is True and got["i"] == -(2**63) and got["d"] == float("inf") and got["s"] == "ünïcødé"
    assert got["by"] == b"\x00\xff" and got["t"] == when and got["g"] == firestore.GeoPoint(12.5, -45.25)
    assert got["r"].path == col.document("other").path
    assert got["a"] == [1, "two", {"three": [3]}] and got["m"] == {"deep": {"er": [None]}}


def test_set_merge_update_and_transforms(col):
    ref = col.document("t")
    ref.set({"count": 1, "keep": "yes", "arr": [1, 2]})
    ref.set({"count": firestore.Increment(4), "when": firestore.SERVER_TIMESTAMP, "arr": firestore.ArrayUnion([2, 3])}, merge=True)
    got = ref.get().to_dict()
    assert got["count"] == 5 and got["keep"] == "yes" and got["arr"] == [1, 2, 3]
    assert isinstance(got["when"], dt.datetime)
    ref.update({"arr": firestore.ArrayRemove([1]), "count": firestore.Increment(0.5)})
    got = ref.get().to_dict()
    assert got["arr"] == [2, 3] and got["count"] == 5.5
    ref.set({"only": True})
    assert ref.get().to_dict() == {"only": True}
    ref.update({"only": firestore.DELETE_FIELD, "x": 1})
    assert ref.get().to_dict() == {"x": 1}


def test_queries(col):
    for i in range(10):
        col.document(f"d{i}").set({"n": i, "even": i % 2 == 0, "tags": [f"t{i % 3}"], "name": f"doc{i}"})
    nums = lambda q: [s.get("n") for s in q.stream()]  # noqa: E731
    assert nums(col.where(filter=FieldFilter("n", ">=", 7)).order_by("n")) == [7, 8, 9]
    assert nums(col.where(filter=FieldFilter("even", "==", True)).order_by("n", direction=firestore.Query.DESCENDING)) == [8, 6, 4, 2, 0]
    assert nums(col.where(filter=FieldFilter("n", "in", [1, 5, 42])).order_by("n")) == [1, 5]
    assert nums(col.where(filter=FieldFilter("tags", "array_contains", "t1")).order_by("n")) == [1, 4, 7]
    assert nums(col.order_by("n").limit(3)) == [0, 1, 2]
    assert [s.get("n") for s in col.order_by("n").limit_to_last(2).get()] == [8, 9]
    assert nums(col.order_by("n").start_after({"n": 6})) == [7, 8, 9]
    snap = col.document("d3").get()
    assert nums(col.order_by("n").start_at(snap).end_before({"n": 5})) == [3, 4]
    assert nums(col.order_by("n").offset(8)) == [8, 9]
    either = Or([FieldFilter("n", "==", 0), FieldFilter("n", ">", 8)])
    assert sorted(nums(col.where(filter=either))) == [0, 9]
    assert nums(col.where(filter=FieldFilter("n", "<", 0))) == []
    assert [s.id for s in col.select(["name"]).order_by("n").limit(1).stream()] == ["d0"]
    assert col.select(["name"]).order_by("n").limit(1).get()[0].to_dict() == {"name": "doc0"}


def test_collection_group_and_partitions(db):
    group = new_collection_id("cg")
    parents = [db.collection(new_collection_id("p")).document(f"x{i}") for i in range(3)]
    for i, parent in enumerate(parents):
        for j in range(10):
            parent.collection(group).document(f"m{i}{j}").set({"v": i * 10 + j})
    docs = list(db.collection_group(group).where(filter=FieldFilter("v", ">=", 25)).stream())
    assert sorted(d.get("v") for d in docs) == list(range(25, 30))
    assert len(list(db.collection_group(group).stream())) == 30
    partitions = list(db.collection_group(group).get_partitions(4))
    assert 2 <= len(partitions) <= 4
    seen = []
    for p in partitions:
        seen.extend(d.get("v") for d in p.query().stream())
    assert sorted(seen) == list(range(30))


def test_transaction_contention(db, col):
    counter = col.document("counter")
    counter.set({"n": 0})
    errors = []

    def worker():
        # A @transactional wrapper keeps per-call state (the id to retry): one per thread.
        @firestore.transactional
        def bump(txn):
            snap = counter.get(transaction=txn)
            txn.update(counter, {"n": snap.get("n") + 1})

        try:
            for _ in range(10):
                bump(db.transaction(max_attempts=50))
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert counter.get().get("n") == 80


def test_transaction_reads_and_writes(db, col):
    a, b = col.document("a"), col.document("b")
    a.set({"v": 1})
    txn = db.transaction()

    @firestore.transactional
    def move(txn):
        got = {s.id: s for s in txn.get_all([a, b])}
        assert {k: s.exists for k, s in got.items()} == {"a": True, "b": False}
        assert [s.id for s in txn.get(col.where(filter=FieldFilter("v", "==", 1)))] == ["a"]
        txn.set(b, {"v": got["a"].get("v") + 1})
        txn.delete(a)

    move(txn)
    assert not a.get().exists and b.get().to_dict() == {"v": 2}


def test_batch_and_get_all(db, col):
    batch = db.batch()
    for i in range(5):
        batch.set(col.document(f"b{i}"), {"i": i})
    batch.delete(col.document("b0"))
    results = batch.commit()
    assert len(results) == 6
    snaps = list(db.get_all([col.document(f"b{i}") for i in range(6)]))
    assert sorted((s.id, s.exists) for s in snaps) == [("b0", False), ("b1", True), ("b2", True), ("b3", True), ("b4", True), ("b5", False)]
    bad = db.batch()
    bad.set(col.document("ok"), {"x": 1})
    bad.update(col.document("missing"), {"x": 1})
    with pytest.raises(gexc.NotFound):
        bad.commit()
    assert not col.document("ok").get().exists  # atomic: nothing half-written


def test_bulk_writer(db, col):
    writer = db.bulk_writer()
    for i in range(60):
        writer.create(col.document(f"w{i}"), {"i": i})
    writer.close()
    assert len(list(col.stream())) == 60


def test_aggregations(col):
    for i in range(1, 6):
        col.document(f"a{i}").set({"v": i, "w": i * 1.5})
    count = col.count(alias="c").get()[0][0]
    assert count.alias == "c" and count.value == 5
    assert col.sum("v").get()[0][0].value == 15
    assert col.avg("w").get()[0][0].value == pytest.approx(4.5)
    assert col.where(filter=FieldFilter("v", ">", 3)).count().get()[0][0].value == 2


def test_collections_and_list_documents(db):
    top = db.collection(new_collection_id("top"))
    parent = top.document("p")
    parent.set({"x": 1})
    parent.collection("kids").document("k1").set({})
    parent.collection("pets").document("k2").set({})
    top.document("ghost").collection("sub").document("s").set({})  # "ghost" itself does not exist
    assert sorted(c.id for c in parent.collections()) == ["kids", "pets"]
    assert sorted(d.id for d in top.list_documents()) == ["ghost", "p"]
    assert top.id in [c.id for c in db.collections()]


def test_read_time(col):
    ref = col.document("rt")
    ref.set({"v": 1})
    before = ref.get().update_time
    ref.set({"v": 2})
    assert ref.get().get("v") == 2
    assert ref.get(read_time=before).get("v") == 1
    assert [s.get("v") for s in col.stream(read_time=before)] == [1]


def test_second_database(server, db):
    other = _client(server, database="second-db")
    try:
        name = new_collection_id("n")
        other.collection(name).document("d").set({"where": "second"})
        assert other.collection(name).document("d").get().to_dict() == {"where": "second"}
        assert not db.collection(name).document("d").get().exists
    finally:
        other.close()


def test_rest_on_the_same_port(server, col):
    col.document("both").set({"via": "grpc"})
    r = requests.get(f"http://127.0.0.1:{server.port}/", timeout=10)
    assert r.status_code == 200 and r.text == "Ok"
    path = f"/v1/projects/{PROJECT}/databases/(default)/documents/{col.id}/both"
    r = requests.get(f"http://127.0.0.1:{server.port}{path}", headers={"Authorization": "Bearer owner"}, timeout=10)
    assert r.status_code == 200, r.text
    assert r.json()["fields"] == {"via": {"stringValue": "grpc"}}
    r = requests.patch(f"http://127.0.0.1:{server.port}{path}", headers={"Authorization": "Bearer owner"},
                       json={"fields": {"via": {"stringValue": "rest"}}}, timeout=10)
    assert r.status_code == 200, r.text
    assert col.document("both").get().to_dict() == {"via": "rest"}
