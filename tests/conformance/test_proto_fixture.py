"""The golden protobuf fixture of HearthFirestoreProtoTests is what the pinned google-cloud-firestore produces.

Tests/HearthFirestoreProtoTests/Fixtures/golden.json holds messages serialised by the official package and the
Firestore RPCs of its gRPC transport; the Swift tests check the generated code against it. This test fails when
the installed package (tests/conformance/requirements.txt) no longer produces that fixture, i.e. when the pin
moved without rerunning scripts/protos/make_golden_fixture.py and scripts/generate-firestore-protos.
No server is involved.
"""

import base64
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts" / "protos"))

import make_golden_fixture  # noqa: E402
import firestore_descriptors  # noqa: E402

FIXTURE = json.loads((ROOT / "Tests" / "HearthFirestoreProtoTests" / "Fixtures" / "golden.json").read_text())


def test_fixture_versions_match_installed_packages():
    assert FIXTURE["versions"] == firestore_descriptors.versions()


def test_fixture_methods_match_transport():
    methods = [{"name": n, "input": i.full_name, "output": o.full_name,
                "clientStreaming": cs, "serverStreaming": ss}
               for n, i, o, cs, ss in firestore_descriptors.transport_methods()]
    assert FIXTURE["methods"] == methods
    assert {m["name"] for m in methods if m["clientStreaming"] and m["serverStreaming"]} == {"Listen", "Write"}


def test_fixture_messages_decode_with_official_types():
    from google.cloud.firestore_v1.types import document, firestore

    by_name = {m["name"]: m for m in FIXTURE["messages"]}
    commit = firestore.CommitRequest.deserialize(base64.b64decode(by_name["commitRequest"]["base64"]))
    assert commit == make_golden_fixture.commit_request()
    assert [w._pb.WhichOneof("operation") for w in commit.writes] == ["update", "delete", "transform"]
    listen = firestore.ListenRequest.deserialize(base64.b64decode(by_name["listenRequest"]["base64"]))
    assert listen.add_target.target_id == 20601 and listen.add_target.resume_token == b"\x0a\x0bresume"
    query = firestore.RunQueryRequest.deserialize(base64.b64decode(by_name["runQueryRequest"]["base64"]))
    assert query == make_golden_fixture.run_query_request()
    value = document.Value.deserialize(base64.b64decode(by_name["everyValue"]["base64"]))
    assert len(value.array_value.values) == 11


def test_descriptor_set_adds_service_and_verify():
    fds = firestore_descriptors.build_descriptor_set()
    files = {f.name: f for f in fds.file}
    service = files["google/firestore/v1/firestore.proto"].service[0]
    assert service.name == "Firestore" and len(service.method) == len(FIXTURE["methods"])
    write = next(m for m in files["google/firestore/v1/write.proto"].message_type if m.name == "Write")
    verify = next(f for f in write.field if f.name == "verify")
    assert verify.number == 5 and write.oneof_decl[verify.oneof_index].name == "operation"
    query = next(m for m in files["google/firestore/v1/query.proto"].message_type if m.name == "StructuredQuery")
    assert [f.name for f in query.field if f.number == 2] == ["from"]
