"""Write Tests/HearthFirestoreProtoTests/Fixtures/golden.json: Firestore messages serialised by the official
google-cloud-firestore package, and the Firestore RPCs of its GAPIC gRPC transport.

The Swift tests (HearthFirestoreProtoTests) decode these bytes with the generated code, check fields, re-encode
and compare bytes; they also build the same messages in Swift and compare the encodings with these bytes.
Run with the project venv: .venv/bin/python scripts/protos/make_golden_fixture.py
Serialisation is deterministic (map entries sorted by key), as swift-protobuf's useDeterministicOrdering.
"""

import base64
import datetime
import json
import os
import sys

from google.cloud.firestore_v1.types import (common, document, firestore, query, write)
from google.protobuf import struct_pb2, timestamp_pb2, wrappers_pb2
from google.type import latlng_pb2

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import firestore_descriptors  # noqa: E402

DB = "projects/demo-hearth/databases/(default)"
DOCS = DB + "/documents"


def ts(seconds, nanos):
    return timestamp_pb2.Timestamp(seconds=seconds, nanos=nanos)


def every_value():
    """An ArrayValue holding one Value of every kind (array order is fixed, so the bytes are)."""
    V = document.Value
    return V(array_value=document.ArrayValue(values=[
        V(null_value=struct_pb2.NULL_VALUE),
        V(boolean_value=True),
        V(integer_value=-9007199254740993),
        V(double_value=2.5),
        V(timestamp_value=ts(1700000000, 123456000)),
        V(string_value="héllo ✓"),
        V(bytes_value=b"\x00\x01\xfe\xff"),
        V(reference_value=DOCS + "/rooms/r1"),
        V(geo_point_value=latlng_pb2.LatLng(latitude=48.8566, longitude=2.3522)),
        V(array_value=document.ArrayValue(values=[V(integer_value=1), V(string_value="two")])),
        V(map_value=document.MapValue(fields={"b": V(integer_value=2), "a": V(boolean_value=False)})),
    ]))


def commit_request():
    V = document.Value
    FT = write.DocumentTransform.FieldTransform
    return firestore.CommitRequest(
        database=DB,
        writes=[
            write.Write(
                update=document.Document(name=DOCS + "/rooms/r1",
                                         fields={"title": V(string_value="Lobby"), "size": V(integer_value=3)}),
                update_mask=common.DocumentMask(field_paths=["title", "size"]),
                update_transforms=[
                    FT(field_path="visits", increment=V(integer_value=1)),
                    FT(field_path="updatedAt", set_to_server_value=FT.ServerValue.REQUEST_TIME),
                    FT(field_path="tags", append_missing_elements=document.ArrayValue(values=[V(string_value="new")])),
                ],
                current_document=common.Precondition(exists=True),
            ),
            write.Write(delete=DOCS + "/rooms/r2",
                        current_document=common.Precondition(update_time=ts(1700000001, 5))),
            write.Write(transform=write.DocumentTransform(
                document=DOCS + "/rooms/r3",
                field_transforms=[FT(field_path="high", maximum=V(double_value=9.5)),
                                  FT(field_path="old", remove_all_from_array=document.ArrayValue(
                                      values=[V(null_value=struct_pb2.NULL_VALUE)]))])),
        ],
        transaction=b"txn-\x01\x02",
    )


def listen_request():
    Q = query.StructuredQuery
    return firestore.ListenRequest(
        database=DB,
        add_target=firestore.Target(
            query=firestore.Target.QueryTarget(
                parent=DOCS,
                structured_query=Q(
                    from_=[Q.CollectionSelector(collection_id="rooms")],
                    order_by=[Q.Order(field=Q.FieldReference(field_path="__name__"),
                                      direction=Q.Direction.ASCENDING)],
                    limit=wrappers_pb2.Int32Value(value=3),
                )),
            resume_token=b"\x0a\x0bresume",
            target_id=20601,
            once=False,
            expected_count=wrappers_pb2.Int32Value(value=2),
        ),
        labels={"goog-listen-tags": "realtime", "a-label": "x"},
    )


def run_query_request():
    Q = query.StructuredQuery
    V = document.Value
    return firestore.RunQueryRequest(
        parent=DOCS + "/rooms/r1",
        structured_query=Q(
            select=Q.Projection(fields=[Q.FieldReference(field_path="title")]),
            from_=[Q.CollectionSelector(collection_id="messages", all_descendants=True)],
            where=Q.Filter(composite_filter=Q.CompositeFilter(
                op=Q.CompositeFilter.Operator.AND,
                filters=[
                    Q.Filter(field_filter=Q.FieldFilter(field=Q.FieldReference(field_path="score"),
                                                        op=Q.FieldFilter.Operator.GREATER_THAN_OR_EQUAL,
                                                        value=V(integer_value=10))),
                    Q.Filter(composite_filter=Q.CompositeFilter(
                        op=Q.CompositeFilter.Operator.OR,
                        filters=[
                            Q.Filter(field_filter=Q.FieldFilter(
                                field=Q.FieldReference(field_path="tag"), op=Q.FieldFilter.Operator.IN,
                                value=V(array_value=document.ArrayValue(values=[V(string_value="a"),
                                                                               V(string_value="b")])))),
                            Q.Filter(unary_filter=Q.UnaryFilter(op=Q.UnaryFilter.Operator.IS_NULL,
                                                                field=Q.FieldReference(field_path="deletedAt"))),
                        ])),
                ])),
            order_by=[Q.Order(field=Q.FieldReference(field_path="score"), direction=Q.Direction.DESCENDING),
                      Q.Order(field=Q.FieldReference(field_path="__name__"), direction=Q.Direction.DESCENDING)],
            start_at=query.Cursor(values=[V(integer_value=42), V(reference_value=DOCS + "/rooms/r1/messages/m9")],
                                  before=True),
            end_at=query.Cursor(values=[V(integer_value=10)], before=False),
            offset=1,
            limit=wrappers_pb2.Int32Value(value=20),
        ),
        read_time=ts(1700000002, 999999999),
    )


def entry(name, message):
    pb = type(message).pb(message)
    return {"name": name, "type": pb.DESCRIPTOR.full_name,
            "base64": base64.b64encode(pb.SerializeToString(deterministic=True)).decode("ascii")}


def main():
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                       "Tests", "HearthFirestoreProtoTests", "Fixtures", "golden.json")
    fixture = {
        "comment": "Generated by scripts/protos/make_golden_fixture.py; do not edit.",
        "versions": firestore_descriptors.versions(),
        "methods": [
            {"name": n, "input": i.full_name, "output": o.full_name,
             "clientStreaming": cs, "serverStreaming": ss}
            for n, i, o, cs, ss in firestore_descriptors.transport_methods()],
        "messages": [
            entry("commitRequest", commit_request()),
            entry("listenRequest", listen_request()),
            entry("runQueryRequest", run_query_request()),
            entry("everyValue", every_value()),
        ],
    }
    with open(os.path.normpath(out), "w") as f:
        json.dump(fixture, f, indent=2)
        f.write("\n")
    print("wrote", os.path.normpath(out))


if __name__ == "__main__":
    main()
