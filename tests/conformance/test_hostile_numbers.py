"""Numbers an attacker controls, sent through the official clients and raw HTTP, on every port
that reads them. Before issue 13 one `Range: bytes=0-9223372036854775807` on a public download
URL or a presigned GET overflowed the byte-range parser and the process trapped, taking all
services down; an HTTP date with a 19-digit year did the same on S3's conditional GETs. Each
test sends the hostile value, checks the protocol's own answer, then checks that the server is
still serving."""

from __future__ import annotations

import os
import uuid

import pytest
import requests
from botocore.exceptions import ClientError

from test_s3 import client, create_key
from test_storage_v0 import OWNER, TIMEOUT, obj_url, upload_media, unique

pytestmark = pytest.mark.hearth_only("Storage and S3 are Hearth services")

INT64_MAX = 2**63 - 1
DATA = bytes(range(256)) * 4


@pytest.fixture(scope="module")
def hearth(server):
    if getattr(server, "kind", "") != "hearth":
        pytest.skip("storage is a Hearth service")
    return server


def still_serving(hearth):
    assert requests.get(f"{hearth.storage_base}/v0/b/demo-hearth.appspot.com/o", headers=OWNER, timeout=TIMEOUT).status_code == 200
    assert hearth.proc.poll() is None, "the server process exited"


@pytest.mark.parametrize("header,status,body", [
    (f"bytes=0-{INT64_MAX}", 206, DATA),
    ("bytes=0-99999999999999999999999999999", 206, DATA),
    (f"bytes=-{INT64_MAX}", 206, DATA),
    (f"bytes={INT64_MAX}-", 416, None),
    (f"bytes={INT64_MAX}-{INT64_MAX}", 416, None),
    ("bytes=10-5", 200, DATA),          # an invalid range is ignored (RFC 9110)
    ("bytes=-0", 416, None),
])
def test_v0_download_ranges(hearth, header, status, body):
    name = unique("range")
    assert upload_media(hearth.storage_base, name, DATA).status_code == 200
    r = requests.get(obj_url(hearth.storage_base, name), params={"alt": "media"}, headers={**OWNER, "Range": header}, timeout=TIMEOUT)
    assert r.status_code == status, r.text
    if body is not None:
        assert r.content == body
    if status == 206:
        assert r.headers["Content-Range"] == f"bytes 0-{len(DATA) - 1}/{len(DATA)}"
    if status == 416:
        assert r.json()["error"]["status"] == "OUT_OF_RANGE"
        assert r.headers["Content-Range"] == f"bytes */{len(DATA)}"
    still_serving(hearth)


def test_gcs_client_download_to_int64_max(hearth):
    os.environ["STORAGE_EMULATOR_HOST"] = hearth.storage_base
    try:
        from google.cloud import storage
        gcs = storage.Client(project="demo-hearth")
        bucket = gcs.create_bucket(f"num-{uuid.uuid4().hex[:12]}")
        blob = bucket.blob("x.bin")
        blob.upload_from_string(DATA)
        assert blob.download_as_bytes(start=0, end=INT64_MAX) == DATA
        assert blob.download_as_bytes(start=1000, end=INT64_MAX) == DATA[1000:]
        blob.delete()
        bucket.delete()
    finally:
        os.environ.pop("STORAGE_EMULATOR_HOST", None)
    still_serving(hearth)


def test_gcs_resumable_content_range_is_checked(hearth):
    base = hearth.storage_base
    bucket = f"num-{uuid.uuid4().hex[:12]}"
    assert requests.post(f"{base}/storage/v1/b", params={"project": "demo-hearth"}, json={"name": bucket}, headers=OWNER, timeout=TIMEOUT).ok
    start = requests.post(f"{base}/upload/storage/v1/b/{bucket}/o", params={"uploadType": "resumable", "name": "r.bin"},
                          json={}, headers=OWNER, timeout=TIMEOUT)
    assert start.status_code == 200, start.text
    session = start.headers["Location"]
    for bad in [f"bytes 0-{INT64_MAX + 1}/*", f"bytes */{INT64_MAX + 1}", "bytes 5-4/10", "bytes 0-10/10", "bytes x-y/z"]:
        r = requests.put(session, data=b"", headers={**OWNER, "Content-Range": bad}, timeout=TIMEOUT)
        assert r.status_code == 400, (bad, r.status_code, r.text)
        assert r.json()["error"]["status"] == "INVALID_ARGUMENT"
    r = requests.put(session, data=DATA, headers={**OWNER, "Content-Range": f"bytes 0-{len(DATA) - 1}/{len(DATA)}"}, timeout=TIMEOUT)
    assert r.status_code == 200, r.text
    assert int(r.json()["size"]) == len(DATA)
    still_serving(hearth)


@pytest.fixture(scope="module")
def s3(hearth):
    return client(hearth.s3_base, create_key(hearth.data_dir))


def test_s3_ranges_through_boto3_and_a_presigned_get(hearth, s3):
    bucket = f"num-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="k", Body=DATA)
    got = s3.get_object(Bucket=bucket, Key="k", Range=f"bytes=0-{INT64_MAX}")
    assert got["Body"].read() == DATA and got["ContentRange"] == f"bytes 0-{len(DATA) - 1}/{len(DATA)}"
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="k", Range=f"bytes={INT64_MAX}-")
    assert e.value.response["Error"]["Code"] == "InvalidRange"
    # Anyone holding a presigned GET can choose the Range header.
    url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "k"}, ExpiresIn=300)
    r = requests.get(url, headers={"Range": f"bytes=0-{INT64_MAX}"}, timeout=TIMEOUT)
    assert r.status_code == 206 and r.content == DATA
    r = requests.get(url, headers={"Range": "bytes=-99999999999999999999999"}, timeout=TIMEOUT)
    assert r.status_code == 206 and r.content == DATA
    still_serving(hearth)
    s3.delete_object(Bucket=bucket, Key="k")
    s3.delete_bucket(Bucket=bucket)


@pytest.mark.parametrize("date", [
    "Thu, 01 Jan 9223372036854775807 00:00:00 GMT",
    "Thu, 9223372036854775807 Jan 2020 00:00:00 GMT",
    "Thu, 01 Jan 2020 9223372036854775807:00:00 GMT",
    "Thu, 31 Feb 2020 00:00:00 GMT",
])
def test_s3_conditional_get_with_hostile_dates(hearth, s3, date):
    bucket = f"num-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="k", Body=DATA)
    url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "k"}, ExpiresIn=300)
    # An invalid date is ignored, as RFC 9110 says: the object is served.
    for header in ["If-Modified-Since", "If-Unmodified-Since"]:
        r = requests.get(url, headers={header: date}, timeout=TIMEOUT)
        assert r.status_code == 200 and r.content == DATA, (header, r.status_code, r.text)
    still_serving(hearth)
    s3.delete_object(Bucket=bucket, Key="k")
    s3.delete_bucket(Bucket=bucket)


def test_s3_conditional_get_with_valid_dates(hearth, s3):
    bucket = f"num-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="k", Body=DATA)
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="k", IfModifiedSince="2999-01-01T00:00:00Z")
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 304
    assert s3.get_object(Bucket=bucket, Key="k", IfModifiedSince="2000-01-01T00:00:00Z")["Body"].read() == DATA
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="k", IfUnmodifiedSince="2000-01-01T00:00:00Z")
    assert e.value.response["Error"]["Code"] == "PreconditionFailed"
    s3.delete_object(Bucket=bucket, Key="k")
    s3.delete_bucket(Bucket=bucket)
