"""`hearth export DIR` / `hearth import DIR` / `hearth serve --import DIR --export-on-exit` in the
Firebase Emulator Suite's on-disk format (issue 17 §5): firebase-export-metadata.json,
auth_export/ (accounts.json, config.json) and database_export/<namespace>.json. Checked through
firebase-admin (users) and the database's REST API; the files are checked against the shapes
firebase-tools writes (src/emulator/hubExport.ts). Bad exports and non-empty targets are refused
with a clear message, a non-zero exit status and nothing written."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import time
from pathlib import Path

import pytest
import requests

from google.api_core.client_options import ClientOptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import storage

from authutil import admin_app, create_service_account
from conftest import PROJECT, TARGET, HearthServer

pytestmark = [
    pytest.mark.skipif(TARGET != "hearth", reason="hearth export/import are Hearth's own commands"),
    pytest.mark.sqlite_files(reason="hearth export/import and serve --import work on the data directory's SQLite files"),
]

BIN = os.environ.get("HEARTH_BIN", "hearth")
OWNER = {"Authorization": "Bearer owner"}
NS = "export-conformance"
BUCKET = f"{PROJECT}.appspot.com"


def gcs(srv) -> storage.Client:
    return storage.Client(project=PROJECT, credentials=AnonymousCredentials(),
                          client_options=ClientOptions(api_endpoint=srv.storage_base))


def objects(srv) -> dict:
    out = {}
    for blob in gcs(srv).list_blobs(BUCKET):
        out[blob.name] = (blob.download_as_bytes(), blob.content_type, blob.cache_control, blob.metadata, blob.md5_hash)
    return out


def run(*args) -> subprocess.CompletedProcess:
    return subprocess.run([BIN, *args], capture_output=True, text=True, timeout=300)


def start(workdir: Path, *extra) -> HearthServer:
    srv = HearthServer(BIN, workdir, extra_args=tuple(extra))
    srv.service_account = create_service_account(BIN, srv.data_dir, workdir / "service-account.json")
    srv.start()
    return srv


def db(srv, path: str, ns: str = NS, **params):
    return requests.get(f"http://127.0.0.1:{srv.ports['database']}{path}", params={"ns": ns, **params},
                        headers=OWNER, timeout=30)


def users(srv) -> dict:
    from firebase_admin import auth
    with admin_app(srv, "export") as app:
        return {u.uid: u for u in auth.list_users(app=app).iterate_all()}


def sign_in(srv, email: str, password: str) -> requests.Response:
    return requests.post(f"{srv.auth_base}/identitytoolkit.googleapis.com/v1/accounts:signInWithPassword?key=k",
                         json={"email": email, "password": password, "returnSecureToken": True}, timeout=30)


def seed(srv):
    from firebase_admin import auth
    with admin_app(srv, "seed") as app:
        auth.create_user(uid="alice", email="alice@example.com", password="alice-pw-1", display_name="Alice",
                         email_verified=True, app=app)
        auth.set_custom_user_claims("alice", {"role": "admin", "n": 3}, app=app)
        auth.create_user(uid="bob", phone_number="+15555550123", disabled=True, app=app)
        auth.create_user(uid="anon", app=app)
    tree = {"rooms": {"r1": {".priority": 5, "title": "One", "n": 1.5}, "r2": {".value": "leaf", ".priority": "p"}},
            "flags": {"on": True, "list": {"0": "a", "1": "b"}}}
    r = requests.put(f"http://127.0.0.1:{srv.ports['database']}/.json", params={"ns": NS}, json=tree, headers=OWNER,
                     timeout=30)
    assert r.status_code == 200, r.text
    r = requests.put(f"http://127.0.0.1:{srv.ports['database']}/x.json", params={"ns": "second-ns"}, json=7,
                     headers=OWNER, timeout=30)
    assert r.status_code == 200, r.text
    bucket = gcs(srv).bucket(BUCKET)
    b = bucket.blob("photos/2024/cat picture.png")
    b.metadata = {"owner": "alice"}
    b.cache_control = "public, max-age=60"
    b.upload_from_string(bytes(range(256)) * 40, content_type="image/png")
    bucket.blob("top.txt").upload_from_string(b"hello", content_type="text/plain")
    bucket.blob("empty").upload_from_string(b"")


def user_view(u) -> tuple:
    return (u.uid, u.email, u.email_verified, u.display_name, u.phone_number, u.disabled, u.custom_claims,
            u.user_metadata.creation_timestamp, sorted(p.provider_id for p in u.provider_data))


def test_export_then_import_round_trips_accounts_and_database(tmp_path):
    a = start(tmp_path / "a")
    try:
        seed(a)
        before_users = {uid: user_view(u) for uid, u in users(a).items()}
        before_db = db(a, "/.json", format="export").json()
        before_second = db(a, "/.json", ns="second-ns").json()
        before_objects = objects(a)
    finally:
        a.stop()
    out = tmp_path / "export"
    proc = run("export", str(out), "--data-dir", str(a.data_dir))
    assert proc.returncode == 0, proc.stderr
    assert "3 accounts" in proc.stdout and "2 database namespaces" in proc.stdout

    metadata = json.loads((out / "firebase-export-metadata.json").read_text())
    assert metadata["auth"]["path"] == "auth_export" and metadata["database"]["path"] == "database_export"
    accounts = json.loads((out / "auth_export" / "accounts.json").read_text())
    assert accounts["kind"] == "identitytoolkit#DownloadAccountResponse"
    assert sorted(u["localId"] for u in accounts["users"]) == ["alice", "anon", "bob"]
    assert isinstance(json.loads((out / "auth_export" / "config.json").read_text()), dict)
    assert json.loads((out / "database_export" / f"{NS}.json").read_text()) == before_db
    assert json.loads((out / "storage_export" / "buckets.json").read_text())["buckets"] == [{"id": BUCKET}]
    blob = out / "storage_export" / "blobs" / BUCKET / "photos" / "2024" / "cat%20picture.png"
    assert blob.read_bytes() == bytes(range(256)) * 40
    meta = json.loads((out / "storage_export" / "metadata" / BUCKET / "photos" / "2024" / "cat%20picture.png.json").read_text())
    assert meta["name"] == "photos/2024/cat picture.png" and meta["customMetadata"] == {"owner": "alice"}

    b = HearthServer(BIN, tmp_path / "b")
    proc = run("import", str(out), "--data-dir", str(b.data_dir))
    assert proc.returncode == 0, proc.stderr
    b.service_account = create_service_account(BIN, b.data_dir, tmp_path / "b" / "service-account.json")
    b.start()
    try:
        assert {uid: user_view(u) for uid, u in users(b).items()} == before_users
        assert db(b, "/.json", format="export").json() == before_db
        assert db(b, "/.json", ns="second-ns").json() == before_second
        assert objects(b) == before_objects
        assert sign_in(b, "alice@example.com", "alice-pw-1").status_code == 200
        assert sign_in(b, "alice@example.com", "wrong").status_code == 400
    finally:
        b.stop()

    # A second import over the now non-empty directory is refused, and changes nothing.
    proc = run("import", str(out), "--data-dir", str(b.data_dir))
    assert proc.returncode != 0 and "already holds" in proc.stderr


def write_emulator_export(root: Path, version: str = "13.29.1") -> Path:
    """An export as `firebase emulators:export` writes it (the Auth emulator keeps passwords as
    fakeHash; the database file is `GET /.json?format=export`)."""
    root.mkdir(parents=True)
    (root / "firebase-export-metadata.json").write_text(json.dumps({
        "version": version,
        "auth": {"version": version, "path": "auth_export"},
        "database": {"version": "4.11.2", "path": "database_export"},
        "storage": {"version": version, "path": "storage_export"},
    }))
    (root / "auth_export").mkdir()
    (root / "auth_export" / "accounts.json").write_text(json.dumps({
        "kind": "identitytoolkit#DownloadAccountResponse",
        "users": [{
            "localId": "emuUser1", "createdAt": "1700000000000", "lastLoginAt": "1700000001000",
            "displayName": "Emu", "passwordHash": "fakeHash:salt=fakeSaltAbc:password=emu-secret",
            "salt": "fakeSaltAbc", "passwordUpdatedAt": 1700000000000,
            "customAttributes": "{\"tier\":\"gold\"}",
            "providerUserInfo": [{"providerId": "password", "email": "emu@example.com", "federatedId": "emu@example.com",
                                  "rawId": "emu@example.com", "displayName": "Emu"}],
            "validSince": "1700000000", "email": "emu@example.com", "emailVerified": False, "disabled": False,
            "lastRefreshAt": "2023-11-14T22:13:21.000Z",
        }],
    }))
    (root / "auth_export" / "config.json").write_text(json.dumps({"signIn": {"allowDuplicateEmails": False}}))
    (root / "database_export").mkdir()
    (root / "database_export" / f"{NS}.json").write_text(json.dumps({"a": {"b": 1, ".priority": 1.0}, "s": "t"}))
    # The Storage emulator's export (storage/files.ts): blobs and metadata under bucket/folders/encodeURIComponent(file).
    st = root / "storage_export"
    (st / "blobs" / BUCKET / "docs").mkdir(parents=True)
    (st / "metadata" / BUCKET / "docs").mkdir(parents=True)
    (st / "buckets.json").write_text(json.dumps({"buckets": [{"id": BUCKET}]}))
    data = b"emulator bytes\n" * 10
    (st / "blobs" / BUCKET / "docs" / "a%20b.txt").write_bytes(data)
    (st / "metadata" / BUCKET / "docs" / "a%20b.txt.json").write_text(json.dumps({
        "name": "docs/a b.txt", "bucket": BUCKET, "contentType": "text/plain", "metageneration": 1, "generation": 1700000000000000,
        "storageClass": "STANDARD", "contentDisposition": "inline", "contentEncoding": "identity",
        "customMetadata": {"k": "v"}, "downloadTokens": ["6f2a3b1c-0000-4000-8000-000000000001"], "etag": "someETag",
        "timeCreated": "2023-11-14T22:13:20.000Z", "updated": "2023-11-14T22:13:20.000Z", "size": len(data),
        "md5Hash": base64.b64encode(hashlib.md5(data).digest()).decode(), "crc32c": "123",
    }))
    return root


def test_import_of_an_emulator_suite_export(tmp_path):
    src = write_emulator_export(tmp_path / "emu-export")
    srv = HearthServer(BIN, tmp_path / "srv")
    proc = run("import", str(src), "--data-dir", str(srv.data_dir))
    assert proc.returncode == 0, proc.stderr
    srv.service_account = create_service_account(BIN, srv.data_dir, tmp_path / "srv" / "service-account.json")
    srv.start()
    try:
        u = users(srv)["emuUser1"]
        assert (u.email, u.display_name, u.custom_claims) == ("emu@example.com", "Emu", {"tier": "gold"})
        assert u.user_metadata.creation_timestamp == 1700000000000
        assert sign_in(srv, "emu@example.com", "emu-secret").status_code == 200
        assert db(srv, "/.json", format="export").json() == {"a": {".priority": 1, "b": 1}, "s": "t"}
        blob = gcs(srv).bucket(BUCKET).get_blob("docs/a b.txt")
        assert blob.download_as_bytes() == b"emulator bytes\n" * 10
        assert (blob.content_type, blob.content_disposition) == ("text/plain", "inline")
        # GCS shows the download tokens as firebaseStorageDownloadTokens, as production does.
        assert blob.metadata == {"k": "v", "firebaseStorageDownloadTokens": "6f2a3b1c-0000-4000-8000-000000000001"}
        # The download token survives: the Firebase SDKs' download URL works.
        url = (f"{srv.storage_base}/v0/b/{BUCKET}/o/docs%2Fa%20b.txt?alt=media"
               f"&token=6f2a3b1c-0000-4000-8000-000000000001")
        assert requests.get(url, timeout=30).content == b"emulator bytes\n" * 10
    finally:
        srv.stop()


@pytest.mark.parametrize("damage", [
    "no-metadata", "unknown-version", "corrupt-metadata", "corrupt-accounts", "bad-database-key", "bad-hash",
    "firestore-missing", "storage-bad-md5", "storage-missing-blob",
])
def test_bad_exports_are_refused_and_nothing_is_imported(tmp_path, damage):
    src = write_emulator_export(tmp_path / "emu-export", version="99.0.0" if damage == "unknown-version" else "13.29.1")
    meta = src / "firebase-export-metadata.json"
    if damage == "no-metadata":
        meta.unlink()
    elif damage == "corrupt-metadata":
        meta.write_text("{\"version\": ")
    elif damage == "corrupt-accounts":
        (src / "auth_export" / "accounts.json").write_text("{\"users\": [ {\"localId\": ")
    elif damage == "bad-database-key":
        (src / "database_export" / "zz.json").write_text(json.dumps({"a.b": 1}))
    elif damage == "bad-hash":
        accounts = json.loads((src / "auth_export" / "accounts.json").read_text())
        accounts["users"][0]["passwordHash"] = "c29tZSBoYXNo"
        (src / "auth_export" / "accounts.json").write_text(json.dumps(accounts))
    elif damage == "firestore-missing":
        m = json.loads(meta.read_text())
        m["firestore"] = {"version": "1.19.9", "path": "firestore_export",
                          "metadata_file": "firestore_export/firestore_export.overall_export_metadata"}
        meta.write_text(json.dumps(m))
    elif damage == "storage-bad-md5":
        (src / "storage_export" / "blobs" / BUCKET / "docs" / "a%20b.txt").write_bytes(b"tampered")
    elif damage == "storage-missing-blob":
        (src / "storage_export" / "blobs" / BUCKET / "docs" / "a%20b.txt").unlink()
    data_dir = tmp_path / "data"
    proc = run("import", str(src), "--data-dir", str(data_dir))
    assert proc.returncode != 0, proc.stdout
    assert "hearth import:" in proc.stderr, proc.stderr
    # Nothing was written: the same directory then takes a good export.
    good = write_emulator_export(tmp_path / "good")
    proc = run("import", str(good), "--data-dir", str(data_dir))
    assert proc.returncode == 0, proc.stderr
    if damage.startswith("storage"):
        proc = run("import", str(src), "--data-dir", str(tmp_path / "other"), "--only", "auth,database")
        assert proc.returncode == 0, proc.stderr


def test_serve_import_and_export_on_exit(tmp_path):
    src = write_emulator_export(tmp_path / "seed")
    srv = HearthServer(BIN, tmp_path / "srv", extra_args=("--import", str(src), "--export-on-exit"))
    srv.start()
    try:
        assert db(srv, "/s.json").json() == "t"
        r = requests.put(f"http://127.0.0.1:{srv.ports['database']}/added.json", params={"ns": NS}, json={"k": 1},
                         headers=OWNER, timeout=30)
        assert r.status_code == 200
    finally:
        srv.stop()  # SIGTERM: a clean shutdown, then the export
    exported = json.loads((src / "database_export" / f"{NS}.json").read_text())
    assert exported["added"] == {"k": 1} and exported["s"] == "t"
    accounts = json.loads((src / "auth_export" / "accounts.json").read_text())
    assert [u["localId"] for u in accounts["users"]] == ["emuUser1"]
    # A restart with --import keeps the data directory's newer state.
    srv.start()
    try:
        assert db(srv, "/added/k.json").json() == 1
    finally:
        srv.stop()


# --------------------------------------------------------------------------------------------
# Firestore: Google's emulator is the judge of the format (its export endpoint and --seed_from_export)
# --------------------------------------------------------------------------------------------

def emulator_binary() -> str:
    from conftest import _emulator_binary
    try:
        binary = _emulator_binary()
    except RuntimeError as e:
        pytest.skip(f"Google's Firestore emulator is not installed: {e}")
    if not os.access(binary, os.X_OK):
        pytest.skip(f"Google's Firestore emulator is not installed: {binary} is not executable")
    return binary


class Emulator:
    def __init__(self, workdir: Path, *extra):
        from conftest import _free_port
        self.port = _free_port()
        workdir.mkdir(parents=True, exist_ok=True)
        self.log = workdir / "emulator.log"
        cmd = [emulator_binary(), "start", "--host=127.0.0.1", f"--port={self.port}", f"--project_id={PROJECT}", *extra]
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                         start_new_session=True, cwd=workdir)
        deadline = time.monotonic() + 90
        while True:
            assert self.proc.poll() is None, self.log.read_text()[-4000:]
            try:
                if requests.get(f"http://127.0.0.1:{self.port}/", timeout=2).text.strip() == "Ok":
                    return
            except requests.RequestException:
                pass
            assert time.monotonic() < deadline, self.log.read_text()[-4000:]
            time.sleep(0.2)

    def stop(self):
        from conftest import _stop_group
        _stop_group(self.proc)


def firestore_client(port: int, database: str | None = None):
    from google.cloud import firestore
    previous = os.environ.get("FIRESTORE_EMULATOR_HOST")
    os.environ["FIRESTORE_EMULATOR_HOST"] = f"127.0.0.1:{port}"
    try:
        return firestore.Client(project=PROJECT, database=database)
    finally:
        if previous is None:
            os.environ.pop("FIRESTORE_EMULATOR_HOST", None)
        else:
            os.environ["FIRESTORE_EMULATOR_HOST"] = previous


def write_every_value_type(client):
    import datetime

    from google.cloud.firestore import GeoPoint
    c = client.collection("values")
    c.document("all").set({
        "null": None, "true": True, "false": False, "int": -42, "big": 2**63 - 1, "small": -2**63,
        "double": 1.5, "nan": float("nan"), "inf": float("-inf"), "negzero": -0.0,
        "time": datetime.datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=datetime.timezone.utc),
        "epoch": datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc),
        "before": datetime.datetime(1969, 12, 31, 23, 59, 59, 500000, tzinfo=datetime.timezone.utc),
        "string": "héllo ✓", "empty": "", "long": "L" * 3000, "bytes": b"\x00\x01\xfe\xff", "nobytes": b"",
        "ref": client.document("values/other"), "deepref": client.document("a/b/c/d"),
        "geo": GeoPoint(-33.5, 151.25), "array": [1, "two", None, {"m": [b"x", 2.5]}], "emptyarray": [],
        "map": {"a": {"b": {"c": 1, "e": []}}, "x": "y"}, "emptymap": {},
    })
    c.document("other").set({"n": 1})
    client.document("values/all/sub/child").set({"nested": True})
    client.document("values/missing-parent/sub/orphan").set({"orphan": 1})
    client.document("odd ids/ü-ñ id").set({"k": "v"})


def comparable(value):
    import math

    from google.cloud.firestore import DocumentReference, GeoPoint
    if isinstance(value, float):
        return ("nan",) if math.isnan(value) else ("double", value, math.copysign(1.0, value))
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int):
        return ("int", value)
    if isinstance(value, bytes):
        return ("bytes", value)
    if isinstance(value, DocumentReference):
        return ("ref", value.path)
    if isinstance(value, GeoPoint):
        return ("geo", value.latitude, value.longitude)
    if isinstance(value, list):
        return ("array", [comparable(v) for v in value])
    if isinstance(value, dict):
        return ("map", {k: comparable(v) for k, v in value.items()})
    if hasattr(value, "timestamp") and hasattr(value, "nanosecond"):
        return ("time", value.isoformat(), value.nanosecond)
    return (type(value).__name__, value)


def dump(client) -> dict:
    """Every document (by path) with its fields, walking every collection and subcollection."""
    out = {}

    def walk(collections):
        for coll in collections:
            for ref in coll.list_documents():
                snap = ref.get()
                if snap.exists:
                    out[ref.path] = comparable(snap.to_dict())
                walk(ref.collections())
    walk(client.collections())
    return out


def test_the_emulators_export_imports_into_hearth_identically(tmp_path):
    emu = Emulator(tmp_path / "emu")
    try:
        write_every_value_type(firestore_client(emu.port))
        expected = dump(firestore_client(emu.port))
        export = tmp_path / "export"
        export.mkdir()
        r = requests.post(f"http://127.0.0.1:{emu.port}/emulator/v1/projects/{PROJECT}:export",
                          json={"database": f"projects/{PROJECT}/databases/(default)", "export_directory": str(export),
                                "export_name": "firestore_export"}, timeout=60)
        assert r.status_code == 200, r.text
    finally:
        emu.stop()
    # The metadata firebase-tools writes next to the emulator's export (hubExport.ts).
    (export / "firebase-export-metadata.json").write_text(json.dumps({
        "version": "13.29.1",
        "firestore": {"version": "1.19.9", "path": "firestore_export",
                      "metadata_file": "firestore_export/firestore_export.overall_export_metadata"}}))
    assert len(expected) == 5
    srv = HearthServer(BIN, tmp_path / "hearth")
    proc = run("import", str(export), "--data-dir", str(srv.data_dir))
    assert proc.returncode == 0, proc.stderr
    assert "5 documents" in proc.stdout
    srv.start()
    try:
        assert dump(firestore_client(srv.port)) == expected
    finally:
        srv.stop()


def test_hearths_export_imports_into_the_emulator_identically(tmp_path):
    emulator_binary()
    srv = HearthServer(BIN, tmp_path / "hearth")
    srv.start()
    try:
        write_every_value_type(firestore_client(srv.port))
        expected = dump(firestore_client(srv.port))
    finally:
        srv.stop()
    export = tmp_path / "export"
    proc = run("export", str(export), "--data-dir", str(srv.data_dir))
    assert proc.returncode == 0, proc.stderr
    metadata = json.loads((export / "firebase-export-metadata.json").read_text())
    emu = Emulator(tmp_path / "emu", f"--seed_from_export={export / metadata['firestore']['metadata_file']}")
    try:
        assert dump(firestore_client(emu.port)) == expected
    finally:
        emu.stop()
    # And back: Hearth's own export imports into a new Hearth the same.
    other = HearthServer(BIN, tmp_path / "again")
    proc = run("import", str(export), "--data-dir", str(other.data_dir))
    assert proc.returncode == 0, proc.stderr
    other.start()
    try:
        assert dump(firestore_client(other.port)) == expected
    finally:
        other.stop()


def test_a_damaged_firestore_export_is_refused_with_nothing_imported(tmp_path):
    srv = HearthServer(BIN, tmp_path / "hearth")
    srv.start()
    try:
        write_every_value_type(firestore_client(srv.port))
    finally:
        srv.stop()
    export = tmp_path / "export"
    assert run("export", str(export), "--data-dir", str(srv.data_dir)).returncode == 0
    output = export / "firestore_export" / "all_namespaces" / "all_kinds" / "output-0"
    data = bytearray(output.read_bytes())
    data[len(data) // 2] ^= 0x55
    output.write_bytes(bytes(data))
    target = tmp_path / "target"
    proc = run("import", str(export), "--data-dir", str(target))
    assert proc.returncode != 0 and "checksum" in proc.stderr, proc.stderr
    # Nothing was written: accounts, database and documents are all still empty, so a good import works.
    good = write_emulator_export(tmp_path / "good")
    assert run("import", str(good), "--data-dir", str(target)).returncode == 0


# --------------------------------------------------------------------------------------------
# Named databases: every database is exported, a named one's documents carrying its id in their
# keys as the emulator's export endpoint writes them; the emulator seeds each into its database.
# --------------------------------------------------------------------------------------------

NAMED = "other-db"


def write_named_database(client):
    c = client.collection("items")
    c.document("n1").set({"db": NAMED, "ref": client.document("items/n2"), "list": [1, {"k": "v"}]})
    c.document("n2").set({"db": NAMED, "n": 2})
    client.document("items/n1/sub/deep").set({"deep": True})


def test_named_databases_export_and_import_both_ways(tmp_path):
    emulator_binary()
    srv = HearthServer(BIN, tmp_path / "hearth")
    srv.start()
    try:
        write_every_value_type(firestore_client(srv.port))
        write_named_database(firestore_client(srv.port, NAMED))
        expected = dump(firestore_client(srv.port))
        expected_named = dump(firestore_client(srv.port, NAMED))
    finally:
        srv.stop()
    assert len(expected_named) == 3 and expected_named["items/n1"][1]["ref"] == ("ref", "items/n2")
    export = tmp_path / "export"
    proc = run("export", str(export), "--data-dir", str(srv.data_dir))
    assert proc.returncode == 0, proc.stderr
    assert "8 documents" in proc.stdout and "2 Firestore databases" in proc.stdout, proc.stdout
    metadata = json.loads((export / "firebase-export-metadata.json").read_text())

    # Google's emulator seeds both databases from the one export.
    emu = Emulator(tmp_path / "emu", f"--seed_from_export={export / metadata['firestore']['metadata_file']}")
    try:
        assert dump(firestore_client(emu.port)) == expected
        assert dump(firestore_client(emu.port, NAMED)) == expected_named
        # And its own export of the named database (its export endpoint) imports into Hearth's.
        emu_export = tmp_path / "emu-export"
        emu_export.mkdir()
        r = requests.post(f"http://127.0.0.1:{emu.port}/emulator/v1/projects/{PROJECT}:export",
                          json={"database": f"projects/{PROJECT}/databases/{NAMED}", "export_directory": str(emu_export),
                                "export_name": "firestore_export"}, timeout=60)
        assert r.status_code == 200, r.text
    finally:
        emu.stop()
    (emu_export / "firebase-export-metadata.json").write_text(json.dumps({
        "version": "13.29.1",
        "firestore": {"version": "1.19.9", "path": "firestore_export",
                      "metadata_file": "firestore_export/firestore_export.overall_export_metadata"}}))
    from_emulator = HearthServer(BIN, tmp_path / "from-emulator")
    proc = run("import", str(emu_export), "--data-dir", str(from_emulator.data_dir))
    assert proc.returncode == 0, proc.stderr
    from_emulator.start()
    try:
        assert dump(firestore_client(from_emulator.port, NAMED)) == expected_named
        # The emulator (1.19.9) writes every database it holds into that export, each
        # document's key naming its database; whatever (default) documents it wrote are
        # Hearth's originals.
        assert dump(firestore_client(from_emulator.port)) in ({}, expected)
    finally:
        from_emulator.stop()

    # Hearth's export back into a new Hearth: both databases.
    again = HearthServer(BIN, tmp_path / "again")
    proc = run("import", str(export), "--data-dir", str(again.data_dir))
    assert proc.returncode == 0, proc.stderr
    again.start()
    try:
        assert dump(firestore_client(again.port)) == expected
        assert dump(firestore_client(again.port, NAMED)) == expected_named
    finally:
        again.stop()


def test_an_imported_export_answers_queries_as_the_emulator_does(tmp_path):
    """The bulk import writes the index entries the engine writes: queries over the imported
    documents (single-field indexes, array-contains, a collection group, a composite order)
    answer as Google's emulator seeded from the same export does."""
    emulator_binary()
    srv = HearthServer(BIN, tmp_path / "hearth")
    srv.start()
    try:
        client = firestore_client(srv.port)
        batch = client.batch()
        for i in range(1200):
            r = (i * 7919) % 1000
            ref = client.document(f"items/d{i:04d}") if i % 3 else client.document(f"groups/g{i % 7}/items/x{i:04d}")
            batch.set(ref, {"n": r, "name": f"name-{r % 37}", "tags": [f"t{r % 5}", r % 3], "score": r / 7,
                            "info": {"city": f"c{r % 9}"}})
            if i % 400 == 399:
                batch.commit()
                batch = client.batch()
        batch.commit()
    finally:
        srv.stop()
    export = tmp_path / "export"
    assert run("export", str(export), "--data-dir", str(srv.data_dir)).returncode == 0
    metadata = json.loads((export / "firebase-export-metadata.json").read_text())
    imported = HearthServer(BIN, tmp_path / "imported")
    proc = run("import", str(export), "--data-dir", str(imported.data_dir))
    assert proc.returncode == 0 and "1200 documents" in proc.stdout, proc.stderr

    from google.cloud.firestore_v1.base_query import FieldFilter

    def answers(client) -> list:
        items = client.collection("items")
        group = client.collection_group("items")
        queries = [
            items.where(filter=FieldFilter("n", ">", 500)).order_by("n").limit(40),
            group.where(filter=FieldFilter("tags", "array_contains", "t3")).order_by("__name__").limit(60),
            group.where(filter=FieldFilter("info.city", "==", "c4")).order_by("__name__"),
            items.order_by("score", direction="DESCENDING").limit(25),
            group.where(filter=FieldFilter("name", "in", ["name-1", "name-2"])).order_by("__name__").limit(30),
        ]
        return [[d.reference.path for d in q.stream()] for q in queries]

    emu = Emulator(tmp_path / "emu", f"--seed_from_export={export / metadata['firestore']['metadata_file']}")
    try:
        expected = answers(firestore_client(emu.port))
    finally:
        emu.stop()
    assert all(expected), expected
    imported.start()
    try:
        assert answers(firestore_client(imported.port)) == expected
    finally:
        imported.stop()
