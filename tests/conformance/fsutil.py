"""Helpers shared by the conformance tests: value encoding/decoding, writes, queries, errors."""

from __future__ import annotations

import base64
import datetime as dt
import math
import uuid
from dataclasses import dataclass

import pytest
from google.api_core import exceptions as gexc
from google.cloud.firestore_v1.types import document as doc_types

UTC = dt.timezone.utc

# gRPC status names by code, as they appear in REST error bodies and BatchWrite statuses.
STATUS_CODES = {
    "OK": 0, "CANCELLED": 1, "UNKNOWN": 2, "INVALID_ARGUMENT": 3, "DEADLINE_EXCEEDED": 4,
    "NOT_FOUND": 5, "ALREADY_EXISTS": 6, "PERMISSION_DENIED": 7, "RESOURCE_EXHAUSTED": 8,
    "FAILED_PRECONDITION": 9, "ABORTED": 10, "OUT_OF_RANGE": 11, "UNIMPLEMENTED": 12,
    "INTERNAL": 13, "UNAVAILABLE": 14, "DATA_LOSS": 15, "UNAUTHENTICATED": 16,
}
HTTP_FOR_STATUS = {
    "INVALID_ARGUMENT": 400, "FAILED_PRECONDITION": 400, "OUT_OF_RANGE": 400,
    "NOT_FOUND": 404, "ALREADY_EXISTS": 409, "ABORTED": 409, "PERMISSION_DENIED": 403,
    "UNAUTHENTICATED": 401, "RESOURCE_EXHAUSTED": 429,
}


# ------------------------------------------------------------------------------------------
# Values
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ref:
    """A reference value: full resource name of a document."""
    name: str


@dataclass(frozen=True)
class Geo:
    lat: float
    lng: float


@dataclass(frozen=True)
class Vector:
    values: tuple


@dataclass(frozen=True)
class Int:
    """Force an integer_value (for clarity where a float could be meant)."""
    v: int


def enc(x) -> dict:
    """Python value -> google.firestore.v1.Value as a proto-plus dict."""
    if x is None:
        return {"null_value": 0}
    if isinstance(x, bool):
        return {"boolean_value": x}
    if isinstance(x, Int):
        return {"integer_value": x.v}
    if isinstance(x, int):
        return {"integer_value": x}
    if isinstance(x, float):
        return {"double_value": x}
    if isinstance(x, str):
        return {"string_value": x}
    if isinstance(x, (bytes, bytearray)):
        return {"bytes_value": bytes(x)}
    if isinstance(x, dt.datetime):
        return {"timestamp_value": x}
    if isinstance(x, Ref):
        return {"reference_value": x.name}
    if isinstance(x, Geo):
        return {"geo_point_value": {"latitude": x.lat, "longitude": x.lng}}
    if isinstance(x, Vector):
        return {"map_value": {"fields": {
            "__type__": {"string_value": "__vector__"},
            "value": {"array_value": {"values": [{"double_value": float(e)} for e in x.values]}},
        }}}
    if isinstance(x, (list, tuple)):
        return {"array_value": {"values": [enc(e) for e in x]}}
    if isinstance(x, dict):
        return {"map_value": {"fields": {k: enc(v) for k, v in x.items()}}}
    raise TypeError(f"cannot encode {type(x)}")


def fields(data: dict) -> dict:
    return {k: enc(v) for k, v in data.items()}


def _ts_to_dt(ts) -> dt.datetime:
    # proto-plus already converts Timestamp fields to DatetimeWithNanoseconds; accept raw pb too.
    if isinstance(ts, dt.datetime):
        return ts
    return dt.datetime.fromtimestamp(ts.seconds, UTC) + dt.timedelta(microseconds=ts.nanos // 1000)


def dec_pb(pb):
    """google.protobuf Value -> Python value (inverse of enc)."""
    kind = pb.WhichOneof("value_type")
    if kind == "null_value":
        return None
    if kind == "boolean_value":
        return pb.boolean_value
    if kind == "integer_value":
        return Int(pb.integer_value)
    if kind == "double_value":
        return pb.double_value
    if kind == "timestamp_value":
        ts = pb.timestamp_value
        return ("ts", ts.seconds, ts.nanos)
    if kind == "string_value":
        return pb.string_value
    if kind == "bytes_value":
        return pb.bytes_value
    if kind == "reference_value":
        return Ref(pb.reference_value)
    if kind == "geo_point_value":
        return Geo(pb.geo_point_value.latitude, pb.geo_point_value.longitude)
    if kind == "array_value":
        return [dec_pb(v) for v in pb.array_value.values]
    if kind == "map_value":
        return {k: dec_pb(v) for k, v in pb.map_value.fields.items()}
    raise AssertionError(f"unexpected value kind {kind}")


def dec(value):
    """proto-plus Value -> Python value; integers come back as Int(...), timestamps as
    ("ts", seconds, nanos) so that types are checked exactly."""
    return dec_pb(doc_types.Value.pb(value))


def kind(value) -> str:
    return doc_types.Value.pb(value).WhichOneof("value_type")


def data(doc) -> dict:
    """Decoded fields of a proto-plus Document."""
    pb = doc_types.Document.pb(doc)
    return {k: dec_pb(v) for k, v in pb.fields.items()}


def plain(x):
    """Decoded value -> plain Python (Int -> int), for easy comparisons."""
    if isinstance(x, Int):
        return x.v
    if isinstance(x, list):
        return [plain(e) for e in x]
    if isinstance(x, dict):
        return {k: plain(v) for k, v in x.items()}
    return x


def pdata(doc) -> dict:
    return plain(data(doc))


def ts_tuple(d: dt.datetime) -> tuple:
    """datetime -> ("ts", seconds, nanos) as dec() returns it."""
    nanos = getattr(d, "nanosecond", 0) + d.microsecond * 1000
    seconds = int(d.replace(microsecond=0).timestamp())
    return ("ts", seconds, nanos)


def is_nan(x) -> bool:
    return isinstance(x, float) and math.isnan(x)


# ------------------------------------------------------------------------------------------
# Names and writes
# ------------------------------------------------------------------------------------------


def new_collection_id(prefix: str = "c") -> str:
    """A collection id that no other test (or run) uses."""
    return f"{prefix}{uuid.uuid4().hex[:16]}"


def doc_name(root: str, *segments: str) -> str:
    return "/".join([root, *segments])


def leaf(name: str) -> str:
    return name.rsplit("/", 1)[1]


def w_set(name: str, values: dict, **extra) -> dict:
    w = {"update": {"name": name, "fields": fields(values)}}
    w.update(extra)
    return w


def w_delete(name: str, **extra) -> dict:
    w = {"delete": name}
    w.update(extra)
    return w


def commit(client, database: str, writes: list, transaction: bytes | None = None):
    req = {"database": database, "writes": writes}
    if transaction is not None:
        req["transaction"] = transaction
    return client.commit(request=req)


def put(client, database: str, name: str, values: dict):
    """Unconditional set of a whole document through Commit."""
    return commit(client, database, [w_set(name, values)])


def put_many(client, database: str, docs: dict):
    """{name: values} -> one Commit."""
    return commit(client, database, [w_set(n, v) for n, v in docs.items()])


def get(client, name: str, **extra):
    return client.get_document(request={"name": name, **extra})


def database_of(name: str) -> str:
    return name.split("/documents", 1)[0]


# ------------------------------------------------------------------------------------------
# Queries
# ------------------------------------------------------------------------------------------


def field_ref(path: str) -> dict:
    return {"field_path": path}


def ff(path: str, op: str, value) -> dict:
    return {"field_filter": {"field": field_ref(path), "op": op, "value": enc(value)}}


def uf(path: str, op: str) -> dict:
    return {"unary_filter": {"op": op, "field": field_ref(path)}}


def and_(*filters) -> dict:
    return {"composite_filter": {"op": "AND", "filters": list(filters)}}


def or_(*filters) -> dict:
    return {"composite_filter": {"op": "OR", "filters": list(filters)}}


def order(path: str, direction: str = "ASCENDING") -> dict:
    return {"field": field_ref(path), "direction": direction}


def cursor(values: list, before: bool) -> dict:
    return {"values": [enc(v) for v in values], "before": before}


def run_query(client, parent: str, structured_query: dict, **extra) -> list:
    """RunQuery -> list of documents (responses without a document are dropped)."""
    responses = list(client.run_query(
        request={"parent": parent, "structured_query": structured_query, **extra}))
    return [r.document for r in responses if "document" in r]


def run_query_raw(client, parent: str, structured_query: dict, **extra) -> list:
    return list(client.run_query(
        request={"parent": parent, "structured_query": structured_query, **extra}))


def names(docs) -> list:
    return [leaf(d.name) for d in docs]


def query_ids(client, parent: str, sq: dict) -> list:
    return names(run_query(client, parent, sq))


def aggregate(client, parent: str, structured_query: dict, aggregations: list, **extra) -> dict:
    """RunAggregationQuery -> {alias: decoded value} from the (single) result."""
    responses = list(client.run_aggregation_query(request={
        "parent": parent,
        "structured_aggregation_query": {
            "structured_query": structured_query,
            "aggregations": aggregations,
        },
        **extra,
    }))
    results = [r for r in responses if "result" in r]
    assert len(results) == 1, f"expected exactly one aggregation result, got {responses}"
    return {k: dec(v) for k, v in results[0].result.aggregate_fields.items()}


# ------------------------------------------------------------------------------------------
# Errors
# ------------------------------------------------------------------------------------------


def error_status(exc: gexc.GoogleAPICallError) -> str:
    """The canonical status name of an error raised by the REST client."""
    resp = getattr(exc, "response", None)
    if resp is not None:
        try:
            return resp.json()["error"]["status"]
        except Exception:  # noqa: BLE001 - fall through to the exception type
            pass
    code = getattr(exc, "grpc_status_code", None)
    return code.name if code is not None else type(exc).__name__


def expect_rpc_error(status: str):
    """Context manager: the call must fail with the given canonical status."""
    return _ExpectRpcError(status)


class _ExpectRpcError:
    def __init__(self, status):
        self.status = status
        self.exc = None

    def __enter__(self):
        return self

    def __exit__(self, et, ev, tb):
        if et is None:
            pytest.fail(f"expected {self.status}, but the call succeeded")
        if not issubclass(et, gexc.GoogleAPICallError):
            return False
        self.exc = ev
        got = error_status(ev)
        assert got == self.status, f"expected {self.status}, got {got}: {ev}"
        resp = getattr(ev, "response", None)
        if resp is not None and self.status in HTTP_FOR_STATUS:
            assert resp.status_code == HTTP_FOR_STATUS[self.status], (resp.status_code, resp.text)
        return True


def assert_error_body(resp, status: str, http_status: int | None = None) -> dict:
    """A REST error: 4xx, JSON body {"error": {"code": int, "message": str, "status": str}}."""
    expected_http = http_status or HTTP_FOR_STATUS.get(status)
    assert 400 <= resp.status_code < 500, f"expected 4xx, got {resp.status_code}: {resp.text[:500]}"
    if expected_http is not None:
        assert resp.status_code == expected_http, f"{resp.status_code}: {resp.text[:500]}"
    assert resp.headers.get("Content-Type", "").startswith("application/json"), resp.headers
    body = resp.json()
    assert isinstance(body, dict) and isinstance(body.get("error"), dict), body
    err = body["error"]
    assert isinstance(err.get("code"), int) and not isinstance(err.get("code"), bool), err
    assert err["code"] == resp.status_code, err
    assert isinstance(err.get("message"), str) and err["message"], err
    assert err.get("status") == status, err
    return err


def b64(b: bytes) -> str:
    return base64.b64encode(b).decode()
