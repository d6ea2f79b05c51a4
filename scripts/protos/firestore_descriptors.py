"""Build the FileDescriptorSet for google.firestore.v1 from the installed google-cloud-firestore package.

Used by scripts/generate-firestore-protos; run with the project venv's python (it needs google-cloud-firestore,
pinned in tests/conformance/requirements.txt). Nothing here copies a .proto file: the descriptors are the ones
the package's proto-plus message classes build at import time, edited as follows:

1. File names `google/cloud/firestore_v1/types/X.proto` become `google/firestore/v1/X.proto` (the names the
   googleapis and Firebase SDK protos use), dependencies rewritten to match.
2. `StructuredQuery.from_` (proto-plus renames the Python keyword) is named `from` again; number 2 unchanged.
3. `Write.verify = 5` (string, in the `operation` oneof) is added: the Firebase Apple SDK sends it inside
   transactions (a precondition-only write) and the googleapis-derived descriptors lack it.
4. `service Firestore` is added to google/firestore/v1/firestore.proto. Its methods, request/response types and
   streaming kinds are read off the GAPIC gRPC transport (FirestoreGrpcTransport) by handing it a recording
   channel: each RPC property asks the channel for a unary_unary / unary_stream / stream_stream callable with the
   method path and the (de)serialisers, whose classes name the message types.

Usage:
    python firestore_descriptors.py descriptors OUT.fds   # FileDescriptorSet (binary) incl. well-known types
    python firestore_descriptors.py methods               # JSON list of the transport's Firestore RPCs
    python firestore_descriptors.py versions              # JSON of the input package versions
"""

import json
import sys
from importlib import metadata

SERVICE = "google.firestore.v1.Firestore"
OLD_PREFIX = "google/cloud/firestore_v1/types/"
NEW_PREFIX = "google/firestore/v1/"
STREAMING = {
    "unary_unary": (False, False),
    "unary_stream": (False, True),
    "stream_unary": (True, False),
    "stream_stream": (True, True),
}


def _message_descriptor(callable_):
    """The protobuf message descriptor behind a proto-plus `serialize`/`deserialize` or a pb2 `FromString`."""
    owner = getattr(callable_, "__self__", None)
    if owner is None:
        raise SystemExit(f"cannot tell the message type of {callable_!r}")
    if hasattr(owner, "pb"):  # proto-plus message class
        return owner.pb().DESCRIPTOR
    return owner.DESCRIPTOR  # generated pb2 class (google.protobuf.Empty)


def transport_methods():
    """[(name, input descriptor, output descriptor, client_streaming, server_streaming)] in transport order."""
    import grpc
    from google.cloud.firestore_v1.services.firestore.transports.grpc import FirestoreGrpcTransport

    recorded = []

    class RecordingChannel(grpc.Channel):
        def _record(kind):
            def make(self, method, request_serializer=None, response_deserializer=None, *_, **__):
                recorded.append((kind, method, request_serializer, response_deserializer))
                return lambda *a, **k: None
            return make

        unary_unary = _record("unary_unary")
        unary_stream = _record("unary_stream")
        stream_unary = _record("stream_unary")
        stream_stream = _record("stream_stream")

        def subscribe(self, *a, **k):
            pass

        def unsubscribe(self, *a, **k):
            pass

        def close(self):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *a):
            return False

    channel = RecordingChannel()
    transport = FirestoreGrpcTransport(channel=channel)
    # The transport wraps the channel in a logging interceptor that creates unary callables lazily; ask the
    # recording channel itself, with the stub cache emptied, so every RPC property reaches it.
    recorded.clear()
    transport._stubs.clear()
    transport._logged_channel = channel
    for attr in sorted(vars(FirestoreGrpcTransport)):
        if isinstance(getattr(FirestoreGrpcTransport, attr), property):
            try:
                getattr(transport, attr)
            except Exception:  # properties that are not RPC stubs (none raise today)
                pass
    methods = []
    seen = set()
    for kind, path, ser, deser in recorded:
        prefix = "/" + SERVICE + "/"
        if not path.startswith(prefix) or path in seen:
            continue  # google.longrunning.Operations mixins are not part of the Firestore service
        seen.add(path)
        client_streaming, server_streaming = STREAMING[kind]
        methods.append((path[len(prefix):], _message_descriptor(ser), _message_descriptor(deser),
                        client_streaming, server_streaming))
    if len(methods) < 15:
        raise SystemExit(f"found only {len(methods)} Firestore RPCs on the transport; has its layout changed?")
    return sorted(methods, key=lambda m: m[0])


def _rename(name):
    return NEW_PREFIX + name[len(OLD_PREFIX):] if name.startswith(OLD_PREFIX) else name


def build_descriptor_set():
    from google.protobuf import descriptor_pb2

    methods = transport_methods()
    # Every file reachable from the RPC messages, dependencies first.
    order, visiting = [], set()

    def visit(fd):
        if fd.name in visiting:
            return
        visiting.add(fd.name)
        for dep in fd.dependencies:
            visit(dep)
        order.append(fd)

    for _, inp, out, _, _ in methods:
        visit(inp.file)
        visit(out.file)

    files = []
    for fd in order:
        proto = descriptor_pb2.FileDescriptorProto.FromString(fd.serialized_pb)
        proto.name = _rename(proto.name)
        for i, dep in enumerate(proto.dependency):
            proto.dependency[i] = _rename(dep)
        if proto.package == "google.firestore.v1":
            _patch_firestore_file(proto, methods)
        files.append(proto)

    names = {f.name for f in files}
    for required in ("google/firestore/v1/firestore.proto", "google/firestore/v1/write.proto",
                     "google/type/latlng.proto", "google/rpc/status.proto"):
        if required not in names:
            raise SystemExit(f"descriptor set lacks {required}; the package layout has changed")
    return descriptor_pb2.FileDescriptorSet(file=files)


def _message(proto, name):
    for m in proto.message_type:
        if m.name == name:
            return m
    raise SystemExit(f"{proto.name} has no message {name}")


def _patch_firestore_file(proto, methods):
    from google.protobuf import descriptor_pb2

    FDP = descriptor_pb2.FieldDescriptorProto
    if proto.name == NEW_PREFIX + "query.proto":
        query = _message(proto, "StructuredQuery")
        for field in query.field:
            if field.name == "from_" and field.number == 2:
                field.name = "from"
                field.json_name = "from"
    if proto.name == NEW_PREFIX + "write.proto":
        write = _message(proto, "Write")
        if not any(f.number == 5 for f in write.field):
            oneof_index = [o.name for o in write.oneof_decl].index("operation")
            # A oneof's fields must be declared consecutively: put `verify` after the last `operation` member.
            fields = [FDP.FromString(f.SerializeToString()) for f in write.field]
            last = max(i for i, f in enumerate(fields) if f.HasField("oneof_index") and f.oneof_index == oneof_index)
            verify = FDP()
            fields.insert(last + 1, verify)
            verify.name = "verify"
            verify.json_name = "verify"
            verify.number = 5
            verify.label = FDP.LABEL_OPTIONAL
            verify.type = FDP.TYPE_STRING
            verify.oneof_index = oneof_index
            del write.field[:]
            write.field.extend(fields)
    if proto.name == NEW_PREFIX + "firestore.proto":
        service = proto.service.add()
        service.name = SERVICE.rsplit(".", 1)[1]
        for name, inp, out, client_streaming, server_streaming in methods:
            method = service.method.add()
            method.name = name
            method.input_type = "." + inp.full_name
            method.output_type = "." + out.full_name
            if client_streaming:
                method.client_streaming = True
            if server_streaming:
                method.server_streaming = True
            for d in (inp, out):
                dep = _rename(d.file.name)
                if dep != proto.name and dep not in proto.dependency:
                    proto.dependency.append(dep)


def versions():
    return {p: metadata.version(p) for p in
            ("google-cloud-firestore", "googleapis-common-protos", "proto-plus", "protobuf")}


def main(argv):
    if len(argv) >= 2 and argv[1] == "descriptors" and len(argv) == 3:
        with open(argv[2], "wb") as out:
            out.write(build_descriptor_set().SerializeToString())
    elif len(argv) == 2 and argv[1] == "methods":
        print(json.dumps([
            {"name": n, "input": i.full_name, "output": o.full_name,
             "clientStreaming": cs, "serverStreaming": ss}
            for n, i, o, cs, ss in transport_methods()], indent=2))
    elif len(argv) == 2 and argv[1] == "versions":
        print(json.dumps(versions()))
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
