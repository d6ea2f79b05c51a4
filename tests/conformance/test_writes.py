"""Commit (writes, preconditions, field transforms), BatchWrite and transactions."""

import pytest
from fsutil import (Int, commit, data, dec, enc, expect_rpc_error, fields, get, kind, pdata, put,
                    put_many, ts_tuple, w_delete, w_set)

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)


def arr(values):
    """An ArrayValue (the operand type of array transforms)."""
    return enc(list(values))["array_value"]


# ------------------------------------------------------------------------------------------
# Commit: plain writes and preconditions
# ------------------------------------------------------------------------------------------


def test_commit_multiple_writes(client, database, root, coll):
    a, b, c = (f"{root}/{coll}/{x}" for x in "abc")
    put(client, database, c, {"old": True})
    res = commit(client, database, [
        w_set(a, {"v": 1}),
        w_set(b, {"v": 2}, current_document={"exists": False}),
        w_delete(c),
    ])
    assert len(res.write_results) == 3
    assert res.write_results[0].update_time == res.commit_time
    assert res.write_results[1].update_time == res.commit_time
    assert "update_time" not in res.write_results[2]  # not set after a delete
    assert pdata(get(client, a)) == {"v": 1}
    assert pdata(get(client, b)) == {"v": 2}
    with expect_rpc_error("NOT_FOUND"):
        get(client, c)


def test_commit_empty(client, database):
    res = commit(client, database, [])
    assert len(res.write_results) == 0


def test_commit_same_document_twice(client, database, root, coll):
    name = f"{root}/{coll}/d"
    res = commit(client, database, [
        w_set(name, {"a": 1, "b": 1}),
        {"update": {"name": name, "fields": fields({"b": 2})}, "update_mask": {"field_paths": ["b"]},
         "current_document": {"exists": True}},
    ])
    assert len(res.write_results) == 2
    assert pdata(get(client, name)) == {"a": 1, "b": 2}


def test_commit_is_atomic_on_precondition_failure(client, database, root, coll):
    a, b = f"{root}/{coll}/a", f"{root}/{coll}/b"
    with expect_rpc_error("NOT_FOUND"):
        commit(client, database, [
            w_set(a, {"v": 1}),
            {"update": {"name": b, "fields": fields({"v": 2})}, "update_mask": {"field_paths": ["v"]},
             "current_document": {"exists": True}},
        ])
    with expect_rpc_error("NOT_FOUND"):
        get(client, a)


def test_commit_exists_false_on_existing(client, database, root, coll):
    name = f"{root}/{coll}/d"
    put(client, database, name, {"v": 1})
    with expect_rpc_error("ALREADY_EXISTS"):
        commit(client, database, [w_set(name, {"v": 2}, current_document={"exists": False})])
    assert pdata(get(client, name)) == {"v": 1}


def test_commit_update_time_precondition(client, database, root, coll):
    name = f"{root}/{coll}/d"
    first = put(client, database, name, {"v": 1})
    t1 = first.write_results[0].update_time
    second = commit(client, database, [w_set(name, {"v": 2}, current_document={"update_time": t1})])
    assert pdata(get(client, name)) == {"v": 2}
    # stale now
    with expect_rpc_error("FAILED_PRECONDITION"):
        commit(client, database, [w_set(name, {"v": 3}, current_document={"update_time": t1})])
    with expect_rpc_error("FAILED_PRECONDITION"):
        commit(client, database, [w_delete(name, current_document={"update_time": t1})])
    assert pdata(get(client, name)) == {"v": 2}
    commit(client, database, [w_delete(name, current_document={"update_time": second.commit_time})])
    with expect_rpc_error("NOT_FOUND"):
        get(client, name)


def test_commit_update_time_precondition_on_missing(client, database, root, coll):
    name = f"{root}/{coll}/d"
    put(client, database, f"{root}/{coll}/other", {"v": 1})
    t = get(client, f"{root}/{coll}/other").update_time
    # the stored version of a missing document (0) does not match the required one
    with expect_rpc_error("FAILED_PRECONDITION"):
        commit(client, database, [w_set(name, {"v": 2}, current_document={"update_time": t})])
    with expect_rpc_error("NOT_FOUND"):
        get(client, name)


def test_commit_update_with_mask_and_quoted_paths(client, database, root, coll):
    name = f"{root}/{coll}/d"
    put(client, database, name, {"a.b": 1, "a": {"b": 2}, "x-y": 3, "keep": 4})
    commit(client, database, [{
        "update": {"name": name, "fields": fields({"a.b": 10, "x-y": 30, "a": {"b": 20}})},
        "update_mask": {"field_paths": ["`a.b`", "`x-y`"]},
    }])
    assert pdata(get(client, name)) == {"a.b": 10, "a": {"b": 2}, "x-y": 30, "keep": 4}
    commit(client, database, [{
        "update": {"name": name, "fields": fields({"a": {"b": 20}})},
        "update_mask": {"field_paths": ["a.b"]},
    }])
    assert pdata(get(client, name)) == {"a.b": 10, "a": {"b": 20}, "x-y": 30, "keep": 4}


def test_commit_mask_delete_nested_field(client, database, root, coll):
    name = f"{root}/{coll}/d"
    put(client, database, name, {"m": {"x": 1, "y": 2}, "z": 1})
    commit(client, database, [{
        "update": {"name": name, "fields": {}},
        "update_mask": {"field_paths": ["m.x", "z"]},
        "current_document": {"exists": True},
    }])
    assert pdata(get(client, name)) == {"m": {"y": 2}}


def test_commit_mask_on_missing_document_creates_it(client, database, root, coll):
    name = f"{root}/{coll}/d"
    commit(client, database, [{
        "update": {"name": name, "fields": fields({"m": {"x": 1}, "unused": 2})},
        "update_mask": {"field_paths": ["m.x"]},
    }])
    assert pdata(get(client, name)) == {"m": {"x": 1}}


# ------------------------------------------------------------------------------------------
# Field transforms
# ------------------------------------------------------------------------------------------


def _transform_write(name, base_fields, mask, transforms, **extra):
    w = {"update": {"name": name, "fields": fields(base_fields)}, "update_transforms": transforms}
    if mask is not None:
        w["update_mask"] = {"field_paths": mask}
    w.update(extra)
    return w


def test_transform_server_timestamp(client, database, root, coll):
    name = f"{root}/{coll}/d"
    res = commit(client, database, [_transform_write(name, {"a": 1}, None, [
        {"field_path": "ts", "set_to_server_value": "REQUEST_TIME"},
        {"field_path": "m.ts", "set_to_server_value": "REQUEST_TIME"},
    ])])
    wr = res.write_results[0]
    assert len(wr.transform_results) == 2
    assert all(kind(v) == "timestamp_value" for v in wr.transform_results)
    expected = dec(wr.transform_results[0])
    assert dec(wr.transform_results[1]) == expected, "one request time for the whole commit"
    _check_request_time(expected, res.commit_time)
    d = data(get(client, name))
    assert d["ts"] == expected
    assert d["m"] == {"ts": expected}
    assert d["a"] == Int(1)


def _check_request_time(ts, commit_time):
    """REQUEST_TIME is "the time at which the server processed the request, with millisecond
    precision": not after the commit time and close to it."""
    _, seconds, nanos = ts
    assert nanos % 1_000_000 == 0, f"server timestamp must have millisecond precision: {ts}"
    commit = ts_tuple(commit_time)
    as_ns = seconds * 10**9 + nanos
    commit_ns = commit[1] * 10**9 + commit[2]
    assert 0 <= commit_ns - as_ns < 5 * 10**9, (ts, commit)


def test_transform_increment(client, database, root, coll):
    name = f"{root}/{coll}/d"
    put(client, database, name, {"i": 10, "d": 1.5, "k": 1, "big": INT64_MAX, "small": INT64_MIN,
                                 "s": "text", "m": {"n": 1}})
    res = commit(client, database, [_transform_write(name, {}, [], [
        {"field_path": "i", "increment": enc(5)},
        {"field_path": "d", "increment": enc(1)},
        {"field_path": "k", "increment": enc(0.5)},
        {"field_path": "missing", "increment": enc(3)},
        {"field_path": "big", "increment": enc(1)},
        {"field_path": "small", "increment": enc(-1)},
        {"field_path": "s", "increment": enc(2)},
        {"field_path": "m.n", "increment": enc(-4)},
    ], current_document={"exists": True})])
    got = [dec(v) for v in res.write_results[0].transform_results]
    expected = [Int(15), 2.5, 1.5, Int(3), Int(INT64_MAX), Int(INT64_MIN), Int(2), Int(-3)]
    assert got == expected
    assert data(get(client, name)) == {
        "i": Int(15), "d": 2.5, "k": 1.5, "missing": Int(3), "big": Int(INT64_MAX),
        "small": Int(INT64_MIN), "s": Int(2), "m": {"n": Int(-3)},
    }


def test_transform_increment_double(client, database, root, coll):
    name = f"{root}/{coll}/d"
    put(client, database, name, {"d": 0.25, "i": 2})
    res = commit(client, database, [_transform_write(name, {}, [], [
        {"field_path": "d", "increment": enc(0.5)},
        {"field_path": "i", "increment": enc(-0.5)},
        {"field_path": "new", "increment": enc(1.25)},
    ])])
    assert [dec(v) for v in res.write_results[0].transform_results] == [0.75, 1.5, 1.25]
    assert data(get(client, name)) == {"d": 0.75, "i": 1.5, "new": 1.25}


def test_transform_maximum_minimum(client, database, root, coll):
    name = f"{root}/{coll}/d"
    put(client, database, name, {"mx": 5, "mx2": 5, "mxd": 2.5, "mxeq": 5, "mn": 5, "mn2": 1.0,
                                 "mneq": 3.0, "s": "x"})
    res = commit(client, database, [_transform_write(name, {}, [], [
        {"field_path": "mx", "maximum": enc(7)},
        {"field_path": "mx2", "maximum": enc(3)},
        {"field_path": "mxd", "maximum": enc(3)},          # int wins, field becomes int 3
        {"field_path": "mxeq", "maximum": enc(5.0)},       # equal: field unchanged (int 5)
        {"field_path": "mn", "minimum": enc(3)},
        {"field_path": "mn2", "minimum": enc(2)},          # unchanged double 1.0
        {"field_path": "mneq", "minimum": enc(3)},         # equal: unchanged double 3.0
        {"field_path": "s", "maximum": enc(1)},            # not a number: set to operand
        {"field_path": "none", "minimum": enc(-2.5)},      # missing: set to operand
    ])])
    got = [dec(v) for v in res.write_results[0].transform_results]
    expected = [Int(7), Int(5), Int(3), Int(5), Int(3), 1.0, 3.0, Int(1), -2.5]
    assert got == expected
    assert data(get(client, name)) == {
        "mx": Int(7), "mx2": Int(5), "mxd": Int(3), "mxeq": Int(5), "mn": Int(3), "mn2": 1.0,
        "mneq": 3.0, "s": Int(1), "none": -2.5,
    }


def test_transform_array_union_and_remove(client, database, root, coll):
    name = f"{root}/{coll}/d"
    put(client, database, name, {"arr": [1, 2, "a", 2], "rm": [1, 2, "a", 2, {"k": 1}, 2.0],
                                 "notarr": "s", "notarr2": 5})
    res = commit(client, database, [_transform_write(name, {}, [], [
        {"field_path": "arr", "append_missing_elements": arr([2, 3, "b", 1.0])},
        {"field_path": "rm", "remove_all_from_array": arr([2, {"k": 1}, "zz"])},
        {"field_path": "notarr", "append_missing_elements": arr([1, 1])},
        {"field_path": "notarr2", "remove_all_from_array": arr([5])},
        {"field_path": "fresh", "append_missing_elements": arr(["x"])},
    ])])
    results = res.write_results[0].transform_results
    assert [kind(v) for v in results] == ["null_value"] * 5
    got = data(get(client, name))
    # 1.0 equals 1, so it is not appended; integers and doubles compare by value.
    assert got["arr"] == [Int(1), Int(2), "a", Int(2), Int(3), "b"]
    # removes every element equal to one of the operands, 2.0 included.
    assert got["rm"] == [Int(1), "a"]
    assert got["notarr"] == [Int(1)]
    assert got["notarr2"] == []
    assert got["fresh"] == ["x"]


def test_transform_only_write(client, database, root, coll):
    """The legacy stand-alone `transform` write."""
    name = f"{root}/{coll}/d"
    put(client, database, name, {"n": 1})
    res = commit(client, database, [{"transform": {"document": name, "field_transforms": [
        {"field_path": "n", "increment": enc(2)},
        {"field_path": "t", "set_to_server_value": "REQUEST_TIME"},
    ]}}])
    wr = res.write_results[0]
    assert dec(wr.transform_results[0]) == Int(3)
    t = dec(wr.transform_results[1])
    _check_request_time(t, res.commit_time)
    assert data(get(client, name)) == {"n": Int(3), "t": t}


def test_transform_applies_after_update(client, database, root, coll):
    name = f"{root}/{coll}/d"
    res = commit(client, database, [_transform_write(
        name, {"n": 10, "arr": [1]}, None,
        [{"field_path": "n", "increment": enc(1)},
         {"field_path": "arr", "append_missing_elements": arr([2])}])])
    assert dec(res.write_results[0].transform_results[0]) == Int(11)
    assert data(get(client, name)) == {"n": Int(11), "arr": [Int(1), Int(2)]}


# ------------------------------------------------------------------------------------------
# BatchWrite
# ------------------------------------------------------------------------------------------


def test_batch_write_per_write_status(client, database, root, coll):
    existing, a, b, c = (f"{root}/{coll}/{x}" for x in ("existing", "a", "b", "c"))
    put(client, database, existing, {"v": 0})
    res = client.batch_write(request={"database": database, "writes": [
        w_set(a, {"v": 1}),
        {"update": {"name": b, "fields": fields({"v": 2})}, "update_mask": {"field_paths": ["v"]},
         "current_document": {"exists": True}},
        w_set(c, {"v": 3}),
        w_set(existing, {"v": 4}, current_document={"exists": False}),
    ]})
    assert [s.code for s in res.status] == [0, 5, 0, 6]
    assert res.status[1].message and res.status[3].message
    assert len(res.write_results) == 4
    assert "update_time" in res.write_results[0] and "update_time" in res.write_results[2]
    assert "update_time" not in res.write_results[1] and "update_time" not in res.write_results[3]
    assert pdata(get(client, a)) == {"v": 1}
    assert pdata(get(client, c)) == {"v": 3}
    assert pdata(get(client, existing)) == {"v": 0}
    with expect_rpc_error("NOT_FOUND"):
        get(client, b)


def test_batch_write_transforms_and_deletes(client, database, root, coll):
    a, b = f"{root}/{coll}/a", f"{root}/{coll}/b"
    put_many(client, database, {a: {"n": 1}, b: {"x": 1}})
    res = client.batch_write(request={"database": database, "writes": [
        {"update": {"name": a, "fields": {}}, "update_mask": {"field_paths": []},
         "update_transforms": [{"field_path": "n", "increment": enc(41)}]},
        w_delete(b),
    ]})
    assert [s.code for s in res.status] == [0, 0]
    assert dec(res.write_results[0].transform_results[0]) == Int(42)
    assert pdata(get(client, a)) == {"n": 42}
    with expect_rpc_error("NOT_FOUND"):
        get(client, b)


# ------------------------------------------------------------------------------------------
# Transactions
# ------------------------------------------------------------------------------------------


def _txn_get(client, database, name, txn):
    """Read one document inside a transaction through BatchGetDocuments (body, not URL)."""
    responses = list(client.batch_get_documents(request={
        "database": database, "documents": [name], "transaction": txn}))
    assert len(responses) == 1
    r = responses[0]
    return pdata(r.found) if "found" in r else None


def test_transaction_commit(client, database, root, coll):
    name = f"{root}/{coll}/d"
    put(client, database, name, {"n": 1})
    txn = client.begin_transaction(request={"database": database}).transaction
    assert isinstance(txn, bytes) and txn
    current = _txn_get(client, database, name, txn)
    assert current == {"n": 1}
    res = commit(client, database, [w_set(name, {"n": current["n"] + 1})], transaction=txn)
    assert res.write_results[0].update_time == res.commit_time
    assert pdata(get(client, name)) == {"n": 2}
    # a transaction can be committed only once
    with expect_rpc_error("INVALID_ARGUMENT"):
        commit(client, database, [w_set(name, {"n": 99})], transaction=txn)
    assert pdata(get(client, name)) == {"n": 2}


@pytest.mark.hearth_only(reason="the emulator hangs on GetDocument with a transaction in the URL")
def test_transaction_get_document_in_url(client, database, root, coll):
    name = f"{root}/{coll}/d"
    put(client, database, name, {"n": 1})
    txn = client.begin_transaction(request={"database": database}).transaction
    assert pdata(get(client, name, transaction=txn)) == {"n": 1}
    with expect_rpc_error("NOT_FOUND"):
        get(client, f"{root}/{coll}/missing", transaction=txn)
    commit(client, database, [w_set(name, {"n": 2})], transaction=txn)
    assert pdata(get(client, name)) == {"n": 2}
    ro = client.begin_transaction(request={"database": database, "options": {"read_only": {}}}).transaction
    assert pdata(get(client, name, transaction=ro)) == {"n": 2}
    client.rollback(request={"database": database, "transaction": ro})


def test_transaction_rollback(client, database, root, coll):
    name = f"{root}/{coll}/d"
    put(client, database, name, {"n": 1})
    txn = client.begin_transaction(request={"database": database}).transaction
    assert _txn_get(client, database, name, txn) == {"n": 1}
    client.rollback(request={"database": database, "transaction": txn})
    # the rolled-back transaction cannot be committed
    with expect_rpc_error("INVALID_ARGUMENT"):
        commit(client, database, [w_set(name, {"n": 5})], transaction=txn)
    assert pdata(get(client, name)) == {"n": 1}
    # writes outside any transaction work again right away (locks were released)
    put(client, database, name, {"n": 7})
    assert pdata(get(client, name)) == {"n": 7}


def test_transaction_unknown_id(client, database, root, coll):
    name = f"{root}/{coll}/d"
    with expect_rpc_error("INVALID_ARGUMENT"):
        commit(client, database, [w_set(name, {"n": 1})], transaction=b"not-a-real-transaction")
    with expect_rpc_error("INVALID_ARGUMENT"):
        client.rollback(request={"database": database, "transaction": b"not-a-real-transaction"})
    with expect_rpc_error("NOT_FOUND"):
        get(client, name)


def test_transaction_query_and_batch_get_with_new_transaction(client, database, root, coll):
    a, b = f"{root}/{coll}/a", f"{root}/{coll}/b"
    put_many(client, database, {a: {"n": 1}, b: {"n": 2}})
    responses = list(client.batch_get_documents(request={
        "database": database, "documents": [a, b], "new_transaction": {"read_write": {}}}))
    txns = [r.transaction for r in responses if r.transaction]
    assert len(txns) == 1, "the first response carries the new transaction id"
    txn = txns[0]
    found = {r.found.name: pdata(r.found) for r in responses if "found" in r}
    assert found == {a: {"n": 1}, b: {"n": 2}}
    commit(client, database, [w_set(a, {"n": 3})], transaction=txn)
    assert pdata(get(client, a)) == {"n": 3}


def test_transaction_run_query_new_transaction(client, database, root, coll):
    a = f"{root}/{coll}/a"
    put(client, database, a, {"n": 1})
    responses = list(client.run_query(request={
        "parent": root,
        "structured_query": {"from_": [{"collection_id": coll}]},
        "new_transaction": {"read_write": {}},
    }))
    txns = [r.transaction for r in responses if r.transaction]
    assert len(txns) == 1
    docs = [r.document for r in responses if "document" in r]
    assert [pdata(d) for d in docs] == [{"n": 1}]
    commit(client, database, [w_set(a, {"n": 2})], transaction=txns[0])
    assert pdata(get(client, a)) == {"n": 2}


def test_read_only_transaction(client, database, root, coll):
    name = f"{root}/{coll}/d"
    put(client, database, name, {"n": 1})
    txn = client.begin_transaction(request={"database": database, "options": {"read_only": {}}}).transaction
    assert txn
    assert _txn_get(client, database, name, txn) == {"n": 1}
    # a read-only transaction cannot write
    with expect_rpc_error("INVALID_ARGUMENT"):
        commit(client, database, [w_set(name, {"n": 2})], transaction=txn)
    assert pdata(get(client, name)) == {"n": 1}


def test_read_only_transaction_commit_without_writes(client, database, root, coll):
    txn = client.begin_transaction(request={"database": database, "options": {"read_only": {}}}).transaction
    res = commit(client, database, [], transaction=txn)
    assert len(res.write_results) == 0


def test_read_only_transaction_at_read_time(client, database, root, coll):
    name = f"{root}/{coll}/d"
    first = put(client, database, name, {"n": 1})
    put(client, database, name, {"n": 2})
    txn = client.begin_transaction(request={
        "database": database,
        "options": {"read_only": {"read_time": first.commit_time}},
    }).transaction
    responses = list(client.batch_get_documents(request={
        "database": database, "documents": [name], "transaction": txn}))
    assert [pdata(r.found) for r in responses if "found" in r] == [{"n": 1}]
    docs = [r.document for r in client.run_query(request={
        "parent": root, "structured_query": {"from_": [{"collection_id": coll}]}, "transaction": txn,
    }) if "document" in r]
    assert [pdata(d) for d in docs] == [{"n": 1}]


def test_commit_500_writes_is_allowed(client, database, root, coll):
    writes = [w_set(f"{root}/{coll}/d{i:03d}", {"i": i}) for i in range(500)]
    res = commit(client, database, writes)
    assert len(res.write_results) == 500
    docs = list(client.list_documents(request={"parent": root, "collection_id": coll, "page_size": 300}))
    assert len(docs) == 500


@pytest.mark.hearth_only(reason="the emulator accepts commits of more than 500 writes; production rejects them")
def test_commit_more_than_500_writes_rejected(client, database, root, coll):
    writes = [w_set(f"{root}/{coll}/d{i:03d}", {"i": i}) for i in range(501)]
    with expect_rpc_error("INVALID_ARGUMENT"):
        commit(client, database, writes)
    assert list(client.list_documents(request={"parent": root, "collection_id": coll})) == []
