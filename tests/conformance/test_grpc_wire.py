"""Firestore's gRPC API at the wire level, with grpcio and ``google.cloud.firestore_v1.types``:
the Write stream, statuses for bad input, and security rules over gRPC."""

from __future__ import annotations

import base64
import json
import time

import grpc
import pytest
import requests
from google.cloud.firestore_v1.types import common, document, firestore as fs, write as write_types
from google.protobuf import empty_pb2

from conftest import PROJECT, TARGET, HearthServer
from fsutil import new_collection_id

ROOT = f"projects/{PROJECT}/databases/(default)"
DOCS = ROOT + "/documents"
OWNER = (("authorization", "Bearer owner"),)
SERVICE = "/google.firestore.v1.Firestore/"


def _pb(message_type):
    return message_type.pb()


def unary(channel, method, request_type, response_type):
    return channel.unary_unary(
        SERVICE + method, request_serializer=lambda m: request_type.serialize(m),
        response_deserializer=lambda b: response_type.deserialize(b))


def raw_unary(channel, method):
    return channel.unary_unary(SERVICE + method, request_serializer=None, response_deserializer=None)


@pytest.fixture(scope="module")
def channel(server):
    ch = grpc.insecure_channel(f"127.0.0.1:{server.port}")
    yield ch
    ch.close()


def doc_write(name: str, fields: dict) -> write_types.Write:
    return write_types.Write(update=document.Document(
        name=name, fields={k: document.Value(integer_value=v) for k, v in fields.items()}))


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def get(channel, name, metadata=OWNER):
    return unary(channel, "GetDocument", fs.GetDocumentRequest, document.Document)(
        fs.GetDocumentRequest(name=name), metadata=metadata, timeout=10)


def _commit_with_verify(channel, name: str, precondition: common.Precondition, also: write_types.Write | None = None):
    """`Commit` with a `verify` write (field 5 of `Write`, which google-cloud-firestore's types
    leave out; the mobile SDKs send it), encoded by hand, and optionally a second write."""
    pre = common.Precondition.serialize(precondition)
    verify = b"\x2a" + varint(len(name.encode())) + name.encode() + b"\x22" + varint(len(pre)) + pre
    body = b"\x0a" + varint(len(ROOT)) + ROOT.encode() + b"\x12" + varint(len(verify)) + verify
    if also is not None:
        extra = write_types.Write.serialize(also)
        body += b"\x12" + varint(len(extra)) + extra
    return fs.CommitResponse.deserialize(raw_unary(channel, "Commit")(body, metadata=OWNER, timeout=10))


def test_verify_writes_check_what_a_transaction_read(channel):
    """The mobile SDKs' transactions commit a `verify` write for each document read but not
    written, with the version read as precondition — `exists: false` for a document read as
    missing. It passes (creating nothing) while the document is missing, fails with
    ALREADY_EXISTS once it exists; an update-time verify fails once the document changed."""
    col = new_collection_id("verify")
    missing, other = f"{DOCS}/{col}/missing", f"{DOCS}/{col}/other"
    get = unary(channel, "GetDocument", fs.GetDocumentRequest, document.Document)
    commit = unary(channel, "Commit", fs.CommitRequest, fs.CommitResponse)

    _commit_with_verify(channel, missing, common.Precondition(exists=False), also=doc_write(other, {"n": 1}))
    with pytest.raises(grpc.RpcError) as e:
        get(fs.GetDocumentRequest(name=missing), metadata=OWNER, timeout=10)
    assert e.value.code() == grpc.StatusCode.NOT_FOUND
    assert get(fs.GetDocumentRequest(name=other), metadata=OWNER, timeout=10).fields["n"].integer_value == 1

    commit(fs.CommitRequest(database=ROOT, writes=[doc_write(missing, {"a": 1})]), metadata=OWNER, timeout=10)
    with pytest.raises(grpc.RpcError) as e:
        _commit_with_verify(channel, missing, common.Precondition(exists=False))
    assert e.value.code() == grpc.StatusCode.ALREADY_EXISTS
    read_at = get(fs.GetDocumentRequest(name=missing), metadata=OWNER, timeout=10).update_time
    _commit_with_verify(channel, missing, common.Precondition(update_time=read_at))
    commit(fs.CommitRequest(database=ROOT, writes=[doc_write(missing, {"a": 2})]), metadata=OWNER, timeout=10)
    with pytest.raises(grpc.RpcError) as e:
        _commit_with_verify(channel, missing, common.Precondition(update_time=read_at))
    assert e.value.code() == grpc.StatusCode.FAILED_PRECONDITION


def test_write_stream_exchange(channel):
    col = new_collection_id("ws")
    write = channel.stream_stream(
        SERVICE + "Write", request_serializer=lambda m: m if isinstance(m, bytes) else fs.WriteRequest.serialize(m),
        response_deserializer=lambda b: fs.WriteResponse.deserialize(b))
    import queue
    outbox: queue.Queue = queue.Queue()

    def requests_iter():
        while True:
            item = outbox.get()
            if item is None:
                return
            yield item

    responses = write(requests_iter(), metadata=OWNER, timeout=30)
    outbox.put(fs.WriteRequest(database=ROOT))
    handshake = next(responses)
    assert handshake.stream_id and handshake.stream_token
    assert not handshake.write_results
    token = handshake.stream_token
    # First batch: two documents, committed atomically.
    outbox.put(fs.WriteRequest(stream_token=token, writes=[doc_write(f"{DOCS}/{col}/a", {"n": 1}), doc_write(f"{DOCS}/{col}/b", {"n": 2})]))
    first = next(responses)
    assert len(first.write_results) == 2 and first.commit_time
    assert first.stream_token and first.stream_token != token
    assert not first.stream_id
    token = first.stream_token
    # Second batch: an update with a transform, and a verify of "b".
    inc = write_types.DocumentTransform.FieldTransform(field_path="n", increment=document.Value(integer_value=5))
    update = write_types.Write(update=document.Document(name=f"{DOCS}/{col}/a", fields={}), update_mask=common.DocumentMask(field_paths=[]),
                               update_transforms=[inc], current_document=common.Precondition(exists=True))
    # Write.verify (field 5) is not in the Python package's schema: append it by hand.
    verify = field(5, f"{DOCS}/{col}/b".encode())
    outbox.put(fs.WriteRequest.serialize(fs.WriteRequest(stream_token=token, writes=[update])) + field(3, verify))
    second = next(responses)
    assert len(second.write_results) == 2
    assert second.write_results[0].transform_results[0].integer_value == 6
    assert second.stream_token != token
    assert second.commit_time.timestamp() >= first.commit_time.timestamp()
    # Empty writes are allowed: a new token, no results.
    outbox.put(fs.WriteRequest(stream_token=second.stream_token))
    third = next(responses)
    assert not third.write_results and third.stream_token != second.stream_token
    outbox.put(None)
    assert list(responses) == []
    assert get(channel, f"{DOCS}/{col}/a").fields["n"].integer_value == 6


def test_write_stream_error_ends_the_stream(channel):
    col = new_collection_id("we")
    write = channel.stream_stream(
        SERVICE + "Write", request_serializer=lambda m: fs.WriteRequest.serialize(m),
        response_deserializer=lambda b: fs.WriteResponse.deserialize(b))
    missing = write_types.Write(update=document.Document(name=f"{DOCS}/{col}/nope", fields={}),
                                current_document=common.Precondition(exists=True))
    reqs = [fs.WriteRequest(database=ROOT), fs.WriteRequest(writes=[doc_write(f"{DOCS}/{col}/ok", {"n": 1}), missing])]
    responses = write(iter(reqs), metadata=OWNER, timeout=30)
    assert next(responses).stream_token
    with pytest.raises(grpc.RpcError) as e:
        next(responses)
    assert e.value.code() == grpc.StatusCode.NOT_FOUND
    with pytest.raises(grpc.RpcError) as e:
        get(channel, f"{DOCS}/{col}/ok")
    assert e.value.code() == grpc.StatusCode.NOT_FOUND  # the batch was atomic


def test_malformed_protobuf_is_invalid_argument(channel):
    with pytest.raises(grpc.RpcError) as e:
        raw_unary(channel, "GetDocument")(b"\xff\xff\xff\xff\x0f", metadata=OWNER, timeout=10)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_unknown_method_is_unimplemented(channel):
    with pytest.raises(grpc.RpcError) as e:
        raw_unary(channel, "NoSuchMethod")(b"", metadata=OWNER, timeout=10)
    assert e.value.code() == grpc.StatusCode.UNIMPLEMENTED
    other = channel.unary_unary("/google.firestore.v1.Other/GetDocument", request_serializer=None, response_deserializer=None)
    with pytest.raises(grpc.RpcError) as e:
        other(b"", metadata=OWNER, timeout=10)
    assert e.value.code() == grpc.StatusCode.UNIMPLEMENTED


def test_listen_request_without_a_target_change_is_invalid(channel):
    listen = channel.stream_stream(SERVICE + "Listen", request_serializer=lambda m: fs.ListenRequest.serialize(m),
                                   response_deserializer=lambda b: fs.ListenResponse.deserialize(b))
    with pytest.raises(grpc.RpcError) as e:
        list(listen(iter([fs.ListenRequest(database=ROOT)]), metadata=OWNER, timeout=10))
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "add or remove a target" in e.value.details()
    assert get_ok(channel)


def test_oversized_message_is_resource_exhausted(channel):
    with pytest.raises(grpc.RpcError) as e:
        raw_unary(channel, "Commit")(b"\x0a" + b"\x80" * 3 + b"\x01" + b"x" * (13 * 1024 * 1024), metadata=OWNER, timeout=30)
    assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert get_ok(channel)


def get_ok(channel) -> bool:
    """The server still answers."""
    with pytest.raises(grpc.RpcError) as e:
        get(channel, f"{DOCS}/{new_collection_id('x')}/none")
    return e.value.code() == grpc.StatusCode.NOT_FOUND


def test_bad_names_and_arguments(channel):
    commit = unary(channel, "Commit", fs.CommitRequest, fs.CommitResponse)
    cases = [
        lambda: get(channel, f"{DOCS}/odd"),
        lambda: get(channel, "projects/p/nope"),
        lambda: get(channel, f"projects/{PROJECT}/databases/BAD_ID/documents/a/b"),
        lambda: get(channel, f"{DOCS}/a/__x__"),
        lambda: commit(fs.CommitRequest(database="nonsense", writes=[]), metadata=OWNER, timeout=10),
        lambda: commit(fs.CommitRequest(database=ROOT, writes=[write_types.Write()]), metadata=OWNER, timeout=10),
    ]
    for case in cases:
        with pytest.raises(grpc.RpcError) as e:
            case()
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT, e.value.details()
    # A commit with one invalid write writes nothing.
    col = new_collection_id("bad")
    with pytest.raises(grpc.RpcError) as e:
        commit(fs.CommitRequest(database=ROOT, writes=[doc_write(f"{DOCS}/{col}/good", {"n": 1}), doc_write(f"{DOCS}/{col}", {"n": 2})]),
               metadata=OWNER, timeout=10)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    with pytest.raises(grpc.RpcError) as e:
        get(channel, f"{DOCS}/{col}/good")
    assert e.value.code() == grpc.StatusCode.NOT_FOUND
    # Errors carry Firestore's messages.
    create = unary(channel, "CreateDocument", fs.CreateDocumentRequest, document.Document)
    create(fs.CreateDocumentRequest(parent=DOCS, collection_id=col, document_id="dup", document=document.Document()), metadata=OWNER, timeout=10)
    with pytest.raises(grpc.RpcError) as e:
        create(fs.CreateDocumentRequest(parent=DOCS, collection_id=col, document_id="dup", document=document.Document()), metadata=OWNER, timeout=10)
    assert e.value.code() == grpc.StatusCode.ALREADY_EXISTS
    assert "Document already exists" in e.value.details()
    assert get_ok(channel)


def test_unauthenticated_and_deadline(channel):
    with pytest.raises(grpc.RpcError) as e:
        get(channel, f"{DOCS}/c/d", metadata=(("authorization", "Bearer not-a-token"),))
    assert e.value.code() == grpc.StatusCode.UNAUTHENTICATED
    # A server-side deadline: the stream stays open without requests until the deadline passes.
    write = channel.stream_stream(SERVICE + "Write", request_serializer=None, response_deserializer=None)

    def slow():
        yield fs.WriteRequest.serialize(fs.WriteRequest(database=ROOT))
        time.sleep(3)

    with pytest.raises(grpc.RpcError) as e:
        list(write(slow(), metadata=OWNER, timeout=1))
    assert e.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED


def test_rollback_and_begin(channel):
    begin = unary(channel, "BeginTransaction", fs.BeginTransactionRequest, fs.BeginTransactionResponse)
    rollback = channel.unary_unary(SERVICE + "Rollback", request_serializer=lambda m: fs.RollbackRequest.serialize(m),
                                   response_deserializer=empty_pb2.Empty.FromString)
    t = begin(fs.BeginTransactionRequest(database=ROOT), metadata=OWNER, timeout=10).transaction
    assert len(t) > 0
    rollback(fs.RollbackRequest(database=ROOT, transaction=t), metadata=OWNER, timeout=10)
    # Rolling back a transaction that already ended is harmless (as Firestore and its emulator
    # answer): client libraries roll back after a commit the server aborted.
    rollback(fs.RollbackRequest(database=ROOT, transaction=t), metadata=OWNER, timeout=10)
    with pytest.raises(grpc.RpcError) as e:  # an id no server handed out
        rollback(fs.RollbackRequest(database=ROOT, transaction=b"not-a-transaction"), metadata=OWNER, timeout=10)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT


# ------------------------------------------------------------------------------------------
# Rules over gRPC
# ------------------------------------------------------------------------------------------

RULES = """rules_version = '2';
service cloud.firestore {
  match /databases/{db}/documents {
    match /users/{uid} { allow read, write: if request.auth != null && request.auth.uid == uid; }
  }
}
"""


def unsigned_token(uid: str) -> str:
    def b64(obj) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()
    now = int(time.time())
    payload = {"sub": uid, "user_id": uid, "iat": now, "exp": now + 3600, "auth_time": now,
               "firebase": {"sign_in_provider": "custom", "identities": {}}}
    return b64({"alg": "none", "typ": "JWT"}) + "." + b64(payload) + "."


@pytest.fixture
def ruled(tmp_path):
    if TARGET != "hearth":
        pytest.skip("rules from a file are a Hearth property")
    import os
    rules = tmp_path / "firestore.rules"
    rules.write_text(RULES)
    srv = HearthServer(os.environ["HEARTH_BIN"], tmp_path, emulator=True, extra_args=("--firestore-rules", str(rules)))
    srv.start()
    ch = grpc.insecure_channel(f"127.0.0.1:{srv.port}")
    try:
        yield srv, ch
    finally:
        ch.close()
        srv.stop()


@pytest.mark.hearth_only("rules file")
def test_rules_apply_to_grpc(ruled):
    srv, ch = ruled
    commit = unary(ch, "Commit", fs.CommitRequest, fs.CommitResponse)
    commit(fs.CommitRequest(database=ROOT, writes=[doc_write(f"{DOCS}/users/alice", {"n": 1}), doc_write(f"{DOCS}/users/bob", {"n": 2})]),
           metadata=OWNER, timeout=10)
    alice = (("authorization", "Bearer " + unsigned_token("alice")),)
    assert get(ch, f"{DOCS}/users/alice", metadata=alice).fields["n"].integer_value == 1
    with pytest.raises(grpc.RpcError) as e:
        get(ch, f"{DOCS}/users/bob", metadata=alice)
    assert e.value.code() == grpc.StatusCode.PERMISSION_DENIED
    with pytest.raises(grpc.RpcError) as e:
        commit(fs.CommitRequest(database=ROOT, writes=[doc_write(f"{DOCS}/users/alice", {"n": 5}), doc_write(f"{DOCS}/users/bob", {"n": 5})]),
               metadata=alice, timeout=10)
    assert e.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert get(ch, f"{DOCS}/users/alice", metadata=alice).fields["n"].integer_value == 1  # judged atomically
    commit(fs.CommitRequest(database=ROOT, writes=[doc_write(f"{DOCS}/users/alice", {"n": 7})]), metadata=alice, timeout=10)
    assert get(ch, f"{DOCS}/users/alice", metadata=alice).fields["n"].integer_value == 7
    # The REST API on the same port judges the same way.
    r = requests.get(f"http://127.0.0.1:{srv.port}/v1/{DOCS}/users/bob", headers={"Authorization": alice[0][1]}, timeout=10)
    assert r.status_code == 403
