"""Read-write transactions whose clients sit on different replicas (issue 18 part 3): Firestore's
serializability must hold across replicas — concurrent transactional increments of one document
from clients on replicas A and B lose no increment, and a transaction's requests may reach any
replica (REST clients spread one transaction's calls over their pooled connections).

Runs only over PostgreSQL (``HEARTH_TEST_DATABASE_URL``). docs/postgres.md, "Testing several replicas"."""

from __future__ import annotations

import os
import threading

import pytest
from google.cloud import firestore

from conftest import DATABASE_ADMIN_URL, PROJECT, TARGET, HearthServer, separate_grpc_connections
from fsutil import new_collection_id
from test_listen import make_client

pytestmark = [
    pytest.mark.skipif(TARGET != "hearth", reason="replicas of hearth serve over PostgreSQL are Hearth's own"),
    pytest.mark.skipif(not DATABASE_ADMIN_URL, reason="needs PostgreSQL: set HEARTH_TEST_DATABASE_URL (docs/postgres.md)"),
]

THREADS_PER_REPLICA = 4
PER_THREAD = 15


@pytest.fixture
def replicas(tmp_path):
    binary = os.environ.get("HEARTH_BIN")
    if not binary:
        pytest.skip("HEARTH_BIN is not set")
    separate_grpc_connections()
    srv = HearthServer(binary, tmp_path, replicas=2)
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


def test_transactional_increments_from_two_replicas_lose_nothing(replicas):
    clients = [make_client(replicas.replica_ports[i]["firestore"]) for i in range(2)]
    collection = new_collection_id("replicatx")
    clients[0].collection(collection).document("counter").set({"n": 0})
    errors: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(2 * THREADS_PER_REPLICA)

    def worker(db: firestore.Client):
        counter = db.collection(collection).document("counter")

        @firestore.transactional
        def bump(txn):
            snap = counter.get(transaction=txn)
            txn.update(counter, {"n": snap.get("n") + 1})

        start.wait()
        for _ in range(PER_THREAD):
            try:
                bump(db.transaction(max_attempts=30))
            except Exception as e:  # noqa: BLE001 — every client error is a failure of the test
                with lock:
                    errors.append(repr(e)[:300])

    pool = [threading.Thread(target=worker, args=(clients[i % 2],)) for i in range(2 * THREADS_PER_REPLICA)]
    for t in pool:
        t.start()
    for t in pool:
        t.join(timeout=600)
    try:
        n = clients[1].collection(collection).document("counter").get().get("n")
        acknowledged = 2 * THREADS_PER_REPLICA * PER_THREAD - len(errors)
        assert n == acknowledged, (f"{acknowledged} transactional increments were acknowledged on two replicas but the counter "
                                   f"is {n}: {acknowledged - n} lost (errors: {errors[:3]})")
        assert errors == []
    finally:
        for c in clients:
            c.close()


def test_a_transaction_whose_calls_reach_different_replicas_commits(replicas):
    """The GAPIC REST transport through the round-robin proxy: a transaction's BeginTransaction,
    reads and Commit travel over whichever pooled connection is free, so they reach different
    replicas. A call naming the transaction is handed to the replica that began it (the
    transaction id starts with its replica's id), and every read-write transaction begins on the
    replica holding the transactions role (docs/postgres.md, "Transactions across replicas"):
    all 30 increments commit, none hangs, none fails."""
    from google.auth.credentials import AnonymousCredentials
    from google.cloud.firestore_v1.services.firestore import FirestoreClient
    from google.cloud.firestore_v1.services.firestore.transports.rest import FirestoreRestTransport

    db = make_client(replicas.port)
    db._firestore_api_internal = FirestoreClient(transport=FirestoreRestTransport(
        host=f"127.0.0.1:{replicas.port}", url_scheme="http", credentials=AnonymousCredentials()))
    collection = new_collection_id("replicarest")
    counter = db.collection(collection).document("counter")
    counter.set({"n": 0})
    done: list[int] = []
    errors: list[str] = []
    lock = threading.Lock()
    stop = threading.Event()

    def worker():
        @firestore.transactional
        def bump(txn):
            snap = counter.get(transaction=txn)
            txn.update(counter, {"n": snap.get("n") + 1})

        for _ in range(10):
            if stop.is_set():
                return
            try:
                bump(db.transaction(max_attempts=30))
                with lock:
                    done.append(1)
            except Exception as e:  # noqa: BLE001
                with lock:
                    errors.append(repr(e)[:300])

    pool = [threading.Thread(target=worker, daemon=True) for _ in range(3)]
    for t in pool:
        t.start()
    for t in pool:
        t.join(timeout=120)
    stop.set()
    try:
        hung = sum(t.is_alive() for t in pool)
        n = counter.get().get("n")
        assert hung == 0, (f"{hung} of 3 threads still inside a transaction after 120 s ({len(done)} of 30 increments "
                           f"acknowledged, counter {n}, errors {errors[:3]}): a transaction's calls reached a replica "
                           f"that does not know it")
        assert errors == [] and n == len(done) == 30, (n, len(done), errors[:3])
    finally:
        db.close()


def test_a_transaction_whose_replica_died_is_aborted_and_its_retry_commits(replicas):
    """Raw REST, as a client behind a load balancer sends it: a read-write transaction begins (on
    the replica ordering REST transactions; its id starts with that replica's id) and reads a
    document through the other replica (handed over). The owner is SIGKILLed with the transaction
    open. The surviving replica answers the commit naming it ABORTED — the code every Firestore
    client retries — and its rollback `{}`; nothing of it was written. The retry, a new
    transaction, commits on the survivor (docs/postgres.md, "Transactions across replicas", Faults)."""
    import base64
    import re

    import requests

    db_path = f"projects/{PROJECT}/databases/(default)"
    collection = new_collection_id("replicadies")
    name = f"{db_path}/documents/{collection}/d"

    def url(index: int, suffix: str) -> str:
        return f"{replicas.replica_base(index)}/v1/{suffix}"

    def update(n: int) -> dict:
        return {"update": {"name": name, "fields": {"n": {"integerValue": str(n)}}}}

    created = requests.post(url(0, f"{db_path}/documents:commit"), json={"writes": [update(1)]}, timeout=30)
    assert created.status_code == 200, created.text
    begun = requests.post(url(0, f"{db_path}/documents:beginTransaction"), json={}, timeout=30)
    assert begun.status_code == 200, begun.text
    transaction = begun.json()["transaction"]
    owner_id = base64.b64decode(transaction)[:8].hex()
    ids = {}
    for i in range(2):
        found = re.findall(r"replica=([0-9a-f]{16}) .*announced to the other replicas", replicas.replica_output(i))
        assert found, f"replica {i}'s log names no replica id:\n{replicas.replica_output(i)[-2000:]}"
        ids[found[-1]] = i
    assert owner_id in ids, f"the transaction id starts with {owner_id}, no replica's id ({ids})"
    owner = ids[owner_id]
    survivor = 1 - owner
    read = requests.get(url(survivor, f"{name}"), params={"transaction": transaction}, timeout=30)
    assert read.status_code == 200 and read.json()["fields"]["n"] == {"integerValue": "1"}, read.text

    replicas.kill_replica(owner)
    commit = requests.post(url(survivor, f"{db_path}/documents:commit"),
                           json={"writes": [update(2)], "transaction": transaction}, timeout=60)
    assert commit.status_code == 409 and commit.json()["error"]["status"] == "ABORTED", commit.text
    rollback = requests.post(url(survivor, f"{db_path}/documents:rollback"), json={"transaction": transaction}, timeout=60)
    assert rollback.status_code == 200 and rollback.json() == {}, rollback.text

    retry = requests.post(url(survivor, f"{db_path}/documents:beginTransaction"), json={}, timeout=60)
    assert retry.status_code == 200, retry.text
    again = requests.get(url(survivor, name), params={"transaction": retry.json()["transaction"]}, timeout=60)
    assert again.status_code == 200 and again.json()["fields"]["n"] == {"integerValue": "1"}, "the dead transaction wrote nothing"
    done = requests.post(url(survivor, f"{db_path}/documents:commit"),
                         json={"writes": [update(2)], "transaction": retry.json()["transaction"]}, timeout=60)
    assert done.status_code == 200, done.text
    final = requests.get(url(survivor, name), timeout=30)
    assert final.json()["fields"]["n"] == {"integerValue": "2"}


def test_replicas_over_tls_hand_transactions_to_each_other(tmp_path):
    """With `--tls-cert` (here `hearth admin tls self-signed`: a private CA, not in the system's
    store) a handed-over call goes to the other replica over TLS, trusting the chain of the
    certificate the replicas share. Each round begins a read-write transaction on one replica and
    reads and commits it through the other: some call of every round crosses between them."""
    import base64

    import requests

    from tlsutil import self_signed

    binary = os.environ.get("HEARTH_BIN")
    if not binary:
        pytest.skip("HEARTH_BIN is not set")
    certs = self_signed(binary, tmp_path / "certs", "127.0.0.1")
    srv = HearthServer(binary, tmp_path, replicas=2,
                       extra_args=("--tls-cert", str(certs / "server.pem"), "--tls-key", str(certs / "server-key.pem")))
    srv.start()
    try:
        ca = str(certs / "ca.pem")
        db_path = f"projects/{PROJECT}/databases/(default)"
        name = f"{db_path}/documents/{new_collection_id('replicatls')}/d"

        def call(index: int, method: str, suffix: str, **kwargs):
            base = f"https://127.0.0.1:{srv.replica_ports[index]['firestore']}"
            return requests.request(method, f"{base}/v1/{suffix}", verify=ca, timeout=60, **kwargs)

        owners = set()
        for n in range(1, 5):
            first, other = n % 2, 1 - n % 2
            begun = call(first, "POST", f"{db_path}/documents:beginTransaction", json={})
            assert begun.status_code == 200, begun.text
            transaction = begun.json()["transaction"]
            owners.add(base64.b64decode(transaction)[:8].hex())
            read = call(other, "GET", name, params={"transaction": transaction})
            assert read.status_code in (200, 404), read.text
            write = {"update": {"name": name, "fields": {"n": {"integerValue": str(n)}}}}
            done = call(other, "POST", f"{db_path}/documents:commit", json={"writes": [write], "transaction": transaction})
            assert done.status_code == 200, f"round {n}: {done.text}\n{srv.output()[-3000:]}"
        assert len(owners) == 1, f"every read-write transaction begins on the replica ordering them: {owners}"
        assert call(0, "GET", name).json()["fields"]["n"] == {"integerValue": "4"}
    finally:
        srv.stop()


def test_grpc_transactions_are_ordered_by_one_replica(replicas):
    """gRPC (google-cloud-firestore's GAPIC client, one channel per replica): every read-write
    transaction begins on the replica ordering them, whichever replica the channel reached (its id
    starts the transaction id; a read-only one begins where it arrives), and a transaction's calls
    reaching another replica are handed to it: a read and a query in the transaction, its commit,
    and a rollback, each through the other replica's channel (docs/postgres.md, "Transactions across
    replicas")."""
    clients = [make_client(replicas.replica_ports[i]["firestore"]) for i in range(2)]
    try:
        apis = [c._firestore_api for c in clients]
        database = f"projects/{PROJECT}/databases/(default)"
        collection = new_collection_id("replicagrpc")
        name = f"{database}/documents/{collection}/d"
        clients[0].collection(collection).document("d").set({"n": 1})
        owners = set()
        for api in apis:
            begun = api.begin_transaction(request={"database": database})
            owners.add(begun.transaction[:8].hex())
        assert len(owners) == 1, f"read-write transactions began on different replicas: {owners}"
        read_only = {apis[i].begin_transaction(request={"database": database, "options": {"read_only": {}}}).transaction[:8].hex()
                     for i in range(2)}
        assert len(read_only) == 2, "a read-only transaction begins where it arrives"

        for first, other in ((0, 1), (1, 0)):
            transaction = apis[first].begin_transaction(request={"database": database}).transaction
            doc = apis[other].get_document(request={"name": name, "transaction": transaction})
            n = int(doc.fields["n"].integer_value)
            query = {"parent": f"{database}/documents", "transaction": transaction,
                     "structured_query": {"from_": [{"collection_id": collection}]}}
            found = [r.document.name for r in apis[other].run_query(request=query) if r.document.name]
            assert found == [name]
            got = list(apis[other].batch_get_documents(request={"database": database, "documents": [name], "transaction": transaction}))
            assert [g.found.name for g in got if g.found.name] == [name]
            write = {"update": {"name": name, "fields": {"n": {"integer_value": n + 1}}}}
            apis[other].commit(request={"database": database, "writes": [write], "transaction": transaction})
        begun = list(apis[1].batch_get_documents(request={"database": database, "documents": [name], "new_transaction": {"read_write": {}}}))
        assert begun[0].transaction[:8].hex() in owners
        apis[0].rollback(request={"database": database, "transaction": begun[0].transaction})
        assert clients[1].collection(collection).document("d").get().get("n") == 3
    finally:
        for c in clients:
            c.close()
