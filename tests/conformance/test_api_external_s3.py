"""The file registry with an external S3 bucket (`externalS3` in the api config; moto's server
as the stand-in S3): presigned URLs point at the external endpoint (SigV4, the server's
credentials from the environment), complete checks the object there (HEAD and a ranged GET),
refusals and DELETE remove it there, presign-download hands out a working GET."""

from __future__ import annotations

import os

import boto3
import pytest
import requests
from botocore.config import Config

from apiutil import JPEG, PNG, ApiUser, start_api_server
from test_blob_s3 import moto  # noqa: F401  (the moto server fixture)

pytestmark = pytest.mark.hearth_only("the file registry is Hearth's")

BUCKET = "ext-uploads"


@pytest.fixture(scope="module")
def external(moto, tmp_path_factory):  # noqa: F811
    remote = boto3.client("s3", endpoint_url=moto, region_name="us-east-1", aws_access_key_id="ext-key",
                          aws_secret_access_key="ext-secret", config=Config(s3={"addressing_style": "path"}))
    remote.create_bucket(Bucket=BUCKET)
    saved = {k: os.environ.get(k) for k in ("HEARTH_API_S3_ACCESS_KEY_ID", "HEARTH_API_S3_SECRET_ACCESS_KEY")}
    os.environ["HEARTH_API_S3_ACCESS_KEY_ID"], os.environ["HEARTH_API_S3_SECRET_ACCESS_KEY"] = "ext-key", "ext-secret"
    try:
        srv = start_api_server(tmp_path_factory, "api-external-s3", {"externalS3": {"endpoint": moto, "bucket": BUCKET}})
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    try:
        yield srv, remote, moto
    finally:
        srv.stop()


def keys(remote) -> set[str]:
    return {o["Key"] for o in remote.list_objects_v2(Bucket=BUCKET).get("Contents", [])}


def test_presign_complete_download_and_delete_against_the_external_bucket(external):
    srv, remote, endpoint = external
    user = ApiUser(srv)
    p = user.presign("image/jpeg", "jpg")
    assert p["bucket"] == BUCKET and p["key"] == f"users/{user.uid}/uploads/{p['fileId']}.jpg"
    url = p["upload"]["url"]
    assert url.startswith(f"{endpoint}/{BUCKET}/users/") and "X-Amz-Signature=" in url and "Credential=ext-key%2F" in url
    # Not uploaded yet: 409, still pending.
    r = user.complete(p["fileId"])
    assert r.status_code == 409, r.text
    assert user.upload(p, JPEG).status_code == 200
    assert p["key"] in keys(remote)
    r = user.complete(p["fileId"])
    assert r.status_code == 200 and r.json() == {"fileId": p["fileId"], "status": "ready", "sizeBytes": len(JPEG)}, r.text
    d = user.call("POST", f"/v1/files/{p['fileId']}/presign-download")
    assert d.status_code == 200, d.text
    got = requests.get(d.json()["download"]["url"], timeout=30)
    assert got.status_code == 200 and got.content == JPEG
    # Overwritten after the check: refused, deleted there.
    assert user.upload(p, JPEG + b"tail").status_code == 200
    d = user.call("POST", f"/v1/files/{p['fileId']}/presign-download")
    assert d.status_code == 409 and p["key"] not in keys(remote), d.text
    # Content that does not match the declared type: 422, deleted from the external bucket.
    bad = user.presign("image/png", "png")
    assert user.upload(bad, JPEG).status_code == 200
    r = user.complete(bad["fileId"])
    assert r.status_code == 422 and bad["key"] not in keys(remote), r.text
    # DELETE removes the object there.
    ok = user.presign("image/png", "png")
    assert user.upload(ok, PNG).status_code == 200
    assert user.complete(ok["fileId"]).status_code == 200
    assert user.call("DELETE", f"/v1/files/{ok['fileId']}").status_code == 204
    assert ok["key"] not in keys(remote)
