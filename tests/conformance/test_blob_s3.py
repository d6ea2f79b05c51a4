"""`hearth serve --blob-s3`: object bytes kept in an external S3 bucket (moto's server mode as
the stand-in S3), behind the same Firebase Storage and S3 APIs."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid

import boto3
import pytest
import requests
from botocore.config import Config

from conftest import HearthServer, TARGET

pytestmark = pytest.mark.hearth_only("the external blob backend is a Hearth feature")


MOTO_LOG: dict = {}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def moto(tmp_path_factory):
    if TARGET != "hearth":
        pytest.skip("Hearth only")
    port = free_port()
    MOTO_LOG["path"] = tmp_path_factory.mktemp("moto") / "moto.log"
    log = open(MOTO_LOG["path"], "wb")
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            requests.get(url, timeout=1)
            break
        except requests.RequestException:
            assert time.monotonic() < deadline, "moto server did not start"
            time.sleep(0.2)
    try:
        yield url
    finally:
        os.killpg(proc.pid, 9)
        proc.wait(timeout=10)


@pytest.fixture(scope="module")
def backend(moto, tmp_path_factory):
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    remote = boto3.client("s3", endpoint_url=moto, region_name="us-east-1",
                          config=Config(s3={"addressing_style": "path"}))
    remote.create_bucket(Bucket="hearth-blobs")
    srv = HearthServer(os.environ["HEARTH_BIN"], tmp_path_factory.mktemp("blobs3"),
                       extra_args=("--blob-s3", f"{moto}/hearth-blobs/prod/blobs"))
    srv.start()
    try:
        yield srv, remote
    finally:
        srv.stop()


def remote_keys(remote) -> list[str]:
    return [o["Key"] for o in remote.list_objects_v2(Bucket="hearth-blobs").get("Contents", [])]


def eventually(check, timeout=15.0):
    """Replaced and deleted objects' bytes are removed after the write answers (in the
    background), so the external bucket catches up shortly after."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


def test_objects_live_in_the_external_bucket(backend):
    srv, remote = backend
    base = f"{srv.storage_base}/v0/b/demo-hearth.appspot.com/o"
    data = os.urandom(3 * 1024 * 1024 + 11)
    r = requests.post(base, params={"name": "users/u1/video.bin"}, data=data,
                      headers={"Authorization": "Bearer owner", "Content-Type": "video/mp4"}, timeout=60)
    assert r.status_code == 200, r.text
    keys = remote_keys(remote)
    assert len(keys) == 1 and keys[0].startswith("prod/blobs/")
    assert remote.get_object(Bucket="hearth-blobs", Key=keys[0])["Body"].read() == data
    got = requests.get(f"{base}/users%2Fu1%2Fvideo.bin", params={"alt": "media"}, headers={"Authorization": "Bearer owner"},
                       timeout=60)
    assert got.content == data
    part = requests.get(f"{base}/users%2Fu1%2Fvideo.bin", params={"alt": "media"},
                        headers={"Authorization": "Bearer owner", "Range": "bytes=10-19"}, timeout=60)
    assert part.status_code == 206 and part.content == data[10:20]
    # Replacing and deleting remove the old bytes from the external bucket.
    requests.post(base, params={"name": "users/u1/video.bin"}, data=b"smaller",
                  headers={"Authorization": "Bearer owner"}, timeout=60)
    assert eventually(lambda: len(remote_keys(remote)) == 1 and remote_keys(remote) != keys)
    assert requests.delete(f"{base}/users%2Fu1%2Fvideo.bin", headers={"Authorization": "Bearer owner"}, timeout=60).status_code == 204
    assert eventually(lambda: remote_keys(remote) == [])
    # Nothing is spooled locally once uploads finish.
    assert not any((srv.data_dir / "objects" / "tmp").iterdir())


def test_s3_api_and_multipart_over_the_external_bucket(backend):
    srv, remote = backend
    s3 = boto3.client("s3", endpoint_url=srv.s3_base, region_name="us-east-1", aws_access_key_id="any",
                      aws_secret_access_key="any", config=Config(s3={"addressing_style": "path"}))
    bucket = f"b-{uuid.uuid4().hex[:8]}"
    s3.create_bucket(Bucket=bucket)
    p1, p2 = os.urandom(5 * 1024 * 1024), os.urandom(100)
    up = s3.create_multipart_upload(Bucket=bucket, Key="k")
    e1 = s3.upload_part(Bucket=bucket, Key="k", UploadId=up["UploadId"], PartNumber=1, Body=p1)["ETag"]
    e2 = s3.upload_part(Bucket=bucket, Key="k", UploadId=up["UploadId"], PartNumber=2, Body=p2)["ETag"]
    s3.complete_multipart_upload(Bucket=bucket, Key="k", UploadId=up["UploadId"],
                                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]})
    assert s3.get_object(Bucket=bucket, Key="k")["Body"].read() == p1 + p2
    assert eventually(lambda: len(remote_keys(remote)) == 1), "the parts are deleted once the object is assembled"
    s3.delete_object(Bucket=bucket, Key="k")
    s3.delete_bucket(Bucket=bucket)
    assert eventually(lambda: remote_keys(remote) == [])


def test_batch_delete_frees_external_bytes_in_batches(backend):
    """S3 DeleteObjects on Hearth deletes the rows in one transaction; the freed bytes go to the
    external bucket as DeleteObjects batches (moto's log shows POST ?delete), and a copy's
    shared bytes stay."""
    srv, remote = backend
    s3 = boto3.client("s3", endpoint_url=srv.s3_base, region_name="us-east-1", aws_access_key_id="any",
                      aws_secret_access_key="any", config=Config(s3={"addressing_style": "path"}))
    bucket = f"b-{uuid.uuid4().hex[:8]}"
    s3.create_bucket(Bucket=bucket)
    before = set(remote_keys(remote))
    for i in range(30):
        s3.put_object(Bucket=bucket, Key=f"many/{i}", Body=f"body {i}".encode())
    s3.copy_object(Bucket=bucket, Key="kept", CopySource={"Bucket": bucket, "Key": "many/0"})
    assert len(set(remote_keys(remote)) - before) == 30
    r = s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": f"many/{i}"} for i in range(30)] + [{"Key": "never-existed"}]})
    assert len(r["Deleted"]) == 31 and not r.get("Errors")
    assert s3.list_objects_v2(Bucket=bucket).get("KeyCount") == 1
    assert eventually(lambda: len(set(remote_keys(remote)) - before) == 1), "the freed bytes leave the external bucket"
    assert s3.get_object(Bucket=bucket, Key="kept")["Body"].read() == b"body 0"
    assert "POST /hearth-blobs?delete" in MOTO_LOG["path"].read_text(errors="replace")
    s3.delete_object(Bucket=bucket, Key="kept")
    s3.delete_bucket(Bucket=bucket)
    assert eventually(lambda: set(remote_keys(remote)) == before)
