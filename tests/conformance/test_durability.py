"""Acknowledged writes survive SIGKILL (Hearth only; the emulator keeps data in memory)."""

import pytest
from google.api_core.exceptions import GoogleAPICallError
from fsutil import (Int, commit, data, enc, error_status, expect_rpc_error, get, pdata, put, put_many,
                    w_delete, w_set)


def test_acknowledged_writes_survive_sigkill(client, rest, database, root, coll, restart_server):
    a, b, c, gone = (f"{root}/{coll}/{x}" for x in ("a", "b", "c", "gone"))
    put_many(client, database, {a: {"v": 1, "m": {"k": [1, "x"]}}, gone: {"v": 0}})
    res = commit(client, database, [
        w_set(b, {"v": 2}),
        {"update": {"name": a, "fields": {}}, "update_mask": {"field_paths": []},
         "update_transforms": [{"field_path": "v", "increment": enc(41)}]},
        w_delete(gone),
    ])
    put(client, database, f"{root}/{coll}/sub/kids/deep", {"deep": True})
    txn = client.begin_transaction(request={"database": database}).transaction
    commit(client, database, [w_set(c, {"v": 3})], transaction=txn)
    before = {n: get(client, n) for n in (a, b, c)}

    restart_server()

    for n, doc in before.items():
        after = get(client, n)
        assert pdata(after) == pdata(doc)
        assert after.create_time == doc.create_time
        assert after.update_time == doc.update_time
    assert data(get(client, a))["v"] == Int(42)
    with expect_rpc_error("NOT_FOUND"):
        get(client, gone)
    assert pdata(get(client, f"{root}/{coll}/sub/kids/deep")) == {"deep": True}
    docs = list(client.list_documents(request={"parent": root, "collection_id": coll, "show_missing": True}))
    assert [d.name.rsplit("/", 1)[1] for d in docs] == ["a", "b", "c", "sub"]

    # the restarted server keeps going: new writes get later commit times
    res2 = put(client, database, b, {"v": 20})
    assert res2.commit_time > res.commit_time
    assert pdata(get(client, b)) == {"v": 20}
    r = rest.get(f"/v1/{b}")
    assert r.status_code == 200 and r.json()["fields"] == {"v": {"integerValue": "20"}}


def test_uncommitted_transaction_is_gone_after_restart(client, database, root, coll, restart_server):
    name = f"{root}/{coll}/d"
    put(client, database, name, {"v": 1})
    txn = client.begin_transaction(request={"database": database}).transaction
    restart_server()
    with pytest.raises(GoogleAPICallError) as ei:
        commit(client, database, [w_set(name, {"v": 2})], transaction=txn)
    assert error_status(ei.value) in ("INVALID_ARGUMENT", "ABORTED")
    assert pdata(get(client, name)) == {"v": 1}
    put(client, database, name, {"v": 3})
    assert pdata(get(client, name)) == {"v": 3}
