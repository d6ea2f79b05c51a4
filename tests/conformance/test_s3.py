"""Hearth's S3-compatible API through the official `boto3`, plus presigned URLs and POST
forms used the way app backends hand them out (plain `requests` as the browser/app)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import socket
import subprocess
import time
import urllib.parse
import uuid
import xml.etree.ElementTree as ET

import boto3
import pytest
import requests
from boto3.s3.transfer import TransferConfig
from botocore.config import Config
from botocore.exceptions import ClientError

from conftest import HearthServer, TARGET
from rawhttp import read_response

pytestmark = pytest.mark.hearth_only("the S3 API is served by Hearth")


def create_key(data_dir, *buckets) -> dict:
    cmd = [os.environ["HEARTH_BIN"], "admin", "s3-keys", "create", "--data-dir", str(data_dir), "--json"]
    for b in buckets:
        cmd += ["--bucket", b]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=60).stdout
    return json.loads(out)


def client(endpoint, key, secret=None):
    return boto3.client(
        "s3", endpoint_url=endpoint, region_name="us-east-1",
        aws_access_key_id=key["accessKeyId"], aws_secret_access_key=secret or key["secretAccessKey"],
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}, signature_version="s3v4"))


def code(excinfo) -> str:
    return excinfo.value.response["Error"]["Code"]


@pytest.fixture(scope="module")
def hearth(server):
    if TARGET != "hearth":
        pytest.skip("the S3 API is a Hearth service")
    return server


@pytest.fixture(scope="module")
def key(hearth):
    return create_key(hearth.data_dir)


@pytest.fixture(scope="module")
def s3(hearth, key):
    return client(hearth.s3_base, key)


@pytest.fixture
def bucket(s3):
    name = f"s3-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=name)
    yield name
    paginator = s3.get_paginator("list_objects_v2")
    for page in paginator.paginate(Bucket=name):
        keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
        if keys:
            s3.delete_objects(Bucket=name, Delete={"Objects": keys})
    s3.delete_bucket(Bucket=name)


def test_buckets(s3, bucket):
    s3.head_bucket(Bucket=bucket)
    assert bucket in [b["Name"] for b in s3.list_buckets()["Buckets"]]
    with pytest.raises(ClientError) as e:
        s3.create_bucket(Bucket=bucket)
    assert code(e) == "BucketAlreadyOwnedByYou"
    with pytest.raises(ClientError) as e:
        s3.head_bucket(Bucket="no-such-bucket-here")
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404


def test_put_get_head_ranges_and_conditions(s3, bucket):
    data = os.urandom(300_000)
    put = s3.put_object(Bucket=bucket, Key="a/b c+ü.bin", Body=data, ContentType="application/x-test",
                        Metadata={"owner": "alice"}, CacheControl="max-age=5")
    assert put["ETag"] == '"%s"' % hashlib.md5(data).hexdigest()
    got = s3.get_object(Bucket=bucket, Key="a/b c+ü.bin")
    assert got["Body"].read() == data and got["ContentType"] == "application/x-test"
    assert got["Metadata"] == {"owner": "alice"} and got["CacheControl"] == "max-age=5"
    head = s3.head_object(Bucket=bucket, Key="a/b c+ü.bin")
    assert head["ContentLength"] == len(data)
    part = s3.get_object(Bucket=bucket, Key="a/b c+ü.bin", Range="bytes=100-199")
    assert part["Body"].read() == data[100:200] and part["ContentRange"] == f"bytes 100-199/{len(data)}"
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="a/b c+ü.bin", Range=f"bytes={len(data) + 10}-")
    assert code(e) == "InvalidRange"
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="a/b c+ü.bin", IfNoneMatch=put["ETag"])
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 304
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="a/b c+ü.bin", IfMatch='"0000"')
    assert code(e) == "PreconditionFailed"
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="missing")
    assert code(e) == "NoSuchKey"
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket="no-such-bucket-here", Key="x")
    assert code(e) == "NoSuchBucket"


def test_listing_pages_over_1000_keys_and_prefixes(s3, bucket):
    for i in range(1050):
        s3.put_object(Bucket=bucket, Key=f"logs/{i:05d}.txt", Body=b"x")
    for d in ("x", "y"):
        s3.put_object(Bucket=bucket, Key=f"dirs/{d}/file", Body=b"x")
    keys = []
    pages = 0
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix="logs/"):
        keys += [o["Key"] for o in page.get("Contents", [])]
        pages += 1
    assert keys == [f"logs/{i:05d}.txt" for i in range(1050)] and pages == 2
    small = s3.list_objects_v2(Bucket=bucket, Prefix="logs/", MaxKeys=7)
    assert small["KeyCount"] == 7 and small["IsTruncated"]
    nxt = s3.list_objects_v2(Bucket=bucket, Prefix="logs/", MaxKeys=7, ContinuationToken=small["NextContinuationToken"])
    assert nxt["Contents"][0]["Key"] == "logs/00007.txt"
    top = s3.list_objects_v2(Bucket=bucket, Delimiter="/")
    assert [p["Prefix"] for p in top["CommonPrefixes"]] == ["dirs/", "logs/"] and "Contents" not in top
    assert s3.list_objects_v2(Bucket=bucket, Prefix="dirs/", Delimiter="/")["CommonPrefixes"] == [{"Prefix": "dirs/x/"}, {"Prefix": "dirs/y/"}]


def test_multipart_upload_copy_and_delete(s3, bucket):
    p1, p2 = os.urandom(5 * 1024 * 1024), os.urandom(1024 * 1024 + 7)
    up = s3.create_multipart_upload(Bucket=bucket, Key="big.bin", ContentType="video/mp4")
    e1 = s3.upload_part(Bucket=bucket, Key="big.bin", UploadId=up["UploadId"], PartNumber=1, Body=p1)["ETag"]
    e2 = s3.upload_part(Bucket=bucket, Key="big.bin", UploadId=up["UploadId"], PartNumber=2, Body=p2)["ETag"]
    parts = s3.list_parts(Bucket=bucket, Key="big.bin", UploadId=up["UploadId"])["Parts"]
    assert [p["PartNumber"] for p in parts] == [1, 2] and parts[1]["Size"] == len(p2)
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="big.bin")  # nothing visible before completion
    done = s3.complete_multipart_upload(Bucket=bucket, Key="big.bin", UploadId=up["UploadId"],
                                        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]})
    expected = hashlib.md5(hashlib.md5(p1).digest() + hashlib.md5(p2).digest()).hexdigest() + "-2"
    assert done["ETag"] == f'"{expected}"'
    got = s3.get_object(Bucket=bucket, Key="big.bin")
    assert got["Body"].read() == p1 + p2 and got["ContentType"] == "video/mp4"
    # Too-small parts and aborted uploads.
    up2 = s3.create_multipart_upload(Bucket=bucket, Key="small.bin")
    a = s3.upload_part(Bucket=bucket, Key="small.bin", UploadId=up2["UploadId"], PartNumber=1, Body=b"tiny")["ETag"]
    b = s3.upload_part(Bucket=bucket, Key="small.bin", UploadId=up2["UploadId"], PartNumber=2, Body=b"tiny")["ETag"]
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket=bucket, Key="small.bin", UploadId=up2["UploadId"],
                                     MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": a}, {"PartNumber": 2, "ETag": b}]})
    assert code(e) == "EntityTooSmall"
    s3.abort_multipart_upload(Bucket=bucket, Key="small.bin", UploadId=up2["UploadId"])
    with pytest.raises(ClientError) as e:
        s3.list_parts(Bucket=bucket, Key="small.bin", UploadId=up2["UploadId"])
    assert code(e) == "NoSuchUpload"
    # Copy, then delete one and many.
    s3.copy_object(Bucket=bucket, Key="copy.bin", CopySource={"Bucket": bucket, "Key": "big.bin"})
    assert s3.head_object(Bucket=bucket, Key="copy.bin")["ContentLength"] == len(p1) + len(p2)
    s3.delete_object(Bucket=bucket, Key="big.bin")
    assert s3.get_object(Bucket=bucket, Key="copy.bin")["Body"].read() == p1 + p2
    res = s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": "copy.bin"}, {"Key": "never-was"}]})
    assert sorted(d["Key"] for d in res["Deleted"]) == ["copy.bin", "never-was"]


def test_managed_transfer_upload_and_download(s3, bucket, tmp_path):
    src = tmp_path / "src.bin"
    src.write_bytes(os.urandom(13 * 1024 * 1024))
    cfg = TransferConfig(multipart_threshold=5 * 1024 * 1024, multipart_chunksize=5 * 1024 * 1024, max_concurrency=4)
    s3.upload_file(str(src), bucket, "transfer.bin", Config=cfg)
    dst = tmp_path / "dst.bin"
    s3.download_file(bucket, "transfer.bin", str(dst), Config=cfg)
    assert dst.read_bytes() == src.read_bytes()


def test_presigned_urls(s3, bucket):
    put_url = s3.generate_presigned_url("put_object", Params={"Bucket": bucket, "Key": "up.txt"}, ExpiresIn=300)
    assert requests.put(put_url, data=b"from an app", timeout=30).status_code == 200
    get_url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "up.txt"}, ExpiresIn=300)
    r = requests.get(get_url, timeout=30)
    assert r.status_code == 200 and r.content == b"from an app"
    tampered = get_url.replace("up.txt", "other.txt")
    r = requests.get(tampered, timeout=30)
    assert r.status_code == 403 and b"<Code>SignatureDoesNotMatch</Code>" in r.content
    bad_sig = get_url[:-4] + ("0000" if not get_url.endswith("0000") else "1111")
    assert requests.get(bad_sig, timeout=30).status_code == 403
    short = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "up.txt"}, ExpiresIn=1)
    time.sleep(2.1)
    r = requests.get(short, timeout=30)
    assert r.status_code == 403 and b"Request has expired" in r.content


def test_presigned_urls_signature_v2(hearth, key, s3, bucket):
    """boto3's generate_presigned_url without signature_version="s3v4" signs with version 2
    (AWSAccessKeyId/Expires/Signature): those URLs work too, sub-resources included."""
    name = "dir/with space/ünïcode+plus.txt"
    s3.put_object(Bucket=bucket, Key=name, Body=b"v2 body", ContentType="text/plain")
    for cfg in (Config(s3={"addressing_style": "path"}), Config(s3={"addressing_style": "path"}, signature_version="s3")):
        legacy = boto3.client("s3", endpoint_url=hearth.s3_base, region_name="us-east-1", aws_access_key_id=key["accessKeyId"],
                              aws_secret_access_key=key["secretAccessKey"], config=cfg)
        url = legacy.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": name}, ExpiresIn=300)
        if cfg.signature_version == "s3":
            assert "AWSAccessKeyId=" in url and "Signature=" in url
        r = requests.get(url, timeout=30)
        assert r.status_code == 200 and r.content == b"v2 body", r.text
        # A response override is part of what is signed …
        url = legacy.generate_presigned_url(
            "get_object", Params={"Bucket": bucket, "Key": name, "ResponseContentType": "application/x-test"}, ExpiresIn=300)
        r = requests.get(url, timeout=30)
        assert r.status_code == 200 and r.headers["Content-Type"] == "application/x-test", r.text
        # … so changing it breaks the signature, as does another key or a changed signature.
        if "AWSAccessKeyId=" in url:
            r = requests.get(url.replace("application%2Fx-test", "text%2Fhtml"), timeout=30)
            assert r.status_code == 403 and b"<Code>SignatureDoesNotMatch</Code>" in r.content
            other = url.replace(urllib.parse.quote(name), "dir/other.txt")
            assert requests.get(other, timeout=30).status_code == 403
            put = legacy.generate_presigned_url("put_object", Params={"Bucket": bucket, "Key": "v2-put.txt"}, ExpiresIn=300)
            assert requests.put(put, data=b"uploaded with v2", timeout=30).status_code == 200
            assert s3.get_object(Bucket=bucket, Key="v2-put.txt")["Body"].read() == b"uploaded with v2"
            short = legacy.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": name}, ExpiresIn=1)
            time.sleep(2.1)
            r = requests.get(short, timeout=30)
            assert r.status_code == 403 and b"Request has expired" in r.content
    wrong = boto3.client("s3", endpoint_url=hearth.s3_base, region_name="us-east-1", aws_access_key_id=key["accessKeyId"],
                         aws_secret_access_key="not-the-secret", config=Config(s3={"addressing_style": "path"}, signature_version="s3"))
    r = requests.get(wrong.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": name}, ExpiresIn=300), timeout=30)
    assert r.status_code == 403 and b"<Code>SignatureDoesNotMatch</Code>" in r.content


def test_presigned_post_policies(s3, bucket):
    post = s3.generate_presigned_post(
        bucket, "uploads/${filename}", Fields={"Content-Type": "image/png"},
        Conditions=[["starts-with", "$key", "uploads/"], ["content-length-range", 1, 100], {"Content-Type": "image/png"}],
        ExpiresIn=300)
    ok = requests.post(post["url"], data=post["fields"], files={"file": ("pic.png", b"\x89PNG small")}, timeout=30)
    assert ok.status_code == 204, ok.text
    got = s3.get_object(Bucket=bucket, Key="uploads/pic.png")
    assert got["Body"].read() == b"\x89PNG small" and got["ContentType"] == "image/png"
    big = requests.post(post["url"], data=post["fields"], files={"file": ("big.png", b"x" * 500)}, timeout=30)
    assert big.status_code == 400 and b"EntityTooLarge" in big.content
    wrong = dict(post["fields"], key="elsewhere/x.png")
    r = requests.post(post["url"], data=wrong, files={"file": ("x.png", b"x")}, timeout=30)
    assert r.status_code == 403 and b"Policy Condition failed" in r.content
    forged = dict(post["fields"], policy=post["fields"]["policy"][:-4] + "AAAA")
    assert requests.post(post["url"], data=forged, files={"file": ("x.png", b"x")}, timeout=30).status_code == 403
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="uploads/big.png")


def test_wrong_secret_and_scoped_keys(hearth, s3, bucket):
    key = create_key(hearth.data_dir, bucket)
    scoped = client(hearth.s3_base, key)
    scoped.put_object(Bucket=bucket, Key="ok.txt", Body=b"1")
    other = f"s3-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=other)
    with pytest.raises(ClientError) as e:
        scoped.put_object(Bucket=other, Key="no.txt", Body=b"1")
    assert code(e) == "AccessDenied"
    s3.delete_bucket(Bucket=other)
    with pytest.raises(ClientError) as e:
        client(hearth.s3_base, key, secret="wrong" * 8).get_object(Bucket=bucket, Key="ok.txt")
    assert code(e) == "SignatureDoesNotMatch"


@pytest.fixture(scope="module")
def production(tmp_path_factory):
    if TARGET != "hearth":
        pytest.skip("production mode is a Hearth property")
    srv = HearthServer(os.environ["HEARTH_BIN"], tmp_path_factory.mktemp("s3prod"), emulator=False)
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


def test_production_requires_valid_signatures(production):
    key = create_key(production.data_dir)
    s3 = client(production.s3_base, key)
    s3.create_bucket(Bucket="prod-bucket")
    s3.put_object(Bucket="prod-bucket", Key="k", Body=b"v")
    r = requests.get(f"{production.s3_base}/prod-bucket/k", timeout=30)
    assert r.status_code == 403 and b"<Code>AccessDenied</Code>" in r.content
    with pytest.raises(ClientError) as e:
        client(production.s3_base, {"accessKeyId": "HRTHNOSUCHKEY", "secretAccessKey": "x" * 40}).list_buckets()
    assert code(e) == "InvalidAccessKeyId"
    subprocess.run([os.environ["HEARTH_BIN"], "admin", "s3-keys", "revoke", "--data-dir", str(production.data_dir),
                    key["accessKeyId"]], check=True, capture_output=True, timeout=60)
    # The server trusts a key it read for one second; a revocation from the CLI (another
    # process) is seen after that.
    time.sleep(1.1)
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket="prod-bucket", Key="k")
    assert code(e) == "InvalidAccessKeyId"


def test_aws_chunked_bodies_are_verified(hearth, s3, bucket):
    """aws-chunked uploads as current SDKs stream them (unsigned chunks, a checksum trailer):
    a good body is stored; a wrong or undeclared checksum, or a body cut short, gets S3's 400
    and stores nothing."""
    import base64
    import zlib
    data = os.urandom(200_000)

    def body(payload, trailer_name, trailer_value, final=True):
        out = b""
        for i in range(0, len(payload), 65_536):
            piece = payload[i:i + 65_536]
            out += f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
        if final:
            out += b"0\r\n" + f"{trailer_name}:{trailer_value}\r\n".encode() + b"\r\n"
        return out

    def put(name, content, declared):
        return requests.put(f"{hearth.s3_base}/{bucket}/{name}", data=content, timeout=60, headers={
            "x-amz-content-sha256": "STREAMING-UNSIGNED-PAYLOAD-TRAILER", "Content-Encoding": "aws-chunked",
            "x-amz-decoded-content-length": str(len(data)), "x-amz-trailer": declared})

    crc = base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode()
    r = put("good", body(data, "x-amz-checksum-crc32", crc), "x-amz-checksum-crc32")
    assert r.status_code == 200, r.text
    assert s3.get_object(Bucket=bucket, Key="good")["Body"].read() == data

    wrong = base64.b64encode(zlib.crc32(data[1:]).to_bytes(4, "big")).decode()
    cases = [
        ("wrong", body(data, "x-amz-checksum-crc32", wrong), "x-amz-checksum-crc32", "BadDigest"),
        ("undeclared", body(data, "x-amz-checksum-crc32", crc), "x-amz-checksum-crc32c", "InvalidRequest"),
        ("short", body(data, "x-amz-checksum-crc32", crc, final=False), "x-amz-checksum-crc32", "IncompleteBody"),
    ]
    for name, content, declared, expected in cases:
        r = put(name, content, declared)
        assert r.status_code == 400, (name, r.status_code, r.text)
        assert f"<Code>{expected}</Code>".encode() in r.content, (name, r.text)
        with pytest.raises(ClientError) as e:
            s3.head_object(Bucket=bucket, Key=name)
        assert e.value.response["Error"]["Code"] in ("404", "NoSuchKey"), name


def legacy_client(endpoint, key, secret=None):
    """boto3 with `signature_version='s3'`: presigned URLs and POST forms signed with SigV2."""
    return boto3.client(
        "s3", endpoint_url=endpoint, region_name="us-east-1",
        aws_access_key_id=key["accessKeyId"], aws_secret_access_key=secret or key["secretAccessKey"],
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}, signature_version="s3"))


def test_presigned_post_signature_v2(hearth, key, s3, bucket):
    """`generate_presigned_post` with SigV2 (fields AWSAccessKeyId, policy, signature): every
    policy condition is checked exactly as for SigV4 forms."""
    legacy = legacy_client(hearth.s3_base, key)
    conditions = [["starts-with", "$key", "uploads/"], ["content-length-range", 1, 100], {"Content-Type": "image/png"}]
    post = legacy.generate_presigned_post(bucket, "uploads/${filename}", Fields={"Content-Type": "image/png"},
                                          Conditions=conditions, ExpiresIn=300)
    fields = post["fields"]
    assert {"AWSAccessKeyId", "policy", "signature"} <= set(fields) and "x-amz-signature" not in fields
    ok = requests.post(post["url"], data=fields, files={"file": ("pic.png", b"\x89PNG v2")}, timeout=30)
    assert ok.status_code == 204, ok.text
    got = s3.get_object(Bucket=bucket, Key="uploads/pic.png")
    assert got["Body"].read() == b"\x89PNG v2" and got["ContentType"] == "image/png"

    def refused(data, content=b"x", status=403, code=None):
        r = requests.post(post["url"], data=data, files={"file": ("x.png", content)}, timeout=30)
        assert r.status_code == status, r.text
        if code:
            assert f"<Code>{code}</Code>".encode() in r.content, r.text
        return r
    # Too large for content-length-range; a key outside starts-with; another Content-Type.
    refused(fields, b"x" * 500, status=400, code="EntityTooLarge")
    assert b"Policy Condition failed" in refused(dict(fields, key="elsewhere/x.png"), code="AccessDenied").content
    refused(dict(fields, **{"Content-Type": "text/html"}), code="AccessDenied")
    # An extra field the policy does not cover.
    assert b"Extra input fields" in refused(dict(fields, acl="public-read"), code="AccessDenied").content
    # A tampered policy (a wider size range, re-encoded) or a changed signature.
    policy = json.loads(base64.b64decode(fields["policy"]))
    policy["conditions"] = [c if not (isinstance(c, list) and c[0] == "content-length-range") else ["content-length-range", 1, 10**9]
                            for c in policy["conditions"]]
    tampered = base64.b64encode(json.dumps(policy).encode()).decode()
    refused(dict(fields, policy=tampered), code="SignatureDoesNotMatch")
    refused(dict(fields, signature=base64.b64encode(b"\0" * 20).decode()), code="SignatureDoesNotMatch")
    wrong = legacy_client(hearth.s3_base, key, secret="not-the-secret")
    forged = wrong.generate_presigned_post(bucket, "uploads/${filename}", Fields={"Content-Type": "image/png"},
                                           Conditions=conditions, ExpiresIn=300)
    refused(forged["fields"], code="SignatureDoesNotMatch")
    # Without the signature or the access key id the form is not signed at all.
    refused({k: v for k, v in fields.items() if k != "signature"}, code="AccessDenied")
    # An expired policy.
    short = legacy.generate_presigned_post(bucket, "uploads/${filename}", Fields={"Content-Type": "image/png"},
                                           Conditions=conditions, ExpiresIn=1)
    time.sleep(2.1)
    r = requests.post(short["url"], data=short["fields"], files={"file": ("late.png", b"x")}, timeout=30)
    assert r.status_code == 403 and b"Policy expired" in r.content, r.text
    for name in ("uploads/x.png", "elsewhere/x.png", "uploads/late.png"):
        with pytest.raises(ClientError):
            s3.head_object(Bucket=bucket, Key=name)


def test_default_boto3_presigned_post_works(hearth, key, s3, bucket):
    """Whatever boto3 1.44.5 signs a presigned POST with by default (no signature_version)."""
    default = boto3.client("s3", endpoint_url=hearth.s3_base, region_name="us-east-1", aws_access_key_id=key["accessKeyId"],
                           aws_secret_access_key=key["secretAccessKey"], config=Config(s3={"addressing_style": "path"}))
    post = default.generate_presigned_post(bucket, "default.txt", ExpiresIn=300)
    r = requests.post(post["url"], data=post["fields"], files={"file": ("default.txt", b"default form")}, timeout=30)
    assert r.status_code == 204, r.text
    assert s3.get_object(Bucket=bucket, Key="default.txt")["Body"].read() == b"default form"


def test_presigned_post_signature_v2_unknown_key_in_production(production):
    key = create_key(production.data_dir)
    client(production.s3_base, key).create_bucket(Bucket="prod-post")
    ghost = legacy_client(production.s3_base, {"accessKeyId": "HRTHNOSUCHKEY", "secretAccessKey": "x" * 40})
    post = ghost.generate_presigned_post("prod-post", "k.txt", ExpiresIn=300)
    r = requests.post(post["url"], data=post["fields"], files={"file": ("k.txt", b"x")}, timeout=30)
    assert r.status_code == 403 and b"<Code>InvalidAccessKeyId</Code>" in r.content, r.text
    good = legacy_client(production.s3_base, key).generate_presigned_post("prod-post", "k.txt", ExpiresIn=300)
    r = requests.post(good["url"], data=good["fields"], files={"file": ("k.txt", b"x")}, timeout=30)
    assert r.status_code == 204, r.text


@pytest.mark.parametrize("expect", [False, True])
def test_body_over_the_size_limit_is_refused_before_it_is_sent(hearth, s3, bucket, expect):
    """A PUT declaring more than S3's 5 GiB single-PUT limit: EntityTooLarge from the headers
    alone (instead of `100 Continue` when the client waits for it), the connection closed
    rather than read to the end, and the server still serving."""
    host, port = "127.0.0.1", hearth.ports["s3"]
    head = (f"PUT /{bucket}/huge.bin HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Length: {6 * 1024 ** 3}\r\n"
            + ("Expect: 100-continue\r\n" if expect else "") + "\r\n")
    with socket.create_connection((host, port), timeout=20) as sock:
        sock.sendall(head.encode())
        sock.settimeout(20)
        assert not sock.recv(12, socket.MSG_PEEK).startswith(b"HTTP/1.1 100")  # no body is asked for
        status, headers, body = read_response(sock)
        assert status == 400 and b"<Code>EntityTooLarge</Code>" in body, body
        ET.fromstring(body)
        assert headers.get("connection") == "close"
        sock.settimeout(20)
        closed = False
        try:
            for _ in range(4096):  # at most 256 MiB: the server must close long before
                sock.sendall(b"\0" * 65536)
        except (BrokenPipeError, ConnectionResetError):
            closed = True
        assert closed
    s3.put_object(Bucket=bucket, Key="after.txt", Body=b"still serving")
    assert s3.get_object(Bucket=bucket, Key="after.txt")["Body"].read() == b"still serving"
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="huge.bin")


CONTROL = [c for c in range(0x20) if c not in (0x09, 0x0A, 0x0D)] + [0x7F]


@pytest.mark.parametrize("ch", [0x00, 0x0A, 0x0D] + CONTROL[1:])
def test_error_bodies_are_well_formed_xml_for_control_characters_in_keys(hearth, bucket, ch):
    """A key with a character XML 1.0 forbids (NUL, other C0 controls) is echoed in errors
    without it: every error body parses with Python's XML parser."""
    key = urllib.parse.quote(f"a{chr(ch)}b", safe="")
    for method in ("GET", "HEAD", "PUT", "DELETE", "POST"):
        r = requests.request(method, f"{hearth.s3_base}/{bucket}/{key}", data=b"x" if method == "PUT" else None, timeout=30)
        if r.status_code < 400:
            continue
        assert r.status_code < 500, r.text
        if method != "HEAD":
            root = ET.fromstring(r.content)
            assert root.tag == "Error" and root.findtext("Code")
    r = requests.get(f"{hearth.s3_base}/{bucket}/{key}", timeout=30)
    assert 400 <= r.status_code < 500
    ET.fromstring(r.content)
