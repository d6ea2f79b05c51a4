"""SIGKILL under concurrent write load (Hearth only; the emulator keeps data in memory).

A Hearth of its own (own data dir, own process group) takes commits from WRITERS threads. Each
commit sets 3-5 documents ``stress/{thread}-{i}-{k}`` that all carry the commit's unique batch
id, and increments ``stresscounters/t{thread}`` by one with a field transform. After about
WRITE_SECONDS the whole process group is SIGKILLed while commits are in flight; the server is
restarted on the same data dir and then:

* every acknowledged commit's documents are there with exactly the values written;
* every batch is all-or-nothing: for each batch id found on any document, all of that commit's
  documents exist (this covers the commits that were in flight when the server died);
* each thread's counter is at least its acknowledged increments and at most acknowledged plus
  in flight (a commit whose answer never arrived may or may not have been applied), and equals
  the number of that thread's batches found (the increment and the documents are one commit).

The kill cycle runs CYCLES times; each verification covers every earlier cycle as well.
"""

from __future__ import annotations

import os
import random
import threading
import time

import pytest
import requests

from conftest import PROJECT, TARGET, HearthServer, _kill_group_now

pytestmark = [
    pytest.mark.skipif(TARGET == "emulator", reason="durability under SIGKILL is a Hearth property (the emulator is in-memory)"),
    pytest.mark.single_server(reason="SIGKILLs the one process mid-commit and restarts it (several replicas: test_replicas_realtime.py kills one mid-stream)"),
]

DATABASE = f"projects/{PROJECT}/databases/(default)"
ROOT = f"{DATABASE}/documents"
WRITERS = 8
CYCLES = 3
WRITE_SECONDS = 2.0
HTTP_TIMEOUT = 15
SEED = 424242


def _int(v: int) -> dict:
    return {"integerValue": str(v)}


def _plain(value: dict):
    """REST Value JSON -> Python for the few kinds used here."""
    (k, x), = value.items()
    if k == "integerValue":
        return int(x)
    if k == "stringValue":
        return x
    return (k, x)


def _plain_fields(fields: dict) -> dict:
    return {k: _plain(v) for k, v in fields.items()}


class Writer(threading.Thread):
    """Commits batches until the server goes away (or ``stop`` is set)."""

    def __init__(self, thread_id: int, base: str, cycle: int, first_i: int, stop: threading.Event):
        super().__init__(name=f"writer-{thread_id}", daemon=True)
        self.thread_id = thread_id
        self.base = base
        self.cycle = cycle
        self.next_i = first_i
        self.stop = stop
        self.rng = random.Random(SEED * 1000 + cycle * 100 + thread_id)
        self.acked: list[tuple[str, dict]] = []   # (batch id, {doc name: plain fields})
        self.in_flight = 0                         # commits whose outcome is unknown
        self.last_error = ""
        self.unexpected: list[str] = []            # non-200 answers (must not happen)

    def run(self):
        session = requests.Session()
        session.headers["Authorization"] = "Bearer owner"
        url = f"{self.base}/v1/{DATABASE}/documents:commit"
        counter = f"{ROOT}/stresscounters/t{self.thread_id}"
        try:
            while not self.stop.is_set():
                i = self.next_i
                self.next_i += 1
                n = self.rng.randint(3, 5)
                batch = f"c{self.cycle}/t{self.thread_id}/i{i}"
                docs = {f"{ROOT}/stress/{self.thread_id}-{i}-{k}":
                        {"batch": batch, "k": k, "n": n, "thread": self.thread_id, "i": i}
                        for k in range(n)}
                writes = [{"update": {"name": name, "fields": {
                    "batch": {"stringValue": f["batch"]}, "k": _int(f["k"]), "n": _int(f["n"]),
                    "thread": _int(f["thread"]), "i": _int(f["i"])}}} for name, f in docs.items()]
                writes.append({"update": {"name": counter, "fields": {}}, "updateMask": {"fieldPaths": []},
                               "updateTransforms": [{"fieldPath": "count", "increment": _int(1)}]})
                try:
                    r = session.post(url, json={"writes": writes}, timeout=HTTP_TIMEOUT)
                except requests.RequestException as e:
                    self.in_flight += 1   # sent (perhaps partly); the server died before answering
                    self.last_error = f"{type(e).__name__}: {e}"[:200]
                    return
                if r.status_code != 200:
                    self.in_flight += 1
                    self.unexpected.append(f"{batch}: HTTP {r.status_code} {r.text[:200]}")
                    return
                self.acked.append((batch, docs))
        finally:
            session.close()


def _run_query_all(session, base: str, collection: str) -> list:
    r = session.post(f"{base}/v1/{ROOT}:runQuery",
                     json={"structuredQuery": {"from": [{"collectionId": collection}]}}, timeout=120)
    assert r.status_code == 200, f"listing {collection}: HTTP {r.status_code} {r.text[:500]}"
    return [item["document"] for item in r.json() if "document" in item]


@pytest.fixture
def own_hearth(tmp_path):
    binary = os.environ.get("HEARTH_BIN")
    if not binary or not os.access(binary, os.X_OK):
        pytest.skip("HEARTH_BIN is not set to an executable")
    srv = HearthServer(binary, tmp_path)
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


def test_sigkill_during_concurrent_commits(own_hearth):
    srv = own_hearth
    session = requests.Session()
    session.headers["Authorization"] = "Bearer owner"

    # Counters exist before the first kill, so the increments have a known starting point (0).
    r = session.post(f"{srv.rest_base}/v1/{DATABASE}/documents:commit", timeout=HTTP_TIMEOUT, json={
        "writes": [{"update": {"name": f"{ROOT}/stresscounters/t{t}", "fields": {"count": _int(0)}}}
                   for t in range(WRITERS)]})
    assert r.status_code == 200, r.text

    expected: dict[str, dict] = {}          # every acknowledged document -> its fields
    acked_batches: set = set()
    acked_per_thread = [0] * WRITERS
    in_flight_per_thread = [0] * WRITERS
    next_i = [0] * WRITERS
    stats = []

    for cycle in range(1, CYCLES + 1):
        stop = threading.Event()
        writers = [Writer(t, srv.rest_base, cycle, next_i[t], stop) for t in range(WRITERS)]
        for w in writers:
            w.start()
        time.sleep(WRITE_SECONDS)
        acked_before_kill = sum(len(w.acked) for w in writers)

        _kill_group_now(srv.proc)            # SIGKILL the whole process group, writes in flight
        srv.proc = None
        stop.set()
        for w in writers:
            w.join(timeout=HTTP_TIMEOUT + 10)
        assert not any(w.is_alive() for w in writers), "a writer thread did not finish after the kill"

        unexpected = [u for w in writers for u in w.unexpected]
        assert not unexpected, f"commits answered with an error before the kill: {unexpected[:5]}"

        cycle_acked = 0
        for w in writers:
            t = w.thread_id
            next_i[t] = w.next_i
            acked_per_thread[t] += len(w.acked)
            in_flight_per_thread[t] += w.in_flight
            cycle_acked += len(w.acked)
            for batch, docs in w.acked:
                acked_batches.add(batch)
                expected.update(docs)
        in_flight = sum(w.in_flight for w in writers)
        refused = sum("refused" in w.last_error.lower() for w in writers)
        stats.append([cycle, cycle_acked, in_flight, refused])
        assert acked_before_kill > 0, (
            f"cycle {cycle}: no commit was acknowledged in {WRITE_SECONDS}s; server output:\n{srv.output()}")

        srv.start()                          # same data dir
        stats[-1].append(
            _verify(session, srv, cycle, expected, acked_batches, acked_per_thread, in_flight_per_thread))

    print("\nkill cycles (cycle, acknowledged commits, unanswered commits, of which "
          "refused, unanswered commits found applied so far): "
          + ", ".join(str(s) for s in stats))


def _verify(session, srv, cycle, expected, acked_batches, acked_per_thread, in_flight_per_thread):
    docs = _run_query_all(session, srv.rest_base, "stress")
    found = {d["name"]: _plain_fields(d.get("fields", {})) for d in docs}

    missing = [n for n in expected if n not in found]
    assert not missing, (f"after kill {cycle}: {len(missing)} documents of acknowledged commits are missing, "
                         f"e.g. {[n.rsplit('/', 1)[1] for n in missing[:8]]}")
    wrong = [(n.rsplit("/", 1)[1], expected[n], found[n]) for n in expected if found[n] != expected[n]]
    assert not wrong, f"after kill {cycle}: acknowledged documents changed: {wrong[:5]}"

    by_batch: dict[str, list] = {}
    for name, f in found.items():
        assert "batch" in f and "n" in f and "k" in f, f"unexpected document {name}: {f}"
        by_batch.setdefault(f["batch"], []).append(f)
    torn = []
    for batch, members in by_batch.items():
        n = members[0]["n"]
        ks = sorted(m["k"] for m in members)
        if ks != list(range(n)) or any(m["n"] != n or m["batch"] != batch for m in members):
            torn.append((batch, n, ks))
    assert not torn, f"after kill {cycle}: {len(torn)} batches were applied partly (batch, size, k found): {torn[:5]}"
    assert acked_batches <= set(by_batch), "an acknowledged batch is missing"

    counters = {d["name"].rsplit("/t", 1)[1]: _plain_fields(d.get("fields", {})).get("count")
                for d in _run_query_all(session, srv.rest_base, "stresscounters")}
    bad = []
    for t in range(len(acked_per_thread)):
        got = counters.get(str(t))
        lo, hi = acked_per_thread[t], acked_per_thread[t] + in_flight_per_thread[t]
        if not isinstance(got, int) or not lo <= got <= hi:
            bad.append(f"t{t}: counter {got!r}, acknowledged {lo}, in flight {hi - lo}")
    assert not bad, f"after kill {cycle}: counters out of range: {bad}"

    # Each commit is atomic: its increment landed exactly when its documents did.
    batches_per_thread = [0] * len(acked_per_thread)
    for members in by_batch.values():
        batches_per_thread[members[0]["thread"]] += 1
    split = [f"t{t}: counter {counters.get(str(t))}, batches {b}"
             for t, b in enumerate(batches_per_thread) if counters.get(str(t)) != b]
    assert not split, f"after kill {cycle}: counter increments and batch documents disagree: {split}"

    # unacknowledged commits that did land are whole, and agree with their counter's bound
    extra = set(by_batch) - acked_batches
    assert len(extra) <= sum(in_flight_per_thread), (
        f"after kill {cycle}: {len(extra)} unacknowledged batches applied, "
        f"but only {sum(in_flight_per_thread)} commits were in flight: {sorted(extra)[:5]}")
    return len(extra)
