"""`hearth backup` / `hearth restore` (issue 17 §4): an online backup taken under write load
restores to a state holding every write acknowledged before the backup began, with indexes
that match the documents and every object's bytes; damaged backups and non-empty targets are
refused with nothing written."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import random
import sqlite3
import subprocess
import threading
import time
from pathlib import Path

import pytest
import requests
from google.api_core.client_options import ClientOptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import storage

from conftest import PROJECT, TARGET, HearthServer

pytestmark = [
    pytest.mark.skipif(TARGET != "hearth", reason="backups are Hearth's own (the emulator keeps data in memory)"),
    pytest.mark.sqlite_files(reason="hearth backup/restore copy the data directory's SQLite files (over PostgreSQL: pg_dump)"),
]

BIN = os.environ.get("HEARTH_BIN", "hearth")
OWNER = {"Authorization": "Bearer owner"}
BUCKET = f"{PROJECT}.appspot.com"


def docs_url(srv) -> str:
    return f"{srv.rest_base}/v1/projects/{PROJECT}/databases/(default)/documents"


def run(*args, check=False) -> subprocess.CompletedProcess:
    proc = subprocess.run([BIN, *args], capture_output=True, text=True, timeout=300)
    if check:
        assert proc.returncode == 0, f"hearth {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc


def gcs(srv) -> storage.Client:
    return storage.Client(project=PROJECT, credentials=AnonymousCredentials(),
                          client_options=ClientOptions(api_endpoint=srv.storage_base))


class Load:
    """Writers creating documents and uploading objects until stopped; each records what the
    server acknowledged, with the time of the acknowledgement."""

    def __init__(self, srv):
        self.srv = srv
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.docs: list[tuple[float, str, int]] = []      # (acked at, id, n)
        self.objects: list[tuple[float, str, str]] = []   # (acked at, name, md5 base64)
        self.errors: list[str] = []
        self.threads = [threading.Thread(target=self.write_docs, args=(t,), daemon=True) for t in range(3)]
        self.threads.append(threading.Thread(target=self.upload_objects, daemon=True))

    def start(self):
        for t in self.threads:
            t.start()

    def finish(self):
        self.stop.set()
        for t in self.threads:
            t.join(timeout=60)
        assert not self.errors, self.errors[:5]

    def write_docs(self, t: int):
        session = requests.Session()
        i = 0
        while not self.stop.is_set():
            i += 1
            doc_id = f"w{t}-{i:06d}"
            body = {"fields": {"n": {"integerValue": str(i)}, "tag": {"stringValue": "load"},
                               "writer": {"integerValue": str(t)}}}
            r = session.post(f"{docs_url(self.srv)}/load?documentId={doc_id}", json=body, headers=OWNER, timeout=30)
            if r.status_code != 200:
                self.errors.append(f"create {doc_id}: {r.status_code} {r.text[:200]}")
                return
            with self.lock:
                self.docs.append((time.monotonic(), doc_id, i))

    def upload_objects(self):
        bucket = gcs(self.srv).bucket(BUCKET)
        rng = random.Random(7)
        k = 0
        churn: list[str] = []
        while not self.stop.is_set():
            k += 1
            data = rng.randbytes(rng.randint(1, 48 * 1024))
            name = f"keep/{k:05d}.bin"
            bucket.blob(name).upload_from_string(data, content_type="application/octet-stream")
            with self.lock:
                self.objects.append((time.monotonic(), name, base64.b64encode(hashlib.md5(data).digest()).decode()))
            # churn: objects made and deleted while the backup runs, so blobs are reclaimed under it
            tmp = f"churn/{k:05d}.bin"
            bucket.blob(tmp).upload_from_string(rng.randbytes(2048))
            churn.append(tmp)
            if len(churn) > 3:
                bucket.blob(churn.pop(0)).delete()


def start_server(workdir: Path) -> HearthServer:
    srv = HearthServer(BIN, workdir)
    srv.start()
    return srv


def test_backup_under_load_restores_every_acknowledged_write(tmp_path):
    live = start_server(tmp_path / "live")
    load = Load(live)
    try:
        load.start()
        time.sleep(2.0)
        began = time.monotonic()
        backup_dir = tmp_path / "backup"
        proc = run("backup", "--data-dir", str(live.data_dir), "--to", str(backup_dir))
        assert proc.returncode == 0, proc.stderr
        time.sleep(0.5)  # writes after the backup: they must not break anything
    finally:
        load.finish()
        live.stop()

    # progress went to stderr, the summary to stdout
    assert "hearth.sqlite: 100%" in proc.stderr and "checksums:" in proc.stderr
    assert "backed up" in proc.stdout
    manifest = json.loads((backup_dir / "hearth-backup.json").read_text())
    assert manifest["format"] == "hearth-backup" and manifest["version"] == 1
    assert {"hearth.sqlite", "auth.sqlite", "storage.sqlite", "database.sqlite"} <= set(manifest["databases"])
    assert any(f["path"].startswith("keys/") for f in manifest["files"]), "signing keys are part of the backup"
    before_docs = {doc_id: n for at, doc_id, n in load.docs if at < began}
    before_objects = {name: md5 for at, name, md5 in load.objects if at < began}
    print(f"acknowledged before the backup: {len(before_docs)} documents, {len(before_objects)} objects; in all {len(load.docs)}, {len(load.objects)}")
    assert len(before_docs) > 50 and len(before_objects) > 5, (len(before_docs), len(before_objects))
    assert len(load.docs) > len(before_docs), "the load kept writing while the backup ran"

    restored_work = tmp_path / "restored"
    proc = run("restore", str(backup_dir), "--data-dir", str(restored_work / "data"))
    assert proc.returncode == 0, proc.stderr
    assert "verifying:" in proc.stderr and "restored the backup" in proc.stdout

    for store in manifest["databases"]:
        with sqlite3.connect(restored_work / "data" / store) as db:
            assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)], store

    srv = start_server(restored_work)
    try:
        # every document (all of them, by listing the collection: the documents table)
        listed: dict[str, int] = {}
        token = None
        while True:
            params = {"pageSize": 1000, **({"pageToken": token} if token else {})}
            page = requests.get(f"{docs_url(srv)}/load", params=params, headers=OWNER, timeout=30).json()
            for d in page.get("documents", []):
                listed[d["name"].rsplit("/", 1)[1]] = int(d["fields"]["n"]["integerValue"])
            token = page.get("nextPageToken")
            if not token:
                break
        missing = [d for d in before_docs if d not in listed]
        assert not missing, f"{len(missing)} acknowledged writes missing, e.g. {missing[:5]}"
        assert all(listed[d] == n for d, n in before_docs.items())

        # indexes match documents: a filtered query (served from index entries) finds exactly the listed set
        for field, value in (("tag", {"stringValue": "load"}), ("writer", {"integerValue": "1"})):
            query = {"structuredQuery": {"from": [{"collectionId": "load"}],
                                         "where": {"fieldFilter": {"field": {"fieldPath": field}, "op": "EQUAL", "value": value}}}}
            rows = requests.post(f"{docs_url(srv)}:runQuery", json=query, headers=OWNER, timeout=60).json()
            found = {r["document"]["name"].rsplit("/", 1)[1] for r in rows if "document" in r}
            expected = {d for d in listed if field == "tag" or d.startswith("w1-")}
            assert found == expected, (field, len(found), len(expected))
        ordered = requests.post(f"{docs_url(srv)}:runQuery", headers=OWNER, timeout=60, json={"structuredQuery": {
            "from": [{"collectionId": "load"}], "orderBy": [{"field": {"fieldPath": "n"}, "direction": "DESCENDING"}], "limit": 1}}).json()
        assert int(ordered[0]["document"]["fields"]["n"]["integerValue"]) == max(listed.values())

        # every object has its bytes, and every object acknowledged before the backup is there
        bucket = gcs(srv).bucket(BUCKET)
        restored_objects = list(bucket.list_blobs())
        by_name = {b.name: b for b in restored_objects}
        for name, md5 in before_objects.items():
            assert name in by_name, f"object {name} acknowledged before the backup is missing"
            assert by_name[name].md5_hash == md5
        for blob in restored_objects:
            data = blob.download_as_bytes()
            assert base64.b64encode(hashlib.md5(data).digest()).decode() == blob.md5_hash, blob.name
        # the restored server takes writes
        r = requests.post(f"{docs_url(srv)}/load?documentId=after-restore", json={"fields": {}}, headers=OWNER, timeout=30)
        assert r.status_code == 200, r.text
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def small_backup(tmp_path_factory):
    work = tmp_path_factory.mktemp("small")
    srv = start_server(work / "live")
    try:
        for i in range(5):
            r = requests.post(f"{docs_url(srv)}/c?documentId=d{i}", json={"fields": {"i": {"integerValue": str(i)}}},
                              headers=OWNER, timeout=30)
            assert r.status_code == 200
        gcs(srv).bucket(BUCKET).blob("a/b.txt").upload_from_string(b"hello")
        run("backup", "--data-dir", str(srv.data_dir), "--to", str(work / "backup"), "--quiet", check=True)
    finally:
        srv.stop()
    return work


def copy_tree(src: Path, dst: Path):
    subprocess.run(["cp", "-a", str(src), str(dst)], check=True)


def test_restore_refuses_a_non_empty_target(small_backup, tmp_path):
    target = tmp_path / "data"
    target.mkdir()
    (target / "keep.txt").write_text("mine")
    proc = run("restore", str(small_backup / "backup"), "--data-dir", str(target))
    assert proc.returncode != 0
    assert "is not empty" in proc.stderr and "nothing was restored" in proc.stderr
    assert sorted(p.name for p in target.iterdir()) == ["keep.txt"]


def test_restore_refuses_a_damaged_backup_and_writes_nothing(small_backup, tmp_path):
    damaged = tmp_path / "damaged"
    copy_tree(small_backup / "backup", damaged)
    db = damaged / "hearth.sqlite"
    raw = bytearray(db.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    db.write_bytes(bytes(raw))
    target = tmp_path / "data"
    proc = run("restore", str(damaged), "--data-dir", str(target))
    assert proc.returncode != 0
    assert "damaged" in proc.stderr and "hearth.sqlite" in proc.stderr
    assert not target.exists()
    assert not [p for p in tmp_path.iterdir() if "restoring" in p.name], "no staging folder is left behind"

    # a missing file is damage too
    copy_tree(small_backup / "backup", tmp_path / "missing")
    blob = next(p for p in (tmp_path / "missing" / "objects" / "blobs").rglob("*") if p.is_file())
    blob.unlink()
    proc = run("restore", str(tmp_path / "missing"), "--data-dir", str(target))
    assert proc.returncode != 0 and "missing or unreadable" in proc.stderr
    assert not target.exists()


def test_restore_refuses_unknown_versions_and_non_backups(small_backup, tmp_path):
    newer = tmp_path / "newer"
    copy_tree(small_backup / "backup", newer)
    manifest = json.loads((newer / "hearth-backup.json").read_text())
    manifest["version"] = 99
    (newer / "hearth-backup.json").write_text(json.dumps(manifest))
    proc = run("restore", str(newer), "--data-dir", str(tmp_path / "a"))
    assert proc.returncode != 0 and "format version 99" in proc.stderr

    unsafe = tmp_path / "unsafe"
    copy_tree(small_backup / "backup", unsafe)
    manifest = json.loads((unsafe / "hearth-backup.json").read_text())
    manifest["files"][0]["path"] = "../escape"
    (unsafe / "hearth-backup.json").write_text(json.dumps(manifest))
    proc = run("restore", str(unsafe), "--data-dir", str(tmp_path / "b"))
    assert proc.returncode != 0 and "unsafe path" in proc.stderr

    proc = run("restore", str(tmp_path), "--data-dir", str(tmp_path / "c"))
    assert proc.returncode != 0 and "is not a Hearth backup" in proc.stderr
    assert not any((tmp_path / x).exists() for x in "abc")


def test_backup_refuses_bad_destinations(small_backup, tmp_path):
    data = small_backup / "live" / "data"
    proc = run("backup", "--data-dir", str(data), "--to", str(small_backup / "backup"))
    assert proc.returncode != 0 and "already exists and is not empty" in proc.stderr
    proc = run("backup", "--data-dir", str(data), "--to", str(data / "inside"))
    assert proc.returncode != 0 and "inside the data directory" in proc.stderr
    proc = run("backup", "--data-dir", str(tmp_path / "nothing"), "--to", str(tmp_path / "b"))
    assert proc.returncode != 0 and "no data directory" in proc.stderr
    assert not (tmp_path / "b").exists()


def test_restored_backup_round_trips_a_second_time(small_backup, tmp_path):
    """A restored directory is a normal data directory: it backs up and restores again, same files."""
    first = tmp_path / "first"
    run("restore", str(small_backup / "backup"), "--data-dir", str(first), "--quiet", check=True)
    run("backup", "--data-dir", str(first), "--to", str(tmp_path / "again"), "--quiet", check=True)
    a = json.loads((small_backup / "backup" / "hearth-backup.json").read_text())
    b = json.loads((tmp_path / "again" / "hearth-backup.json").read_text())
    assert [f["path"] for f in a["files"]] == [f["path"] for f in b["files"]]
    blobs_a = {f["path"]: f["sha256"] for f in a["files"] if f["path"].startswith("objects/")}
    blobs_b = {f["path"]: f["sha256"] for f in b["files"] if f["path"].startswith("objects/")}
    assert blobs_a == blobs_b and len(blobs_a) == 1
