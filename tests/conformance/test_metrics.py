"""Metrics, health and request ids (docs/production.md): `/metrics` on `--metrics-port` and on the api
port, parsed with prometheus_client's own parser; counters move with traffic sent through the official
clients (google-cloud-firestore, google-cloud-storage, the Auth REST API); `/readyz` probes the stores;
every response carries an `X-Request-Id`."""

from __future__ import annotations

import json
import os
import re
import time
import uuid

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from authutil import AuthRest, start
from conftest import PROJECT
from dbutil import DatabaseRest

pytestmark = [
    pytest.mark.hearth_only(reason="/metrics is Hearth's own"),
    pytest.mark.single_server(reason="counts in one process's /metrics registry and its log"),
]

RULES = """rules_version = '2';
service cloud.firestore {
  match /databases/{database}/documents {
    match /open/{doc} { allow read, write: if true; }
    match /locked/{doc} { allow read, write: if false; }
  }
}
"""


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    rules = tmp_path_factory.mktemp("metrics-rules") / "firestore.rules"
    rules.write_text(RULES)
    s = start(tmp_path_factory, "metrics", emulator=True, extra_args=("--metrics-port", "0", "--firestore-rules", str(rules)),
              service_account=False)
    yield s
    s.stop()


def scrape(srv, port_name: str = "metrics") -> list:
    r = requests.get(f"http://127.0.0.1:{srv.ports[port_name]}/metrics", timeout=30)
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    return [sample for family in text_string_to_metric_families(r.text) for sample in family.samples]


def value(samples, name: str, **labels) -> float:
    """The sum of the samples called `name` whose labels include `labels` (0 when there are none)."""
    return sum(s.value for s in samples if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()))


@pytest.mark.sqlite_files(reason="its sample of the shared registry is hearth.sqlite's checkpoint and WAL metrics")
def test_metrics_port_is_in_the_ready_file_and_serves_the_same_registry_as_the_api_port(srv):
    assert "metrics" in srv.ports and srv.ports["metrics"] not in (srv.ports["api"], 0)
    names = {s.name for s in scrape(srv)}
    assert {s.name for s in scrape(srv, "api")} >= names - {"hearth_http_request_duration_seconds_bucket"}
    # The SQLite checkpointer's figures, from the first checkpoint on.
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        samples = scrape(srv)
        if value(samples, "hearth_sqlite_checkpoint_duration_seconds_count", database="hearth.sqlite") > 0:
            break
        time.sleep(0.2)
    assert value(samples, "hearth_sqlite_checkpoint_duration_seconds_count", database="hearth.sqlite") > 0
    assert any(s.name == "hearth_sqlite_wal_bytes" and s.labels["database"] == "hearth.sqlite" for s in samples)
    assert requests.get(f"http://127.0.0.1:{srv.ports['metrics']}/v1/files", timeout=10).status_code == 404


def test_firestore_commits_requests_and_rules_counters_move(srv, monkeypatch):
    from google.cloud import firestore

    monkeypatch.setenv("FIRESTORE_EMULATOR_HOST", f"127.0.0.1:{srv.port}")
    client = firestore.Client(project=PROJECT)
    before = scrape(srv)
    for i in range(3):
        client.collection("open").document(f"m{i}").set({"n": i})
    # An unauthenticated REST read that the rules deny: one evaluation, one denial, one 403.
    denied = requests.get(f"{srv.rest_base}/v1/projects/{PROJECT}/databases/(default)/documents/locked/x", timeout=10)
    assert denied.status_code == 403, denied.text
    missing = requests.get(f"{srv.rest_base}/no/such/route", timeout=10)
    assert missing.status_code == 404
    after = scrape(srv)

    def delta(name, **labels):
        return value(after, name, **labels) - value(before, name, **labels)

    assert delta("hearth_firestore_commits_total", outcome="committed") == 3
    assert delta("hearth_firestore_commit_duration_seconds_count") == 3
    assert delta("hearth_http_requests_total", service="firestore", method="POST", route="Commit") == 3
    assert delta("hearth_http_request_duration_seconds_count", service="firestore", route="Commit") == 3
    assert delta("hearth_grpc_requests_total", method="Commit", code="OK") == 3
    assert delta("hearth_rules_evaluations_total", service="firestore") == 1
    assert delta("hearth_rules_denials_total", service="firestore") == 1
    assert delta("hearth_http_errors_total", service="firestore", status="403") == 1
    assert delta("hearth_http_errors_total", service="firestore", status="404") == 1
    assert delta("hearth_http_requests_total", service="firestore", method="GET", route="documents", status="403") == 1


def test_auth_sign_ins_and_failures_are_counted(srv):
    auth = AuthRest(srv)
    email = f"m-{uuid.uuid4().hex[:8]}@example.com"
    before = scrape(srv)
    auth.sign_up(email, "secret-pass-1")
    ok = auth.v1("signInWithPassword", {"email": email, "password": "secret-pass-1", "returnSecureToken": True})
    assert ok.status_code == 200, ok.text
    bad = auth.v1("signInWithPassword", {"email": email, "password": "wrong-pass", "returnSecureToken": True})
    assert bad.status_code == 400
    after = scrape(srv)

    def delta(name, **labels):
        return value(after, name, **labels) - value(before, name, **labels)

    assert delta("hearth_auth_sign_ins_total", method="signUp", outcome="success") == 1
    assert delta("hearth_auth_sign_ins_total", method="signInWithPassword", outcome="success") == 1
    assert delta("hearth_auth_sign_ins_total", method="signInWithPassword", outcome="failure") == 1
    assert delta("hearth_http_errors_total", service="auth", status="400") == 1


def test_storage_bytes_in_and_out(srv, monkeypatch):
    from google.cloud import storage

    monkeypatch.setenv("STORAGE_EMULATOR_HOST", srv.storage_base)
    gcs = storage.Client(project=PROJECT)
    bucket = gcs.create_bucket(f"metrics-{uuid.uuid4().hex[:10]}")
    data = os.urandom(100_000)
    before = scrape(srv)
    blob = bucket.blob("m.bin")
    blob.upload_from_string(data)
    assert blob.download_as_bytes() == data
    after = scrape(srv)
    bytes_in = value(after, "hearth_storage_bytes_total", service="storage", direction="in") - value(
        before, "hearth_storage_bytes_total", service="storage", direction="in")
    bytes_out = value(after, "hearth_storage_bytes_total", service="storage", direction="out") - value(
        before, "hearth_storage_bytes_total", service="storage", direction="out")
    assert len(data) <= bytes_in < len(data) + 4096  # the multipart upload's envelope
    assert len(data) <= bytes_out < len(data) + 4096  # the object, plus the small JSON answers


def test_open_event_streams_are_a_gauge(srv):
    db = DatabaseRest(srv)
    assert db.put("/metrics-stream.json", {"a": 1}).status_code == 200
    stream = db.request("GET", "/metrics-stream.json", headers={"Accept": "text/event-stream"}, stream=True, timeout=(5, 10))
    assert stream.status_code == 200
    try:
        assert value(scrape(srv), "hearth_open_streams", service="database", kind="sse") == 1
    finally:
        stream.close()
    # The server notices a closed stream when it next writes to it: an event.
    deadline = time.monotonic() + 10
    n = 0
    while value(scrape(srv), "hearth_open_streams", service="database", kind="sse") != 0:
        assert time.monotonic() < deadline, "the stream was never counted as closed"
        n += 1
        assert db.put("/metrics-stream.json", {"a": n}).status_code == 200
        time.sleep(0.1)


def test_request_ids_are_echoed_or_generated(srv):
    sane = "req-" + uuid.uuid4().hex
    r = requests.get(f"http://127.0.0.1:{srv.ports['api']}/healthz", headers={"X-Request-Id": sane}, timeout=10)
    assert r.status_code == 200 and r.headers["X-Request-Id"] == sane
    for bad in ("has spaces in it", "x" * 200, ""):
        r = requests.get(f"{srv.rest_base}/v1/projects/{PROJECT}/databases/(default)/documents/open/m0",
                         headers={"X-Request-Id": bad, "Authorization": "Bearer owner"}, timeout=10)
        assert r.status_code == 200
        assert re.fullmatch(r"[0-9a-f]{32}", r.headers["X-Request-Id"]), r.headers["X-Request-Id"]
    ids = {requests.get(f"{srv.storage_base}/healthz-missing", timeout=10).headers["X-Request-Id"] for _ in range(5)}
    assert len(ids) == 5


def test_readyz_probes_listeners_and_stores(srv):
    r = requests.get(f"http://127.0.0.1:{srv.ports['api']}/readyz", timeout=10)
    assert r.status_code == 200 and r.json() == {"status": "ready"}
    assert not any(name.startswith(".readyz-probe") for name in os.listdir(srv.data_dir))
    assert requests.get(f"http://127.0.0.1:{srv.ports['metrics']}/healthz", timeout=10).json() == {"status": "ok"}


def test_json_logs_carry_the_request_id(tmp_path_factory):
    rules = tmp_path_factory.mktemp("json-log-rules") / "firestore.rules"
    rules.write_text(RULES)
    s = start(tmp_path_factory, "json-logs", emulator=True, service_account=False,
              extra_args=("--log-format", "json", "--log-level", "debug", "--firestore-rules", str(rules)))
    try:
        rid = "trace-" + uuid.uuid4().hex
        r = requests.get(f"{s.rest_base}/v1/projects/{PROJECT}/databases/(default)/documents/locked/x",
                         headers={"X-Request-Id": rid}, timeout=10)
        assert r.status_code == 403 and r.headers["X-Request-Id"] == rid
        deadline = time.monotonic() + 5
        while True:
            lines = [line for line in s._log_path.read_text().splitlines() if line.strip()]
            records = [json.loads(line) for line in lines]  # every line is one JSON object
            mine = [rec for rec in records if rec.get("request_id") == rid]
            if mine or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert mine, lines[-5:]
        assert mine[0]["message"] == "rules denied" and mine[0]["level"] == "debug" and mine[0]["label"] == "hearth"
        assert all({"time", "level", "label", "message", "source"} <= rec.keys() for rec in records)
        assert any(rec["message"] == "api listening" and "port" in rec for rec in records)
    finally:
        s.stop()


def test_open_websockets_are_a_gauge(srv):
    import websocket

    before = value(scrape(srv), "hearth_open_streams", service="database", kind="websocket")
    ws = websocket.create_connection(f"ws://127.0.0.1:{srv.ports['database']}/.ws?v=5&ns=conformance", timeout=10)
    try:
        assert json.loads(ws.recv())["t"] == "c"  # the hello
        assert value(scrape(srv), "hearth_open_streams", service="database", kind="websocket") == before + 1
    finally:
        ws.close()
    deadline = time.monotonic() + 10
    while value(scrape(srv), "hearth_open_streams", service="database", kind="websocket") != before:
        assert time.monotonic() < deadline, "the WebSocket was never counted as closed"
        time.sleep(0.1)
