"""Bad input through raw HTTP: every rejection is a 4xx with the JSON error shape
{"error": {"code": <int>, "message": <str>, "status": <str>}}, and nothing is written."""

import pytest
from fsutil import assert_error_body, b64


def _commit(rest, database, writes, **extra):
    return rest.post(f"/v1/{database}/documents:commit", json={"writes": writes, **extra})


def _set(name, flds):
    return {"update": {"name": name, "fields": flds}}


def _ok_write(root, coll):
    """A valid write placed before the bad one, to prove the commit is all-or-nothing."""
    return _set(f"{root}/{coll}/canary", {"ok": {"booleanValue": True}})


def _assert_not_written(rest, root, coll):
    r = rest.get(f"/v1/{root}/{coll}/canary")
    assert r.status_code == 404, f"partial write: {r.text}"
    assert_error_body(r, "NOT_FOUND")


def _nested_map(depth):
    """A value whose nesting depth (maps inside maps) is `depth`."""
    v = {"integerValue": "1"}
    for _ in range(depth):
        v = {"mapValue": {"fields": {"m": v}}}
    return v


def test_malformed_json_body(rest, database, root, coll):
    r = rest.post(f"/v1/{database}/documents:commit", data=b'{"writes": [', headers={"Content-Type": "application/json"})
    assert_error_body(r, "INVALID_ARGUMENT")
    r = rest.patch(f"/v1/{root}/{coll}/d", data=b"not json at all", headers={"Content-Type": "application/json"})
    assert_error_body(r, "INVALID_ARGUMENT")
    r = rest.get(f"/v1/{root}/{coll}/d")
    assert_error_body(r, "NOT_FOUND")


@pytest.mark.parametrize("bad_value", [
    {"integerValue": "abc"},
    {"integerValue": "9223372036854775808"},     # out of int64 range
    {"integerValue": 1.5},
    {"doubleValue": "fast"},
    {"booleanValue": "yes"},
    {"timestampValue": "yesterday"},
    pytest.param({"timestampValue": "2024-13-01T00:00:00Z"},
                 marks=pytest.mark.hearth_only(reason="the emulator accepts month 13 in a timestamp")),
    {"bytesValue": "***not base64***"},
    {"geoPointValue": {"latitude": 91, "longitude": 0}},
    {"geoPointValue": {"latitude": 0, "longitude": 181}},
    {"integerValue": "1", "stringValue": "two"},   # two kinds in one value
    {"arrayValue": {"values": [{"arrayValue": {"values": []}}]}},   # arrays cannot hold arrays
    {"mapValue": {"fields": {"a": {"unknownValue": 1}}}},
])
def test_bad_value_encoding(rest, database, root, coll, bad_value):
    r = _commit(rest, database, [_ok_write(root, coll), _set(f"{root}/{coll}/bad", {"f": bad_value})])
    assert_error_body(r, "INVALID_ARGUMENT")
    _assert_not_written(rest, root, coll)


@pytest.mark.parametrize("suffix", [
    "{coll}//d",          # empty segment
    "{coll}/d/",          # trailing slash
    "{coll}",             # a collection, not a document
    "{coll}/d/e",         # odd number of segments
    "{coll}/__x__",       # reserved id
    "{coll}/.",
    "{coll}/..",
    "__bad__/d",          # reserved collection id
])
def test_invalid_document_names_in_commit(rest, database, root, coll, suffix):
    name = f"{root}/" + suffix.format(coll=coll)
    r = _commit(rest, database, [_ok_write(root, coll), _set(name, {"a": {"integerValue": "1"}})])
    assert_error_body(r, "INVALID_ARGUMENT")
    _assert_not_written(rest, root, coll)


@pytest.mark.parametrize("doc_id", ["__x__", ".", ".."])
def test_invalid_document_id_on_create(rest, root, coll, doc_id):
    r = rest.post(f"/v1/{root}/{coll}", params={"documentId": doc_id}, json={"fields": {}})
    assert_error_body(r, "INVALID_ARGUMENT")
    r = rest.get(f"/v1/{root}/{coll}")
    assert r.status_code == 200 and r.json().get("documents", []) == []


def test_empty_path_segment_in_url(rest, root, coll):
    r = rest.patch(f"/v1/{root}/{coll}//d", json={"fields": {"a": {"integerValue": "1"}}})
    assert 400 <= r.status_code < 500, r.text
    assert r.json()["error"]["status"] in ("INVALID_ARGUMENT", "NOT_FOUND")
    r = rest.get(f"/v1/{root}/{coll}")
    assert r.status_code == 200 and r.json().get("documents", []) == []


def test_oversize_document(rest, database, root, coll):
    big = "x" * (1024 * 1024 + 10)
    r = _commit(rest, database, [_ok_write(root, coll), _set(f"{root}/{coll}/big", {"s": {"stringValue": big}})])
    assert_error_body(r, "INVALID_ARGUMENT")
    _assert_not_written(rest, root, coll)
    r = rest.get(f"/v1/{root}/{coll}/big")
    assert r.status_code == 404


def _two_string_fields_of_total_size(root, coll, doc_id, doc_size):
    """Fields {a, b} of strings making the document exactly `doc_size` bytes by Firestore's
    storage-size rules: name = sum(len(segment)+1 for segments after /documents/) + 16;
    field name = len+1; string = len+1; plus 32 bytes per document."""
    name_size = len(coll) + 1 + len(doc_id) + 1 + 16
    overhead = name_size + 32 + (2 + 1) * 2
    total = doc_size - overhead
    a = total // 2
    return {"a": {"stringValue": "x" * a}, "b": {"stringValue": "y" * (total - a)}}


def test_document_size_boundary(rest, database, root, coll):
    limit = 1024 * 1024
    at_limit = _two_string_fields_of_total_size(root, coll, "at", limit)
    r = _commit(rest, database, [_set(f"{root}/{coll}/at", at_limit)])
    assert r.status_code == 200, r.text[:300]
    over = _two_string_fields_of_total_size(root, coll, "ov", limit + 1)
    r = _commit(rest, database, [_ok_write(root, coll), _set(f"{root}/{coll}/ov", over)])
    assert_error_body(r, "INVALID_ARGUMENT")
    _assert_not_written(rest, root, coll)
    got = rest.get(f"/v1/{root}/{coll}/at").json()
    assert got["fields"] == at_limit


def test_nesting_limit(rest, database, root, coll):
    r = _commit(rest, database, [_set(f"{root}/{coll}/ok20", {"f": _nested_map(20)})])
    assert r.status_code == 200, r.text
    r = _commit(rest, database, [_ok_write(root, coll), _set(f"{root}/{coll}/deep", {"f": _nested_map(21)})])
    assert_error_body(r, "INVALID_ARGUMENT")
    _assert_not_written(rest, root, coll)


def test_unknown_json_field(rest, database, root, coll):
    r = rest.post(f"/v1/{database}/documents:commit", json={"writes": [_ok_write(root, coll)], "bogus": 1})
    assert_error_body(r, "INVALID_ARGUMENT")
    _assert_not_written(rest, root, coll)
    r = _commit(rest, database, [{**_ok_write(root, coll), "notAField": True}])
    assert_error_body(r, "INVALID_ARGUMENT")
    _assert_not_written(rest, root, coll)


def test_wrong_json_types(rest, database, root, coll):
    r = rest.post(f"/v1/{database}/documents:commit", json={"writes": {"not": "a list"}})
    assert_error_body(r, "INVALID_ARGUMENT")
    r = rest.post(f"/v1/{database}/documents:commit", json=["not", "an", "object"])
    assert_error_body(r, "INVALID_ARGUMENT")


@pytest.mark.hearth_only(reason="the emulator answers a bad page token with 500 UNKNOWN")
def test_bad_page_token(rest, database, root, coll):
    rest.patch(f"/v1/{root}/{coll}/a", json={"fields": {}})
    r = rest.get(f"/v1/{root}/{coll}", params={"pageSize": 1, "pageToken": "garbage-token"})
    assert_error_body(r, "INVALID_ARGUMENT")


def test_unknown_transaction_id(rest, database, root, coll):
    fake = b64(b"no-such-transaction")
    r = _commit(rest, database, [_ok_write(root, coll)], transaction=fake)
    assert_error_body(r, "INVALID_ARGUMENT")
    _assert_not_written(rest, root, coll)
    r = rest.post(f"/v1/{database}/documents:rollback", json={"transaction": fake})
    assert_error_body(r, "INVALID_ARGUMENT")
    r = rest.post(f"/v1/{database}/documents:batchGet",
                  json={"documents": [f"{root}/{coll}/canary"], "transaction": fake})
    assert_error_body(r, "INVALID_ARGUMENT")


def test_rollback_requires_transaction(rest, database):
    r = rest.post(f"/v1/{database}/documents:rollback", json={})
    assert_error_body(r, "INVALID_ARGUMENT")


def test_reserved_field_name(rest, database, root, coll):
    r = _commit(rest, database, [_ok_write(root, coll), _set(f"{root}/{coll}/r", {"__bad__": {"integerValue": "1"}})])
    assert_error_body(r, "INVALID_ARGUMENT")
    _assert_not_written(rest, root, coll)


@pytest.mark.parametrize("path", ["a..b", ".a", "a.", "`unterminated", ""])
def test_invalid_field_path_in_mask(rest, database, root, coll, path):
    w = {**_set(f"{root}/{coll}/m", {"a": {"integerValue": "1"}}), "updateMask": {"fieldPaths": [path]}}
    r = _commit(rest, database, [_ok_write(root, coll), w])
    assert_error_body(r, "INVALID_ARGUMENT")
    _assert_not_written(rest, root, coll)


@pytest.mark.hearth_only(reason="the emulator accepts a write naming another database")
def test_write_to_other_database_in_commit(rest, database, project, coll):
    other = f"projects/{project}/databases/other-db/documents/{coll}/d"
    r = _commit(rest, database, [_set(other, {"a": {"integerValue": "1"}})])
    assert_error_body(r, "INVALID_ARGUMENT")


@pytest.mark.parametrize("sq", [
    {"from": [{"collectionId": "c"}], "limit": -1},
    {"from": [{"collectionId": "c"}], "offset": -1},
    {"from": [{"collectionId": "c"}], "where": {"fieldFilter": {"field": {"fieldPath": "a"}, "op": "NOT_AN_OP", "value": {"integerValue": "1"}}}},
    {"from": [{"collectionId": "c"}], "where": {"fieldFilter": {"field": {"fieldPath": "a"}, "op": "IN", "value": {"integerValue": "1"}}}},
    {"from": [{"collectionId": "c"}], "where": {"fieldFilter": {"field": {"fieldPath": "a"}, "op": "ARRAY_CONTAINS_ANY", "value": {"arrayValue": {}}}}},
    {"from": [{"collectionId": "c"}], "orderBy": [{"field": {"fieldPath": "a"}}],
     "startAt": {"values": [{"integerValue": "1"}, {"integerValue": "2"}, {"integerValue": "3"}]}},
    {"from": [{"collectionId": "c"}], "where": {"fieldFilter": {"field": {"fieldPath": "__name__"}, "op": "EQUAL", "value": {"stringValue": "c/x"}}}},
])
def test_invalid_queries(rest, root, sq):
    r = rest.post(f"/v1/{root}:runQuery", json={"structuredQuery": sq})
    assert_error_body(r, "INVALID_ARGUMENT")


def test_error_for_missing_document_shape(rest, root, coll):
    r = rest.get(f"/v1/{root}/{coll}/nope")
    err = assert_error_body(r, "NOT_FOUND")
    assert err["code"] == 404


def test_already_exists_shape(rest, root, coll):
    url = f"/v1/{root}/{coll}"
    assert rest.post(url, params={"documentId": "x"}, json={"fields": {}}).status_code == 200
    r = rest.post(url, params={"documentId": "x"}, json={"fields": {}})
    assert_error_body(r, "ALREADY_EXISTS")
