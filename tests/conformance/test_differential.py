"""Differential test: Hearth against Google's Firestore emulator as the oracle.

One seeded-random dataset of mixed-type documents (~150 in one collection, plus a few in
sub-collections with the same collection id) is written into both servers over raw REST. Then
seeded-random ``StructuredQuery``s go through ``:runQuery`` and ``:runAggregationQuery`` on both,
and the answers must agree: the same ordered document names with the same field data, the same
aggregate values (doubles within a relative tolerance), and a query that the emulator rejects
with 400 must be rejected by Hearth with a 4xx as well.

Everything is derived from fixed seeds (``DATA_SEED``, ``QUERY_SEEDS``, ``AGG_SEEDS``), so a
failure reproduces exactly: ``'test_differential.py::test_run_query_matches_emulator[7]'`` reruns
seed 7. On a mismatch the failure message shows the generated request, a greedily shrunk request
that still fails the same way, both answers and the data of the documents involved;
``HEARTH_DIFF_REPORT=<file>`` appends every mismatch (all shrunk) to that file. Named probes of
edge cases that random generation reaches only rarely (``EDGE_QUERIES``, ``EDGE_AGGREGATIONS``)
go through the same comparison.

Generation avoids what the emulator is known to get wrong over REST or what production does
not pin down (tests/conformance/README.md, /work/shared/reference/firestore-emulator.md):

* no -0.0 anywhere (the emulator's REST layer turns it into 0);
* no range / ``==`` / ``!=`` field filters whose operand is null or NaN (the SDKs reject them and
  send ``IS_NULL`` / ``IS_NAN`` unary filters instead; the backend's answer is unspecified);
* no descending ``__name__`` as the first ``orderBy`` (the emulator answers FAILED_PRECONDITION
  "does not support descending key scans"; production behaviour is not asserted);
* cursors never have more values than the explicit ``orderBy`` (``__name__`` is spelled out
  when a cursor needs it, as the SDKs do);
* timestamps carry at most microseconds (production truncates to microseconds);
* ``allDescendants`` only under the database root (the emulator answers "collection group
  queries are only allowed at the root parent" elsewhere; production is not pinned down);
* no empty vectors (the emulator rejects them: "Cannot have a zero length vector");
* sum/avg only over fields whose sums do not depend on summation order beyond rounding
  (``AGG_FIELDS``): no +-1e300 or +-2**63 mixtures, whose sums Firestore does not define.

Emulator rejections that depend on index configuration ("This query requires an index that
has fields [...] after __name__") are counted but not asserted: see ``index_dependent``.
"""

from __future__ import annotations

import base64
import json
import math
import os
import random
import re
import time

import pytest
import requests

from conftest import PROJECT, TARGET
from fsutil import Geo, Ref, Vector, new_collection_id

pytestmark = pytest.mark.skipif(
    TARGET == "emulator",
    reason="differential test compares Hearth with the emulator; the target is the emulator itself")

DATABASE = f"projects/{PROJECT}/databases/(default)"
ROOT = f"{DATABASE}/documents"

DATA_SEED = 20241122
N_TOP_DOCS = 150
QUERY_SEEDS = list(range(1, 13))       # x QUERIES_PER_SEED RunQuery cases
QUERIES_PER_SEED = 30
AGG_SEEDS = list(range(101, 105))      # x AGGS_PER_SEED RunAggregationQuery cases
AGGS_PER_SEED = 25
REL_TOL = 1e-9                         # for double aggregates (summation order may differ)
HTTP_TIMEOUT = 30
MAX_SHRINK_STEPS = 40
MAX_REPORTED = 4                       # mismatches shown (and shrunk) per seed
REPORT_FILE = os.environ.get("HEARTH_DIFF_REPORT")  # optional: append every mismatch here

NAN = float("nan")
INF = float("inf")
BIG = 2 ** 53


class Ts(str):
    """A timestampValue (RFC 3339, at most microseconds)."""


# ------------------------------------------------------------------------------------------
# Values: Python <-> REST JSON, and a canonical form for comparing answers
# ------------------------------------------------------------------------------------------


def rv(x) -> dict:
    """Python value -> google.firestore.v1.Value in proto3 JSON."""
    if x is None:
        return {"nullValue": None}
    if isinstance(x, bool):
        return {"booleanValue": x}
    if isinstance(x, int):
        return {"integerValue": str(x)}
    if isinstance(x, float):
        if math.isnan(x):
            return {"doubleValue": "NaN"}
        if math.isinf(x):
            return {"doubleValue": "Infinity" if x > 0 else "-Infinity"}
        assert not (x == 0 and math.copysign(1, x) < 0), "-0.0 is a known emulator REST bug"
        return {"doubleValue": x}
    if isinstance(x, Ts):
        return {"timestampValue": str(x)}
    if isinstance(x, str):
        return {"stringValue": x}
    if isinstance(x, bytes):
        return {"bytesValue": base64.b64encode(x).decode()}
    if isinstance(x, Ref):
        return {"referenceValue": x.name}
    if isinstance(x, Geo):
        return {"geoPointValue": {"latitude": x.lat, "longitude": x.lng}}
    if isinstance(x, Vector):
        return {"mapValue": {"fields": {
            "__type__": {"stringValue": "__vector__"},
            "value": {"arrayValue": {"values": [rv(float(e)) for e in x.values]}},
        }}}
    if isinstance(x, (list, tuple)):
        return {"arrayValue": {"values": [rv(e) for e in x]}}
    if isinstance(x, dict):
        return {"mapValue": {"fields": {k: rv(v) for k, v in x.items()}}}
    raise TypeError(f"cannot encode {type(x)}")


_TS_RE = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)$")


def _canon_double(x):
    if isinstance(x, str):
        x = {"NaN": NAN, "Infinity": INF, "-Infinity": -INF}.get(x, x)
    f = float(x)
    return "NaN" if math.isnan(f) else f


def _canon_ts(s: str):
    m = _TS_RE.match(s)
    if not m:
        return ("unparsed", s)
    assert m.group(3) == "Z", f"timestamp not in UTC: {s}"
    return (m.group(1), (m.group(2) or "").ljust(9, "0"))


def _canon_bytes(s: str) -> bytes:
    s = s.replace("-", "+").replace("_", "/")
    return base64.b64decode(s + "=" * (-len(s) % 4))


def canon(v: dict):
    """REST Value JSON -> hashable canonical form (types kept exact: 3 != 3.0)."""
    if not isinstance(v, dict) or len(v) != 1:
        return ("malformed", json.dumps(v, sort_keys=True))
    (k, x), = v.items()
    if k == "nullValue":
        return ("null",)
    if k == "booleanValue":
        return ("bool", bool(x))
    if k == "integerValue":
        return ("int", int(x))
    if k == "doubleValue":
        return ("double", _canon_double(x))
    if k == "timestampValue":
        return ("ts", _canon_ts(x))
    if k == "stringValue":
        return ("str", x)
    if k == "bytesValue":
        return ("bytes", _canon_bytes(x))
    if k == "referenceValue":
        return ("ref", x)
    if k == "geoPointValue":
        return ("geo", float(x.get("latitude", 0)), float(x.get("longitude", 0)))
    if k == "arrayValue":
        return ("array", tuple(canon(e) for e in (x or {}).get("values", [])))
    if k == "mapValue":
        return ("map", canon_fields((x or {}).get("fields", {})))
    return ("unknown", k, json.dumps(x, sort_keys=True))


def canon_fields(fields: dict):
    return tuple(sorted((k, canon(v)) for k, v in fields.items()))


# ------------------------------------------------------------------------------------------
# The dataset
# ------------------------------------------------------------------------------------------

INTS = [0, 1, -1, 2, 3, 7, -7, 42, 100, -100, 12345678901, BIG - 1, BIG, BIG + 1, -BIG, -BIG - 1,
        2 ** 62, 2 ** 63 - 1, -(2 ** 63)]
DOUBLES = [0.0, 0.5, -0.5, 1.0, 1.5, 2.0, 3.0, 42.0, -2.25, 0.1, 2.5, 1e-300, 1e300, -1e300,
           float(BIG), float(BIG) + 2.0, -float(BIG), NAN, INF, -INF]
STRINGS = ["", "a", "A", "aa", "ab", "b", "Z", "z", "abc", "é", "e\u0301", "日本", "日",
           "\U0001F600", "\uFFFF", "\uFF21", "\u007F", "a\u0000", " ", "10", "9", "3"]
BYTES = [b"", b"\x00", b"\x00\x00", b"\x01", b"\x7f", b"\x80", b"\xff", b"ab", b"a"]
TIMESTAMPS = [Ts(t) for t in (
    "0001-01-01T00:00:00Z", "1969-12-31T23:59:59.999999Z", "1970-01-01T00:00:00Z",
    "1970-01-01T00:00:00.000001Z", "2001-09-09T01:46:40.500Z", "2024-02-29T12:00:00Z",
    "2024-02-29T12:00:00.000123Z", "9999-12-31T23:59:59.999999Z")]
GEOS = [Geo(0.0, 0.0), Geo(-90.0, -180.0), Geo(90.0, 180.0), Geo(45.5, -122.6), Geo(45.5, 10.0),
        Geo(-33.9, 151.2), Geo(0.0, -0.5)]
B_INTS = [0, 1, -1, 2, 3, 7, -7, 42, 100, -100, 12345678901, BIG - 1, BIG, BIG + 1]
B_DOUBLES = [0.0, 0.5, -0.5, 1.0, 1.5, 2.0, 3.0, 42.0, -2.25, 0.1, 2.5, 1e-300, float(BIG), NAN, INF, -INF]
VECTORS = [Vector((1.0,)), Vector((1.0, 2.0)), Vector((0.5, -3.0))]  # no empty vector: rejected

ID_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"
SPECIAL_IDS = ["é", "日本", "\U0001F600x", "ZZ", "0", "a b", "~"]


class Dataset:
    """The documents (REST JSON fields by name) written to both servers."""

    def __init__(self, cid: str, other: str):
        self.cid = cid
        self.other = other
        self.docs: dict[str, dict] = {}            # name -> fields (REST JSON)
        self.top: list[str] = []                   # names directly in ROOT/cid
        self.sub_parents: list[str] = []           # documents that have a cid sub-collection
        self.refs: list[Ref] = []

    def group_docs(self) -> list[str]:
        return list(self.docs)

    def docs_under(self, parent: str, all_descendants: bool) -> list[str]:
        prefix = parent + "/" + self.cid + "/"
        out = []
        for name in self.docs:
            if all_descendants:
                if name.startswith(parent + "/") and name.rsplit("/", 2)[1] == self.cid:
                    out.append(name)
            elif name.startswith(prefix) and "/" not in name[len(prefix):]:
                out.append(name)
        return out


def _rand_id(rng: random.Random, taken: set) -> str:
    while True:
        if rng.random() < 0.04:
            cand = rng.choice(SPECIAL_IDS)
        else:
            cand = "".join(rng.choice(ID_CHARS) for _ in range(rng.randint(1, 8)))
        if cand not in taken and not re.fullmatch(r"__.*__", cand):  # __x__ ids are reserved
            taken.add(cand)
            return cand


class ValueGen:
    def __init__(self, rng: random.Random, refs: list):
        self.rng = rng
        self.refs = refs

    def number(self):
        """A value for the summed field b: no huge magnitudes of both signs, so that a sum does
        not depend on the order it is taken in beyond rounding (see AGG_FIELDS)."""
        return self.rng.choice(B_INTS) if self.rng.random() < 0.5 else self.rng.choice(B_DOUBLES)

    def scalar(self):
        r = self.rng
        kind = r.choice(["null", "bool", "int", "int", "double", "double", "string", "string",
                         "bytes", "ts", "ref", "geo"])
        if kind == "null":
            return None
        if kind == "bool":
            return r.random() < 0.5
        if kind == "int":
            return r.choice(INTS)
        if kind == "double":
            return r.choice(DOUBLES)
        if kind == "string":
            return r.choice(STRINGS)
        if kind == "bytes":
            return r.choice(BYTES)
        if kind == "ts":
            return r.choice(TIMESTAMPS)
        if kind == "ref":
            return r.choice(self.refs)
        return r.choice(GEOS)

    def array(self, depth=0):
        r = self.rng
        out = []
        for _ in range(r.choice([0, 1, 1, 2, 2, 3, 4])):
            out.append(self.small_map(depth + 1) if r.random() < 0.08 and depth < 2 else self.scalar())
        return out

    def small_map(self, depth=0):
        r = self.rng
        out = {}
        for k in r.sample(["x", "y", "k", "é"], r.randint(0, 2)):
            out[k] = self.any(depth + 1)
        return out

    def any(self, depth=0):
        r = self.rng.random()
        if depth < 2 and r < 0.12:
            return self.array(depth)
        if depth < 2 and r < 0.20:
            return self.small_map(depth)
        if r < 0.23:
            return self.rng.choice(VECTORS)
        return self.scalar()


def _doc_fields(vg: ValueGen) -> dict:
    r = vg.rng
    f = {}
    if r.random() < 0.9:
        f["a"] = vg.any()
    if r.random() < 0.85:
        x = r.random()
        f["b"] = vg.number() if x < 0.8 else (None if x < 0.87 else r.choice(["5", True, Ts("1970-01-01T00:00:00Z")]))
    if r.random() < 0.25:  # positive only: an integer sum overflows to a double in any order
        f["big"] = r.choice([2 ** 62, 2 ** 63 - 1, BIG + 1, 1, 1.5])
    if r.random() < 0.8:
        f["c"] = r.choice(STRINGS) if r.random() < 0.9 else r.choice([None, 3, b"c"])
    if r.random() < 0.9:
        f["g"] = r.choice([0, 1, 2, 3, 1.0, 2.0, 2.5, "1"])
    if r.random() < 0.6:
        f["t"] = r.choice(TIMESTAMPS) if r.random() < 0.8 else r.choice(STRINGS)
    if r.random() < 0.75:
        f["arr"] = vg.array() if r.random() < 0.9 else vg.scalar()
    x = r.random()
    if x < 0.7:
        m = {}
        if r.random() < 0.8:
            m["x"] = vg.scalar() if r.random() < 0.85 else vg.array(1)
        if r.random() < 0.5:
            m["y"] = {"z": vg.scalar()} if r.random() < 0.85 else vg.scalar()
        f["m"] = m
    elif x < 0.8:
        f["m"] = vg.scalar()
    if r.random() < 0.5:  # a field name that needs quoting in a field path: `o.k`
        f["o.k"] = vg.scalar() if r.random() < 0.9 else {"k": vg.scalar()}
    return f


def build_dataset() -> Dataset:
    rng = random.Random(DATA_SEED)
    ds = Dataset(new_collection_id("dx"), new_collection_id("dxo"))
    taken: set = set()
    ids = [_rand_id(rng, taken) for _ in range(N_TOP_DOCS)]
    ds.top = [f"{ROOT}/{ds.cid}/{i}" for i in ids]
    ds.sub_parents = rng.sample(ds.top, 4) + [f"{ROOT}/{ds.other}/p1", f"{ROOT}/{ds.cid}/{ids[0]}/s/t"]
    ds.refs = [Ref(n) for n in rng.sample(ds.top, 5)] + [
        Ref(f"{ROOT}/{ds.cid}/missing"), Ref(f"{ROOT}/{ds.other}/p1"),
        Ref(f"{ds.sub_parents[0]}/{ds.cid}/q")]
    vg = ValueGen(rng, ds.refs)
    for name in ds.top:
        ds.docs[name] = {k: rv(v) for k, v in _doc_fields(vg).items()}
    for parent in ds.sub_parents:
        for _ in range(rng.randint(1, 3)):
            name = f"{parent}/{ds.cid}/{_rand_id(rng, taken)}"
            ds.docs[name] = {k: rv(v) for k, v in _doc_fields(vg).items()}
    return ds


# ------------------------------------------------------------------------------------------
# Talking to both servers
# ------------------------------------------------------------------------------------------


class Outcome:
    """One server's answer: HTTP status plus the parsed stream (or error body)."""

    def __init__(self, resp: requests.Response):
        self.status = resp.status_code
        self.text = resp.text
        self.items = None
        self.error = None
        if self.status == 200:
            try:
                self.items = json.loads(resp.text)
            except ValueError:
                self.status = -1
                self.error = f"unparseable 200 body: {resp.text[:300]!r}"
            else:
                if not isinstance(self.items, list):
                    self.status = -1
                    self.error = f"200 body is not a JSON array: {resp.text[:300]!r}"
        else:
            try:
                err = json.loads(resp.text)["error"]
                self.error = f"{err.get('status')}: {err.get('message')}"
            except (ValueError, KeyError, TypeError):
                self.error = resp.text[:300]

    @property
    def ok(self) -> bool:
        return self.status == 200

    def docs(self) -> list:
        return [(it["document"]["name"], canon_fields(it["document"].get("fields", {})))
                for it in self.items if "document" in it]

    def aggregates(self):
        results = [it["result"] for it in self.items if "result" in it]
        if len(results) != 1:
            return ("bad", len(results))
        return {k: canon(v) for k, v in results[0].get("aggregateFields", {}).items()}

    def summary(self, kind: str, limit: int = 40) -> str:
        if not self.ok:
            return f"HTTP {self.status} {self.error}"
        if kind == "query":
            names = [n.rsplit("/", 1)[1] if n.count("/") == 6 else n.split("/documents/", 1)[1]
                     for n, _ in self.docs()]
            more = f" ... (+{len(names) - limit})" if len(names) > limit else ""
            return f"{len(names)} docs {names[:limit]}{more}"
        return f"{self.aggregates()}"


class Pair:
    def __init__(self, hearth_base: str, emulator_base: str):
        self.session = requests.Session()
        self.session.headers["Authorization"] = "Bearer owner"
        self.bases = {"hearth": hearth_base, "emulator": emulator_base}
        self.seconds = {"hearth": 0.0, "emulator": 0.0}

    def post(self, which: str, path: str, body: dict) -> requests.Response:
        t0 = time.monotonic()
        try:
            return self.session.post(self.bases[which] + path, json=body, timeout=HTTP_TIMEOUT)
        finally:
            self.seconds[which] += time.monotonic() - t0

    def both(self, path: str, body: dict):
        return (Outcome(self.post("emulator", path, body)), Outcome(self.post("hearth", path, body)))


# ------------------------------------------------------------------------------------------
# Random queries
# ------------------------------------------------------------------------------------------

FILTER_FIELDS = ["a", "a", "b", "b", "c", "g", "t", "arr", "arr", "m", "m.x", "m.y.z", "`o.k`", "__name__", "nope"]
ORDER_FIELDS = ["a", "b", "b", "c", "g", "g", "t", "arr", "m", "m.x", "m.y.z", "`o.k`"]
SELECT_FIELDS = ["a", "b", "c", "g", "arr", "m", "m.x", "m.y", "`o.k`", "__name__", "nope"]
# sum/avg only over fields whose sums are well-conditioned (a, m.x, arr hold +-1e300 and
# +-2**63, whose sums would depend on the summation order, which Firestore does not define).
AGG_FIELDS = ["b", "b", "b", "g", "g", "big", "big", "c", "t", "nope"]
RANGE_OPS = ["LESS_THAN", "LESS_THAN_OR_EQUAL", "GREATER_THAN", "GREATER_THAN_OR_EQUAL"]
INEQ_OPS = set(RANGE_OPS) | {"NOT_EQUAL", "NOT_IN"}
OPS = ["EQUAL", "EQUAL", "NOT_EQUAL"] + RANGE_OPS * 2 + ["ARRAY_CONTAINS", "IN", "ARRAY_CONTAINS_ANY", "NOT_IN"]
UNARY_OPS = ["IS_NULL", "IS_NAN", "IS_NOT_NULL", "IS_NOT_NAN"]


def _segments(path: str) -> list:
    """Field path -> segments; a segment may be quoted with backticks (`o.k`)."""
    return [m.group(1) if m.group(1) is not None else m.group(2)
            for m in re.finditer(r"`((?:[^`\\]|\\.)*)`|([^.`]+)", path)]


def _get_path(fields: dict, path: str):
    """The REST value at a field path of a document, or None when missing."""
    cur = {"mapValue": {"fields": fields}}
    for seg in _segments(path):
        if "mapValue" not in cur:
            return None
        cur = cur["mapValue"].get("fields", {}).get(seg)
        if cur is None:
            return None
    return cur


def _is_null_or_nan(v: dict) -> bool:
    return "nullValue" in v or ("doubleValue" in v and _canon_double(v["doubleValue"]) == "NaN")


class QueryGen:
    def __init__(self, rng: random.Random, ds: Dataset):
        self.rng = rng
        self.ds = ds
        self.vg = ValueGen(rng, ds.refs)
        self.values: dict[str, list] = {}
        for fields in ds.docs.values():
            for path in FILTER_FIELDS:
                if path == "__name__":
                    continue
                v = _get_path(fields, path)
                if v is not None:
                    self.values.setdefault(path, []).append(v)
                    if "arrayValue" in v:
                        self.values.setdefault(path + "[]", []).extend(v["arrayValue"].get("values", []))

    # --- operands -----------------------------------------------------------------------

    def value(self, path: str, scope: list, element: bool = False) -> dict:
        r = self.rng
        if path == "__name__":
            name = r.choice(scope) if scope and r.random() < 0.9 else r.choice(self.ds.refs).name
            return {"referenceValue": name}
        pool = self.values.get(path + "[]" if element else path)
        if pool and r.random() < 0.7:
            return r.choice(pool)
        return rv(self.vg.scalar() if element or r.random() < 0.8 else self.vg.any(1))

    def operand(self, path: str, op: str, scope: list) -> dict:
        r = self.rng
        if op in ("IN", "NOT_IN", "ARRAY_CONTAINS_ANY"):
            n = r.choice([1, 1, 2, 2, 3, 4, 5])
            vals = [self.value(path, scope, element=(op == "ARRAY_CONTAINS_ANY")) for _ in range(n)]
            if op == "ARRAY_CONTAINS_ANY":
                vals = [v for v in vals if "arrayValue" not in v] or [rv(1)]
            return {"arrayValue": {"values": vals}}
        for _ in range(50):
            v = self.value(path, scope, element=(op == "ARRAY_CONTAINS"))
            if op == "ARRAY_CONTAINS" and "arrayValue" in v:
                continue
            if op != "ARRAY_CONTAINS" and _is_null_or_nan(v):
                continue  # SDKs turn these into unary filters; see the module docstring
            return v
        return rv(1)

    # --- filters ------------------------------------------------------------------------

    def leaf_filter(self, scope: list) -> dict:
        r = self.rng
        path = r.choice(FILTER_FIELDS)
        if r.random() < 0.15 and path != "__name__":
            return {"unaryFilter": {"op": r.choice(UNARY_OPS), "field": {"fieldPath": path}}}
        if path == "__name__":
            op = r.choice(["EQUAL", "NOT_EQUAL", "IN", "NOT_IN"] + RANGE_OPS * 2)
        elif path == "arr":
            op = r.choice(OPS + ["ARRAY_CONTAINS", "ARRAY_CONTAINS_ANY"] * 2)
        else:
            op = r.choice(OPS)
        return {"fieldFilter": {"field": {"fieldPath": path}, "op": op,
                                "value": self.operand(path, op, scope)}}

    def filter(self, scope: list, depth: int = 0) -> dict:
        r = self.rng
        if depth < 2 and r.random() < (0.3 if depth == 0 else 0.2):
            n = r.choice([1, 2, 2, 2, 3])
            return {"compositeFilter": {"op": r.choice(["AND", "OR"]),
                                        "filters": [self.filter(scope, depth + 1) for _ in range(n)]}}
        return self.leaf_filter(scope)

    # --- whole queries ------------------------------------------------------------------

    def scope(self):
        """(parent, from-selector, documents the query can return)."""
        r = self.rng
        x = r.random()
        if x < 0.78:
            return ROOT, {"collectionId": self.ds.cid}, self.ds.top
        if x < 0.93:
            return ROOT, {"collectionId": self.ds.cid, "allDescendants": True}, self.ds.group_docs()
        # A sub-collection of one document. (allDescendants under a non-root parent is not
        # generated: the emulator refuses it, production's answer is not pinned down.)
        parent = r.choice(self.ds.sub_parents)
        return parent, {"collectionId": self.ds.cid}, self.ds.docs_under(parent, False)

    def order_by(self, where) -> list:
        r = self.rng
        ineq = sorted(_inequality_fields(where)) if where else []
        fields = []
        if ineq and r.random() < 0.6:
            fields.append(r.choice(ineq))  # the classic rule: first order on the inequality field
        # Nothing may follow __name__ (the emulator, like production, answers 400 "order by
        # clause cannot contain more fields after the key"); generate that only now and then.
        extra = [0, 0, 1, 1, 2] if fields != ["__name__"] or r.random() < 0.1 else [0]
        for _ in range(r.choice(extra)):
            if len(fields) >= 2:
                break
            f = r.choice(ORDER_FIELDS)
            if f not in fields:
                fields.append(f)
        out = [{"field": {"fieldPath": f}, "direction": r.choice(["ASCENDING", "DESCENDING"])} for f in fields]
        if out and fields[0] == "__name__":
            out[0]["direction"] = "ASCENDING"  # descending key scans: see the module docstring
        # An explicit trailing __name__ while some inequality field is not ordered on is
        # rejected too (the implicit inequality orders would follow the key): mostly avoid it.
        covered = set(ineq) <= set(fields) or r.random() < 0.15
        if r.random() < 0.3 and "__name__" not in fields and covered:
            d = r.choice(["ASCENDING", "DESCENDING"]) if out else "ASCENDING"
            out.append({"field": {"fieldPath": "__name__"}, "direction": d})
        return out

    def cursor(self, order: list, docs: list) -> dict:
        r = self.rng
        name = r.choice(docs)
        fields = self.ds.docs[name]
        n = r.randint(1, len(order))
        values = []
        for o in order[:n]:
            path = o["field"]["fieldPath"]
            if path == "__name__":
                values.append({"referenceValue": name})
            else:
                v = _get_path(fields, path)
                values.append(v if v is not None else self.value(path, docs))
        return {"values": values, "before": r.random() < 0.5}

    def structured_query(self, for_aggregation: bool = False):
        r = self.rng
        parent, sel, docs = self.scope()
        sq = {"from": [sel]}
        if r.random() < 0.85:
            sq["where"] = self.filter(docs)
        if not for_aggregation or r.random() < 0.2:
            order = self.order_by(sq.get("where"))
            if order:
                sq["orderBy"] = order
                if docs and r.random() < 0.3:
                    sq["startAt"] = self.cursor(order, docs)
                if docs and r.random() < 0.3:
                    sq["endAt"] = self.cursor(order, docs)
        if r.random() < (0.2 if not for_aggregation else 0.1):
            sq["offset"] = r.randint(0, 10)
        if r.random() < (0.35 if not for_aggregation else 0.2):
            sq["limit"] = r.randint(1, 30) if r.random() < 0.95 else 0
        if not for_aggregation and r.random() < 0.15:
            sq["select"] = {"fields": [{"fieldPath": f} for f in r.sample(SELECT_FIELDS, r.randint(1, 3))]}
        return parent, sq

    def aggregation(self) -> tuple:
        r = self.rng
        parent, sq = self.structured_query(for_aggregation=True)
        aggs = []
        for i in range(r.choice([1, 2, 2, 3])):
            kind = r.choice(["count", "sum", "sum", "avg", "avg"])
            if kind == "count":
                a = {"count": {"upTo": str(r.randint(1, 60))} if r.random() < 0.3 else {}}
            else:
                a = {kind: {"field": {"fieldPath": r.choice(AGG_FIELDS)}}}
            if r.random() < 0.5:
                a["alias"] = f"al{i}"
            aggs.append(a)
        return parent, {"structuredAggregationQuery": {"structuredQuery": sq, "aggregations": aggs}}


def _inequality_fields(f: dict) -> set:
    if "compositeFilter" in f:
        out = set()
        for c in f["compositeFilter"].get("filters", []):
            out |= _inequality_fields(c)
        return out
    if "fieldFilter" in f:
        ff = f["fieldFilter"]
        return {ff["field"]["fieldPath"]} if ff["op"] in INEQ_OPS else set()
    if "unaryFilter" in f and f["unaryFilter"]["op"] in ("IS_NOT_NULL", "IS_NOT_NAN"):
        return {f["unaryFilter"]["field"]["fieldPath"]}
    return set()


# ------------------------------------------------------------------------------------------
# Comparing, classifying and shrinking
# ------------------------------------------------------------------------------------------


def _approx(a, b) -> bool:
    if a == b:
        return True
    if a[0] != b[0]:
        return False
    if a[0] == "double" and isinstance(a[1], float) and isinstance(b[1], float):
        x, y = a[1], b[1]
        if math.isinf(x) or math.isinf(y):
            return x == y
        return abs(x - y) <= REL_TOL * max(1.0, abs(x), abs(y))
    return False


def _norm_msg(msg) -> str:
    return re.sub(r"\[[^\]]*\]|\d+", "_", msg or "")[:110]


def index_dependent(emu: Outcome) -> bool:
    """The emulator's query planner refused for want of an index ("This query requires an index
    that has fields [...] after __name__"). Whether production refuses depends on the indexes
    that exist (collection-group single-field indexes are opt-in there), and Hearth builds the
    indexes a query needs unless started with --strict-indexes. Counted, not asserted."""
    return emu.status == 400 and "requires an index" in (emu.error or "")


def classify(kind: str, emu: Outcome, hea: Outcome):
    """None when the answers agree; otherwise a short category string."""
    if hea.status >= 500 or hea.status < 0:
        return f"hearth HTTP {hea.status}"
    if emu.status >= 500 or emu.status < 0:
        return None  # not compared: the oracle failed (counted separately)
    if not emu.ok:
        if 400 <= hea.status < 500 or index_dependent(emu):
            return None
        return f"emulator rejects ({_norm_msg(emu.error)}), hearth accepts"
    if not hea.ok:
        return "emulator accepts, hearth rejects"
    if kind == "query":
        e, h = emu.docs(), hea.docs()
        if [n for n, _ in e] != [n for n, _ in h]:
            return "different documents"
        return None if e == h else "different field data"
    e, h = emu.aggregates(), hea.aggregates()
    if isinstance(e, tuple) or isinstance(h, tuple):
        return "bad aggregation stream"
    if set(e) != set(h):
        return "different aggregate aliases"
    return None if all(_approx(e[k], h[k]) for k in e) else "different aggregate values"


def _filter_variants(f: dict):
    """Simpler filters than f (for shrinking)."""
    if "compositeFilter" in f:
        kids = f["compositeFilter"].get("filters", [])
        for k in kids:
            yield k
        if len(kids) > 1:
            for i in range(len(kids)):
                yield {"compositeFilter": {"op": f["compositeFilter"]["op"], "filters": kids[:i] + kids[i + 1:]}}
        for i, k in enumerate(kids):
            for v in _filter_variants(k):
                yield {"compositeFilter": {"op": f["compositeFilter"]["op"],
                                           "filters": kids[:i] + [v] + kids[i + 1:]}}
    elif "fieldFilter" in f:
        val = f["fieldFilter"]["value"]
        vals = (val.get("arrayValue") or {}).get("values", [])
        if f["fieldFilter"]["op"] in ("IN", "NOT_IN", "ARRAY_CONTAINS_ANY") and len(vals) > 1:
            for i in range(len(vals)):
                g = json.loads(json.dumps(f))
                g["fieldFilter"]["value"] = {"arrayValue": {"values": vals[:i] + vals[i + 1:]}}
                yield g


def _sq_variants(sq: dict):
    for key in ("select", "offset", "limit", "startAt", "endAt", "where", "orderBy"):
        if key in sq:
            yield {k: v for k, v in sq.items() if k != key}
    for key in ("startAt", "endAt"):
        if key in sq and len(sq[key]["values"]) > 1:
            c = dict(sq[key], values=sq[key]["values"][:-1])
            yield dict(sq, **{key: c})
    if "orderBy" in sq and len(sq["orderBy"]) > 1:
        n = max(len(sq.get("startAt", {}).get("values", [])), len(sq.get("endAt", {}).get("values", [])))
        for i in range(len(sq["orderBy"])):
            ob = sq["orderBy"][:i] + sq["orderBy"][i + 1:]
            if len(ob) >= n and not (ob[0]["field"]["fieldPath"] == "__name__"
                                     and ob[0].get("direction") == "DESCENDING"):
                yield dict(sq, orderBy=ob)
    if "where" in sq:
        for w in _filter_variants(sq["where"]):
            yield dict(sq, where=w)
    if "limit" in sq and sq["limit"] > 1:
        yield dict(sq, limit=1)


def _body_variants(kind: str, body: dict):
    if kind == "query":
        for sq in _sq_variants(body["structuredQuery"]):
            yield {"structuredQuery": sq}
        return
    saq = body["structuredAggregationQuery"]
    aggs = saq["aggregations"]
    if len(aggs) > 1:
        for i in range(len(aggs)):
            yield {"structuredAggregationQuery": dict(saq, aggregations=aggs[:i] + aggs[i + 1:])}
    for sq in _sq_variants(saq["structuredQuery"]):
        yield {"structuredAggregationQuery": dict(saq, structuredQuery=sq)}


def shrink(pair: Pair, kind: str, path: str, body: dict, category: str):
    """Greedy: keep taking the first simpler request that still fails the same way."""
    steps = 0
    improved = True
    while improved and steps < MAX_SHRINK_STEPS:
        improved = False
        for cand in _body_variants(kind, body):
            steps += 1
            if steps > MAX_SHRINK_STEPS:
                break
            emu, hea = pair.both(path, cand)
            if classify(kind, emu, hea) == category:
                body = cand
                improved = True
                break
    return body


class Mismatch:
    def __init__(self, label, kind, parent, body, category, emu, hea, small_body, small_emu, small_hea, ds):
        self.label, self.kind, self.parent, self.body = label, kind, parent, body
        self.category, self.emu, self.hea = category, emu, hea
        self.small_body, self.small_emu, self.small_hea = small_body, small_emu, small_hea
        self.ds = ds

    def involved_docs(self) -> list:
        if self.kind != "query" or not (self.small_emu.ok and self.small_hea.ok):
            return []
        e, h = self.small_emu.docs(), self.small_hea.docs()
        en, hn = [n for n, _ in e], [n for n, _ in h]
        diff = [n for n in en if n not in hn] + [n for n in hn if n not in en]
        if not diff:  # same set, different order or data: show the first divergence
            for i, (x, y) in enumerate(zip(e, h)):
                if x != y:
                    diff = sorted({x[0], y[0]})
                    break
        return diff[:6]

    def __str__(self):
        lines = [
            f"--- {self.label}: {self.category}",
            f"parent: {self.parent}",
            f"request:   {json.dumps(self.body, ensure_ascii=False)}",
            "shrunk:    " + ("(same)" if self.small_body == self.body
                             else json.dumps(self.small_body, ensure_ascii=False)),
            f"  emulator: {self.small_emu.summary(self.kind)}",
            f"  hearth:   {self.small_hea.summary(self.kind)}",
        ]
        if self.small_body != self.body:
            lines += [f"  (original emulator: {self.emu.summary(self.kind, 15)})",
                      f"  (original hearth:   {self.hea.summary(self.kind, 15)})"]
        for name in self.involved_docs():
            lines.append(f"  doc {name.split('/documents/', 1)[1]}: "
                         f"{json.dumps(self.ds.docs.get(name), ensure_ascii=False)}")
        return "\n".join(lines)


class Tally:
    def __init__(self):
        self.cases = 0
        self.both_ok = 0
        self.emulator_rejected = 0
        self.oracle_errors: list = []
        self.rejections: dict = {}


TALLY = {"query": Tally(), "aggregation": Tally()}


def run_cases(pair: Pair, ds: Dataset, kind: str, seed: int, count: int):
    rng = random.Random(seed)
    gen = QueryGen(rng, ds)
    tally = TALLY[kind]
    method = ":runQuery" if kind == "query" else ":runAggregationQuery"
    mismatches = []
    for i in range(count):
        if kind == "query":
            parent, sq = gen.structured_query()
            body = {"structuredQuery": sq}
        else:
            parent, body = gen.aggregation()
        path = f"/v1/{parent}{method}"
        emu, hea = pair.both(path, body)
        tally.cases += 1
        if emu.status >= 500 or emu.status < 0:
            tally.oracle_errors.append((seed, i, emu.status, emu.error))
        elif not emu.ok:
            tally.emulator_rejected += 1
            msg = _norm_msg(emu.error)
            tally.rejections[msg] = tally.rejections.get(msg, 0) + 1
        category = classify(kind, emu, hea)
        if category is None:
            if emu.ok:
                tally.both_ok += 1
            continue
        small = (shrink(pair, kind, path, body, category)
                 if len(mismatches) < MAX_REPORTED or REPORT_FILE else body)
        s_emu, s_hea = pair.both(path, small) if small is not body else (emu, hea)
        m = Mismatch(f"seed {seed} case {i}", kind, parent, body, category, emu, hea, small, s_emu, s_hea, ds)
        mismatches.append(m)
        if REPORT_FILE:
            with open(REPORT_FILE, "a", encoding="utf-8") as fh:
                fh.write(str(m) + "\n")
    return mismatches


# ------------------------------------------------------------------------------------------
# Fixtures and tests
# ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pair(server, oracle_rest_base):
    p = Pair(server.rest_base, oracle_rest_base)
    yield p
    p.session.close()


@pytest.fixture(scope="module")
def dataset(pair):
    ds = build_dataset()
    writes = [{"update": {"name": n, "fields": f}} for n, f in ds.docs.items()]
    assert len(writes) <= 500
    for which in ("emulator", "hearth"):
        r = pair.post(which, f"/v1/{DATABASE}/documents:commit", {"writes": writes})
        assert r.status_code == 200, f"loading the dataset into {which}: {r.status_code} {r.text[:2000]}"
    return ds


def test_dataset_round_trips(pair, dataset):
    """Both servers hold exactly the dataset (checked through an unfiltered collection-group query)."""
    body = {"structuredQuery": {"from": [{"collectionId": dataset.cid, "allDescendants": True}]}}
    emu, hea = pair.both(f"/v1/{ROOT}:runQuery", body)
    assert emu.ok, emu.error
    assert hea.ok, hea.error
    expected = {n: canon_fields(f) for n, f in dataset.docs.items()}
    assert dict(emu.docs()) == expected, "the emulator does not hold the dataset as written"
    h = dict(hea.docs())
    bad = {n.split("/documents/", 1)[1]: (json.dumps(dataset.docs[n], ensure_ascii=False), h.get(n))
           for n in expected if h.get(n) != expected[n]}
    assert not bad, f"hearth stored {len(bad)} documents differently: {list(bad.items())[:3]}"
    assert [n for n, _ in hea.docs()] == [n for n, _ in emu.docs()], "different collection-group order"


def _fail_on(mismatches, kind, seed, count):
    if mismatches:
        report = "\n".join(str(m) for m in mismatches[:MAX_REPORTED])
        pytest.fail(f"{len(mismatches)} of {count} {kind} cases (seed {seed}) differ from the emulator:\n"
                    f"{report}", pytrace=False)


# Fixed probes of edge cases that random generation reaches only now and then. Same oracle, same
# comparison; "C" stands for the dataset's collection id, "REF:<i>" for the i-th top document.
def _f(path, op, value):
    return {"fieldFilter": {"field": {"fieldPath": path}, "op": op, "value": value}}


def _u(path, op):
    return {"unaryFilter": {"op": op, "field": {"fieldPath": path}}}


def _c(op, *filters):
    return {"compositeFilter": {"op": op, "filters": list(filters)}}


def _o(path, direction="ASCENDING"):
    return {"field": {"fieldPath": path}, "direction": direction}


def _arr(*values):
    return {"arrayValue": {"values": [rv(v) for v in values]}}


def _sum(path, alias):
    return {"sum": {"field": {"fieldPath": path}}, "alias": alias}


def _avg(path, alias):
    return {"avg": {"field": {"fieldPath": path}}, "alias": alias}


_GROUP = {"from": [{"collectionId": "C", "allDescendants": True}]}
EDGE_QUERIES = {
    # explicit __name__ direction opposite to the field before it
    "eq-then-desc-asc-name": {"where": _f("g", "EQUAL", rv(1)), "orderBy": [_o("c", "DESCENDING"), _o("__name__")]},
    "asc-then-desc-name": {"orderBy": [_o("g"), _o("__name__", "DESCENDING")]},
    "group-desc-asc-name": dict(_GROUP, orderBy=[_o("a", "DESCENDING"), _o("__name__")]),
    "two-fields-mixed-name": {"orderBy": [_o("g"), _o("m", "DESCENDING"), _o("__name__")]},
    # inequality fields missing from orderBy follow it, in the direction of its last entry
    "inequality-after-desc-order": {"where": _f("g", "GREATER_THAN", rv(0)), "orderBy": [_o("b", "DESCENDING")]},
    "two-inequalities-implicit": {"where": _c("AND", _f("g", "GREATER_THAN", rv(0)), _f("c", "GREATER_THAN", rv("")))},
    "not-in-implicit-desc": {"where": _f("t", "NOT_IN", _arr(Ts("1970-01-01T00:00:00Z"))),
                             "orderBy": [_o("g", "DESCENDING")]},
    # null and NaN never match IN / NOT_IN / array membership
    "in-null": {"where": _f("a", "IN", _arr(None))},
    "in-nan": {"where": _f("b", "IN", _arr(NAN))},
    "in-null-nan-value": {"where": _f("b", "IN", _arr(None, NAN, 1))},
    "not-in-null": {"where": _f("a", "NOT_IN", _arr(None))},
    "not-in-null-value": {"where": _f("a", "NOT_IN", _arr(None, 1))},
    "not-in-nan": {"where": _f("b", "NOT_IN", _arr(NAN))},
    "not-in-nan-value": {"where": _f("b", "NOT_IN", _arr(NAN, 1))},
    "array-contains-null": {"where": _f("arr", "ARRAY_CONTAINS", rv(None))},
    "array-contains-nan": {"where": _f("arr", "ARRAY_CONTAINS", rv(NAN))},
    "array-contains-any-null": {"where": _f("arr", "ARRAY_CONTAINS_ANY", _arr(None))},
    "array-contains-any-nan-value": {"where": _f("arr", "ARRAY_CONTAINS_ANY", _arr(NAN, "a", None))},
    "neq-nan-unary": {"where": _u("b", "IS_NOT_NAN")},
    "is-nan": {"where": _u("a", "IS_NAN")},
    "is-null-map-path": {"where": _u("m.y.z", "IS_NULL")},
    # numbers: 2**53 as int and as double, 2**53 + 1 only as int
    "eq-2^53-int": {"where": _f("b", "EQUAL", rv(BIG))},
    "eq-2^53-double": {"where": _f("b", "EQUAL", rv(float(BIG)))},
    "gt-2^53-int": {"where": _f("b", "GREATER_THAN", rv(BIG)), "orderBy": [_o("b", "DESCENDING")]},
    "lt-2^53+1": {"where": _f("b", "LESS_THAN", rv(BIG + 1)), "orderBy": [_o("b", "DESCENDING")], "limit": 5},
    "range-int64-edges": {"where": _f("a", "GREATER_THAN_OR_EQUAL", rv(-(2 ** 63))), "orderBy": [_o("a")]},
    # ordering across and within types
    "order-a-all-types": {"orderBy": [_o("a")]},
    "order-a-desc-all-types": {"orderBy": [_o("a", "DESCENDING")]},
    "order-arr": {"orderBy": [_o("arr", "DESCENDING")]},
    "strings-utf8-order": {"where": _f("c", "GREATER_THAN_OR_EQUAL", rv("\uffff")), "orderBy": [_o("c")]},
    "range-on-arrays": {"where": _f("arr", "GREATER_THAN", _arr()), "orderBy": [_o("arr")]},
    "range-on-maps": {"where": _f("m", "LESS_THAN", rv({"x": None})), "orderBy": [_o("m")]},
    "quoted-field": {"where": _f("`o.k`", "GREATER_THAN", rv(0)), "select": {"fields": [{"fieldPath": "`o.k`"}]}},
    # cursors
    "cursor-desc-name": {"orderBy": [_o("g", "DESCENDING"), _o("__name__", "DESCENDING")],
                         "startAt": {"values": [rv(2), {"referenceValue": "REF:7"}], "before": False}},
    "cursor-partial": {"orderBy": [_o("g"), _o("c")], "startAt": {"values": [rv(1.0)], "before": False},
                       "endAt": {"values": [rv(2), rv("b")], "before": True}},
    "limit-0": {"limit": 0},
    "offset-past-end": {"offset": 500},
    # must be rejected (the emulator answers 400)
    "or-single-not-in": {"where": _c("OR", _f("g", "NOT_IN", _arr(0)))},
    "or-with-not-in": {"where": _c("OR", _f("g", "NOT_IN", _arr(0)), _f("c", "EQUAL", rv("a")))},
    "not-in-and-in": {"where": _c("AND", _f("g", "NOT_IN", _arr(0)), _f("c", "IN", _arr("a")))},
    "two-array-contains": {"where": _c("AND", _f("arr", "ARRAY_CONTAINS", rv(1)), _f("a", "ARRAY_CONTAINS", rv(1)))},
    "array-contains-and-any": {"where": _c("AND", _f("arr", "ARRAY_CONTAINS", rv(1)),
                                           _f("a", "ARRAY_CONTAINS_ANY", _arr(1)))},
    "neq-and-not-in": {"where": _c("AND", _f("g", "NOT_EQUAL", rv(0)), _f("c", "NOT_IN", _arr("a")))},
    "is-not-null-and-neq": {"where": _c("AND", _u("g", "IS_NOT_NULL"), _f("c", "NOT_EQUAL", rv("a")))},
    "field-after-key": {"orderBy": [_o("__name__"), _o("g")]},
    "key-eq-with-inequality": {"where": _c("AND", _f("__name__", "EQUAL", {"referenceValue": "REF:3"}),
                                           _f("g", "GREATER_THAN", rv(0)))},
    "in-empty": {"where": _f("g", "IN", _arr())},
    "cursor-too-long": {"orderBy": [_o("g")], "startAt": {"values": [rv(1), rv(2)], "before": True}},
}
EDGE_AGGREGATIONS = {
    # sum/avg read the aggregated fields' index: limit/offset apply in that order
    "sum-limit": ({"limit": 40}, [_sum("g", "s")]),
    "avg-offset": ({"offset": 30}, [_avg("g", "a")]),
    "two-fields-limit": ({"limit": 3}, [_sum("g", "sg"), _sum("b", "sb"), {"count": {}, "alias": "n"}]),
    "count-sum-offset": ({"offset": 7}, [{"count": {}, "alias": "n"}, _avg("c", "ac")]),
    # ... after the explicit orders, in the direction of the last one
    "order-desc-then-sum-field": ({"orderBy": [_o("b", "DESCENDING")], "limit": 12}, [_sum("g", "s")]),
    "order-asc-then-avg-field": ({"orderBy": [_o("c")], "limit": 25}, [_avg("g", "a")]),
    "sum-overflow": ({}, [_sum("big", "s"), _avg("big", "a")]),
    "sum-nan-inf": ({}, [_sum("b", "s"), _avg("b", "a"), {"count": {"upTo": "40"}, "alias": "n"}]),
    "sum-missing-field": ({}, [_sum("nope", "s"), _avg("nope", "a"), {"count": {}, "alias": "n"}]),
    "avg-non-numeric": ({"where": _f("c", "GREATER_THAN", rv(""))}, [_avg("c", "a"), _sum("c", "s")]),
    "default-aliases": ({}, [{"count": {}}, _sum("g", "x"), {"sum": {"field": {"fieldPath": "b"}}}]),
}


def _fill(x, ds: Dataset):
    """Replace the placeholders "C" and "REF:<i>" of an edge case with the dataset's names."""
    if isinstance(x, dict):
        out = {}
        for k, v in x.items():
            if k == "collectionId" and v == "C":
                out[k] = ds.cid
            elif k == "referenceValue" and v.startswith("REF:"):
                out[k] = ds.top[int(v[4:])]
            else:
                out[k] = _fill(v, ds)
        return out
    if isinstance(x, list):
        return [_fill(v, ds) for v in x]
    return x


@pytest.mark.parametrize("case", sorted(EDGE_QUERIES))
def test_edge_query_matches_emulator(pair, dataset, case):
    sq = _fill(dict({"from": [{"collectionId": "C"}]}, **EDGE_QUERIES[case]), dataset)
    body = {"structuredQuery": sq}
    emu, hea = pair.both(f"/v1/{ROOT}:runQuery", body)
    category = classify("query", emu, hea)
    if category:
        m = Mismatch(f"edge case {case}", "query", ROOT, body, category, emu, hea, body, emu, hea, dataset)
        pytest.fail(str(m), pytrace=False)


@pytest.mark.parametrize("case", sorted(EDGE_AGGREGATIONS))
def test_edge_aggregation_matches_emulator(pair, dataset, case):
    extra, aggs = EDGE_AGGREGATIONS[case]
    sq = _fill(dict({"from": [{"collectionId": "C"}]}, **extra), dataset)
    body = {"structuredAggregationQuery": {"structuredQuery": sq, "aggregations": aggs}}
    emu, hea = pair.both(f"/v1/{ROOT}:runAggregationQuery", body)
    category = classify("aggregation", emu, hea)
    if category:
        m = Mismatch(f"edge case {case}", "aggregation", ROOT, body, category, emu, hea, body, emu, hea, dataset)
        pytest.fail(str(m), pytrace=False)


@pytest.mark.parametrize("seed", QUERY_SEEDS)
def test_run_query_matches_emulator(pair, dataset, seed):
    mismatches = run_cases(pair, dataset, "query", seed, QUERIES_PER_SEED)
    _fail_on(mismatches, "RunQuery", seed, QUERIES_PER_SEED)


@pytest.mark.parametrize("seed", AGG_SEEDS)
def test_run_aggregation_query_matches_emulator(pair, dataset, seed):
    mismatches = run_cases(pair, dataset, "aggregation", seed, AGGS_PER_SEED)
    _fail_on(mismatches, "RunAggregationQuery", seed, AGGS_PER_SEED)


def test_differential_summary(pair, dataset):
    """Runs last: most generated requests must be valid, or the test checks little.
    The per-category counts show up with ``-rA`` / ``-s``."""
    for kind, t in TALLY.items():
        print(f"\n{kind}: {t.cases} cases, {t.both_ok} compared answers, {t.emulator_rejected} rejected by "
              f"the emulator, {len(t.oracle_errors)} emulator 5xx")
        for msg, n in sorted(t.rejections.items(), key=lambda kv: -kv[1]):
            print(f"    {n:4d} x {msg}")
        for e in t.oracle_errors[:5]:
            print(f"    emulator error: {e}")
        if t.cases:
            assert t.both_ok >= 0.6 * t.cases, f"too few {kind} cases were valid: {t.both_ok}/{t.cases}"
    print("time in requests: " + ", ".join(f"{k} {v:.1f}s" for k, v in pair.seconds.items()))
