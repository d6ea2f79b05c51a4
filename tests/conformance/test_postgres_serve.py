"""`hearth serve --database-url postgres://…` (docs/postgres.md, "Serving from PostgreSQL"): the
configuration, and the faults of issue 18 — an unreachable database at start-up is a clear error,
a schema newer than the binary is refused, a database that stops while serving gets
503 / UNAVAILABLE in each protocol's own shape (never a crash, never an acknowledged write) and
the server serves again once it returns — and the offline commands, which work over the
database or refuse.

Starts a PostgreSQL of its own (``LocalPostgres``: initdb + pg_ctl, as the postgres OS user when
run as root); skipped, with the reason, where PostgreSQL's binaries are not installed."""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from pathlib import Path

import boto3
import pytest
import requests
from botocore.config import Config
from botocore.exceptions import ClientError
from google.api_core import exceptions as gexc
from google.cloud import firestore

from conftest import PROJECT, TARGET, HearthServer, LocalPostgres, _free_port, create_database, postgres_bin_dir, psql, hearth_bin

pytestmark = pytest.mark.skipif(TARGET != "hearth", reason="hearth serve --database-url is Hearth's own")

PORT_FLAGS = ["--firestore-port", "0", "--auth-port", "0", "--storage-port", "0", "--s3-port", "0", "--database-port", "0",
              "--api-port", "0", "--console-port", "0"]
RTDB_NS = f"{PROJECT}-default-rtdb"


def clean_env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items()
           if (not k.startswith("HEARTH_") or k == "HEARTH_BIN") and k not in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION")}
    env.update(extra)
    return env


def serve_until_exit(data_dir: Path, *args: str, timeout: float = 60, env: dict | None = None) -> subprocess.CompletedProcess:
    """`hearth serve` expected to stop by itself (a refused start)."""
    return subprocess.run([hearth_bin(), "serve", "--emulator", "--data-dir", str(data_dir), *PORT_FLAGS, *args],
                          capture_output=True, text=True, timeout=timeout, env=env or clean_env(), cwd=data_dir.parent)


@pytest.fixture(scope="module")
def postgres():
    if postgres_bin_dir() is None:
        pytest.skip("PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb; apt-get install postgresql)")
    pg = LocalPostgres()
    pg.start()
    try:
        yield pg
    finally:
        pg.close()


def new_database(postgres) -> str:
    return create_database(postgres.admin_url)[1]


# --------------------------------------------------------------------------------------------
# Configuration
# --------------------------------------------------------------------------------------------


def print_config(cwd: Path, *args: str, env: dict | None = None) -> dict:
    done = subprocess.run([hearth_bin(), "serve", "--print-config-format", "json", *args], cwd=cwd, env=env or clean_env(),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["settings"]


def test_the_database_url_comes_from_the_flag_then_the_environment_then_firebase_json_and_its_password_is_never_shown(tmp_path):
    (tmp_path / "firebase.json").write_text(json.dumps({"hearth": {
        "databaseUrl": "postgres://file:file-secret@db-file:5432/hearth",
        "blobStore": "s3://file-bucket?endpoint=http://minio-file:9000"}}))
    env = clean_env(HEARTH_DATABASE_URL="postgres://env:env-secret@db-env:5432/hearth", AWS_ACCESS_KEY_ID="AKID",
                    AWS_SECRET_ACCESS_KEY="aws-secret")
    flag = print_config(tmp_path, "--database-url", "postgres://flag:flag-secret@db-flag:6543/hearth?sslmode=require", env=env)
    assert flag["database-url"]["value"] == "postgres://flag:REDACTED@db-flag:6543/hearth?sslmode=require"
    assert flag["database-url"]["source"] == "flag --database-url"
    from_env = print_config(tmp_path, env=env)
    assert from_env["database-url"]["value"] == "postgres://env:REDACTED@db-env:5432/hearth"
    assert from_env["database-url"]["source"] == "env HEARTH_DATABASE_URL"
    from_file = print_config(tmp_path, env=clean_env(AWS_ACCESS_KEY_ID="AKID", AWS_SECRET_ACCESS_KEY="aws-secret"))
    assert from_file["database-url"]["value"] == "postgres://file:REDACTED@db-file:5432/hearth"
    assert from_file["database-url"]["source"] == "firebase.json hearth.databaseUrl"
    assert from_file["blob-store"]["value"] == "s3://file-bucket?endpoint=http://minio-file:9000"
    assert from_file["blob-store"]["source"] == "firebase.json hearth.blobStore"
    (tmp_path / "firebase.json").unlink()
    default = print_config(tmp_path)
    assert default["database-url"]["value"] is None
    assert default["blob-store"]["value"] == "file"
    # Nothing printed anywhere holds a password.
    for shown in (flag, from_env, from_file):
        text = json.dumps(shown)
        assert "flag-secret" not in text and "env-secret" not in text and "file-secret" not in text and "aws-secret" not in text


def test_the_blob_store_url_selects_the_external_s3_store_with_its_region(tmp_path):
    env = clean_env(AWS_ACCESS_KEY_ID="AKID", AWS_SECRET_ACCESS_KEY="aws-secret")
    shown = print_config(tmp_path, "--blob-store", "s3://objects?endpoint=http://127.0.0.1:9000&prefix=prod&region=eu-west-1", env=env)
    assert shown["blob-store"]["source"] == "flag --blob-store"
    assert shown["blob-s3-region"]["value"] == "eu-west-1"
    assert shown["blob-s3-access-key-id"]["value"] == "AKID"
    assert shown["blob-s3-secret-access-key"]["value"] == "(set, redacted)"
    # Without credentials, or with both spellings at once, or malformed: refused before anything starts.
    for args, env_, words in [
        (["--blob-store", "s3://objects?endpoint=http://127.0.0.1:9000"], clean_env(), "AWS_ACCESS_KEY_ID"),
        (["--blob-store", "s3://objects", "--blob-s3", "http://127.0.0.1:9000/objects"], env, "give one"),
        (["--blob-store", "s3://objects?endpoint=ftp://h"], env, "endpoint"),
        (["--blob-store", "gs://objects"], env, "s3://BUCKET"),
        (["--database-url", "mysql://db/hearth"], env, "postgres://"),
        (["--database-url", "postgres://db/hearth?sslmode=sometimes"], env, "sslmode"),
    ]:
        done = subprocess.run([hearth_bin(), "serve", "--print-config", *args], cwd=tmp_path, env=env_, capture_output=True, text=True, timeout=60)
        assert done.returncode != 0, args
        assert words in done.stderr, (args, done.stderr)
        assert not (tmp_path / "hearth-data").exists()


# --------------------------------------------------------------------------------------------
# Faults at start-up
# --------------------------------------------------------------------------------------------


def test_an_unreachable_database_stops_the_start_with_its_address_and_cause(tmp_path):
    port = _free_port()  # nothing listens on it
    started = time.monotonic()
    done = serve_until_exit(tmp_path / "data", "--database-url", f"postgres://hearth:pw-s3cret@127.0.0.1:{port}/hearth?sslmode=disable")
    assert time.monotonic() - started < 45
    output = done.stdout + done.stderr
    assert done.returncode == 1, output  # an exit of its own, not a signal
    assert f"Cannot connect to PostgreSQL at 127.0.0.1:{port}" in output, output
    assert "refused" in output.lower(), output
    assert "pw-s3cret" not in output
    assert "Fatal error" not in output and "Stack dump" not in output
    # Nothing was recorded as this data directory's database.
    assert not (tmp_path / "data" / "postgres-database").exists()


def test_a_schema_newer_than_the_binary_is_refused_at_start(postgres, tmp_path):
    url = new_database(postgres)
    srv = HearthServer(hearth_bin(), tmp_path / "first", database_url=url)
    srv.start()
    srv.stop()
    versions = psql(url, "SELECT max(version) FROM hearth_schema_migrations").strip()
    assert int(versions) >= 3
    psql(url, "INSERT INTO hearth_schema_migrations (version, name) VALUES (9999, 'from-a-newer-hearth')")
    done = serve_until_exit(tmp_path / "second", "--database-url", url)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "schema version 9999" in output and "newer than this binary supports" in output, output
    assert "Fatal error" not in output


# --------------------------------------------------------------------------------------------
# The database stops while serving
# --------------------------------------------------------------------------------------------


def s3_client(srv, key: dict):
    return boto3.client(
        "s3", endpoint_url=srv.s3_base, region_name="us-east-1",
        aws_access_key_id=key["accessKeyId"], aws_secret_access_key=key["secretAccessKey"],
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1, "mode": "standard"}, signature_version="s3v4",
                      read_timeout=60, connect_timeout=10))


def rtdb(srv, method: str, path: str, **kw):
    return requests.request(method, f"http://127.0.0.1:{srv.ports['database']}{path}", params={"ns": RTDB_NS},
                            headers={"Authorization": "Bearer owner"}, timeout=60, **kw)


def firestore_client(srv) -> firestore.Client:
    previous = os.environ.get("FIRESTORE_EMULATOR_HOST")
    os.environ["FIRESTORE_EMULATOR_HOST"] = f"127.0.0.1:{srv.port}"
    try:
        return firestore.Client(project=PROJECT)
    finally:
        if previous is None:
            os.environ.pop("FIRESTORE_EMULATOR_HOST", None)
        else:
            os.environ["FIRESTORE_EMULATOR_HOST"] = previous


def firestore_rest(srv, method: str, doc: str, **kw):
    return requests.request(method, f"{srv.rest_base}/v1/projects/{PROJECT}/databases/(default)/documents/{doc}",
                            headers={"Authorization": "Bearer owner"}, timeout=60, **kw)


def admin(*args: str, data_dir: Path) -> subprocess.CompletedProcess:
    return subprocess.run([hearth_bin(), *args, "--data-dir", str(data_dir)], capture_output=True, text=True, timeout=120, env=clean_env())


def test_offline_commands_over_postgres_exit_every_time(postgres, tmp_path):
    """Each `hearth admin` over PostgreSQL stops its pool and exits. They used to hang now and then
    (about one in twenty-five): the Realtime Database's feed, which only a server needs, was still
    reading through the pool when the pool stopped, and postgres-nio never answers a query written
    to a connection its stopping pool has just closed."""
    url = new_database(postgres)
    data_dir = tmp_path / "data"
    for _ in range(40):
        made = subprocess.run([hearth_bin(), "admin", "s3-keys", "create", "--json", "--data-dir", str(data_dir)],
                              capture_output=True, text=True, timeout=60, env=clean_env(HEARTH_DATABASE_URL=url))
        assert made.returncode == 0, made.stderr
    listed = admin("admin", "s3-keys", "list", "--json", data_dir=data_dir)
    assert listed.returncode == 0, listed.stderr
    assert len(json.loads(listed.stdout)) == 40


def test_a_database_that_stops_while_serving_answers_unavailable_and_the_server_recovers(postgres, tmp_path):
    url = new_database(postgres)
    srv = HearthServer(hearth_bin(), tmp_path, database_url=url)
    srv.start()
    try:
        # An S3 key made by the admin command on the data directory lands in the server's database.
        made = admin("admin", "s3-keys", "create", "--json", data_dir=srv.data_dir)
        assert made.returncode == 0, made.stderr
        s3 = s3_client(srv, json.loads(made.stdout))
        bucket = f"pg-{uuid.uuid4().hex[:10]}"
        s3.create_bucket(Bucket=bucket)
        s3.put_object(Bucket=bucket, Key="before.txt", Body=b"kept")
        assert rtdb(srv, "PUT", "/faults/before.json", json={"n": 1}).status_code == 200
        fs = firestore_client(srv)
        fs.collection("faults").document("before").set({"n": 1})
        assert requests.get(f"http://127.0.0.1:{srv.ports['api']}/readyz", timeout=30).status_code == 200

        postgres.stop()
        try:
            # Firestore over gRPC (the official client): UNAVAILABLE, the write not acknowledged.
            with pytest.raises(gexc.ServiceUnavailable):
                fs.collection("faults").document("during").set({"n": 2}, retry=None, timeout=60)
            # (A document the server read or wrote recently may be answered from its document cache;
            # one it never saw needs the database.)
            with pytest.raises(gexc.ServiceUnavailable):
                fs.collection("faults").document("never-seen").get(retry=None, timeout=60)
            # Firestore REST: 503 with Google's JSON error.
            r = firestore_rest(srv, "PATCH", "faults/rest", json={"fields": {"n": {"integerValue": "2"}}})
            assert r.status_code == 503, r.text
            assert r.json()["error"]["status"] == "UNAVAILABLE"
            # Realtime Database REST: 503 with its JSON error, the write not acknowledged.
            r = rtdb(srv, "PUT", "/faults/during.json", json={"n": 2})
            assert r.status_code == 503, r.text
            assert "error" in r.json()
            # S3: AWS's 503 ServiceUnavailable in S3's XML shape, the object not acknowledged.
            with pytest.raises(ClientError) as failed:
                s3.put_object(Bucket=bucket, Key="during.txt", Body=b"lost")
            assert failed.value.response["ResponseMetadata"]["HTTPStatusCode"] == 503
            assert failed.value.response["Error"]["Code"] == "ServiceUnavailable"
            with pytest.raises(ClientError) as failed:
                s3.get_object(Bucket=bucket, Key="before.txt")
            assert failed.value.response["ResponseMetadata"]["HTTPStatusCode"] == 503
            # Storage (GCS JSON shape): 503 with Google's error object.
            r = requests.get(f"{srv.storage_base}/storage/v1/b/{bucket}/o", headers={"Authorization": "Bearer owner"}, timeout=60)
            assert r.status_code == 503, r.text
            assert r.json()["error"]["code"] == 503
            # /readyz says why.
            r = requests.get(f"http://127.0.0.1:{srv.ports['api']}/readyz", timeout=60)
            assert r.status_code == 503 and r.json()["status"] == "unavailable", r.text
            assert srv.proc.poll() is None, "the server must not crash:\n" + srv.output()
        finally:
            postgres.start()

        # Served again once the database is back (the pool reconnects by itself).
        deadline = time.monotonic() + 60
        while True:
            r = rtdb(srv, "GET", "/faults.json")
            if r.status_code == 200:
                break
            assert time.monotonic() < deadline, f"not served again: {r.status_code} {r.text}"
            time.sleep(0.5)
        assert r.json() == {"before": {"n": 1}}, "the write refused while the database was down must not be there"
        assert fs.collection("faults").document("before").get().to_dict() == {"n": 1}
        assert not fs.collection("faults").document("during").get().exists
        assert firestore_rest(srv, "GET", "faults/rest").status_code == 404
        fs.collection("faults").document("after").set({"n": 3})
        assert s3.get_object(Bucket=bucket, Key="before.txt")["Body"].read() == b"kept"
        keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]
        assert keys == ["before.txt"]
        s3.put_object(Bucket=bucket, Key="after.txt", Body=b"new")
        assert rtdb(srv, "PUT", "/faults/after.json", json={"n": 3}).status_code == 200
        assert requests.get(f"http://127.0.0.1:{srv.ports['api']}/readyz", timeout=30).status_code == 200
        assert srv.proc.poll() is None
    finally:
        srv.stop()


# --------------------------------------------------------------------------------------------
# Offline commands
# --------------------------------------------------------------------------------------------


def test_commands_that_copy_sqlite_files_refuse_a_postgresql_data_directory(postgres, tmp_path):
    url = new_database(postgres)
    srv = HearthServer(hearth_bin(), tmp_path, database_url=url)
    srv.start()
    srv.stop()
    marker = srv.data_dir / "postgres-database"
    assert marker.exists() and (marker.stat().st_mode & 0o077) == 0, "the URL holds a password: owner-only"
    for args in (["backup", "--to", str(tmp_path / "backup")], ["export", str(tmp_path / "export")],
                 ["import", str(tmp_path / "export")]):
        done = admin(*args, data_dir=srv.data_dir)
        assert done.returncode != 0, args
        assert "PostgreSQL" in done.stderr and "postgres-database" in done.stderr, (args, done.stderr)
        assert "secret" not in done.stderr
    assert not (tmp_path / "backup").exists() and not (tmp_path / "export").exists()
    # serve without the URL: refused, never an empty SQLite store in the database's place.
    done = serve_until_exit(srv.data_dir)
    assert done.returncode == 1
    assert "--database-url" in done.stderr, done.stderr
    # The same commands with the URL in the environment are refused too.
    done = subprocess.run([hearth_bin(), "backup", "--data-dir", str(tmp_path / "other"), "--to", str(tmp_path / "b2")],
                          capture_output=True, text=True, timeout=60, env=clean_env(HEARTH_DATABASE_URL=url))
    assert done.returncode != 0 and "HEARTH_DATABASE_URL" in done.stderr, done.stderr
