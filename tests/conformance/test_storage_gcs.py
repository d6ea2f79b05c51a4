"""The Cloud Storage JSON API through Google's own `google-cloud-storage` client, pointed at
Hearth's storage port with STORAGE_EMULATOR_HOST (anonymous credentials; emulator mode)."""

from __future__ import annotations

import hashlib
import os
import uuid

import pytest

pytestmark = pytest.mark.hearth_only("Cloud Storage is served by Hearth; Google's Firestore emulator has no storage port")


@pytest.fixture(scope="module")
def gcs(server):
    if getattr(server, "kind", "") != "hearth":
        pytest.skip("storage is a Hearth service")
    os.environ["STORAGE_EMULATOR_HOST"] = server.storage_base
    from google.cloud import storage
    client = storage.Client(project="demo-hearth")
    yield client
    os.environ.pop("STORAGE_EMULATOR_HOST", None)


@pytest.fixture
def bucket(gcs):
    b = gcs.create_bucket(f"gcs-{uuid.uuid4().hex[:12]}")
    yield b
    for blob in gcs.list_blobs(b.name):
        blob.delete()
    b.delete()


def test_buckets(gcs, bucket):
    assert gcs.get_bucket(bucket.name).name == bucket.name
    assert bucket.name in [b.name for b in gcs.list_buckets()]
    assert gcs.bucket("no-such-bucket-hearth").exists() is False


def test_small_upload_download_and_metadata(bucket):
    blob = bucket.blob("dir/hello.txt")
    blob.metadata = {"owner": "alice"}
    blob.upload_from_string(b"hello world", content_type="text/plain")
    got = bucket.get_blob("dir/hello.txt")
    assert got.size == 11 and got.content_type == "text/plain" and got.metadata["owner"] == "alice"
    assert got.md5_hash == blob.md5_hash and got.crc32c
    assert got.download_as_bytes() == b"hello world"
    assert got.download_as_bytes(start=6, end=10) == b"world"
    got.content_type = "text/csv"
    got.patch()
    assert bucket.get_blob("dir/hello.txt").content_type == "text/csv"


def test_large_resumable_upload_with_checksums(bucket):
    data = os.urandom(9 * 1024 * 1024 + 123)
    blob = bucket.blob("big/data.bin", chunk_size=2 * 1024 * 1024)
    blob.upload_from_string(data, checksum="crc32c")
    again = bucket.get_blob("big/data.bin")
    assert again.size == len(data)
    got = again.download_as_bytes(checksum="crc32c")
    assert hashlib.sha256(got).digest() == hashlib.sha256(data).digest()


def test_listing_with_prefixes_and_pages(gcs, bucket):
    for i in range(12):
        bucket.blob(f"photos/{i:02d}.jpg").upload_from_string(b"x")
    for d in ("a", "b"):
        bucket.blob(f"photos/{d}/x.jpg").upload_from_string(b"x")
    it = gcs.list_blobs(bucket.name, prefix="photos/", delimiter="/", max_results=50, page_size=5)
    names = [b.name for b in it]
    assert names == [f"photos/{i:02d}.jpg" for i in range(12)]
    assert sorted(it.prefixes) == ["photos/a/", "photos/b/"]


def test_listing_from_a_start_offset_inside_a_common_prefix_ends(gcs, bucket):
    # startOffset "a/b" lies inside the common prefix "a/": the page after "a/" must move past it
    # instead of rolling it up again (which paged forever).
    for name in ("a/a.txt", "a/b.txt", "a/c/d.txt", "b/x.txt", "c.txt", "d/e/f.txt"):
        bucket.blob(name).upload_from_string(b"x")
    it = gcs.list_blobs(bucket.name, delimiter="/", start_offset="a/b", page_size=1, max_results=20)
    pages = []
    for page in it.pages:  # bounded: max_results counts objects only, so a repeating prefix never ends the iterator
        pages.append((sorted(b.name for b in page), sorted(page.prefixes)))
        if len(pages) > 8:
            break
    assert pages == [([], ["a/"]), ([], ["b/"]), (["c.txt"], []), ([], ["d/"])]
    it = gcs.list_blobs(bucket.name, prefix="a/", delimiter="/", start_offset="a/c/", end_offset="b", page_size=1)
    assert [b.name for b in it] == [] and it.prefixes == {"a/c/"}


def test_copy_rewrite_delete_and_preconditions(bucket):
    src = bucket.blob("src.txt")
    src.upload_from_string(b"copy me")
    copied = bucket.copy_blob(src, bucket, "dst.txt")
    assert copied.download_as_bytes() == b"copy me"
    rewritten = bucket.blob("rewritten.txt")
    rewritten.rewrite(src)
    assert rewritten.download_as_bytes() == b"copy me"
    from google.api_core.exceptions import PreconditionFailed, NotFound
    with pytest.raises(PreconditionFailed):
        bucket.blob("src.txt").upload_from_string(b"again", if_generation_match=0)
    src.delete()
    with pytest.raises(NotFound):
        src.delete()
    assert bucket.get_blob("dst.txt").download_as_bytes() == b"copy me"
