"""A named database ("other-db") is isolated from "(default)"."""

from fsutil import expect_rpc_error, get, pdata, put, query_ids


def test_named_database_isolation(client, rest, project, coll):
    default_db = f"projects/{project}/databases/(default)"
    other_db = f"projects/{project}/databases/other-db"
    d_name = f"{default_db}/documents/{coll}/same"
    o_name = f"{other_db}/documents/{coll}/same"

    put(client, other_db, o_name, {"db": "other"})
    with expect_rpc_error("NOT_FOUND"):
        get(client, d_name)
    put(client, default_db, d_name, {"db": "default"})

    assert pdata(get(client, o_name)) == {"db": "other"}
    assert pdata(get(client, d_name)) == {"db": "default"}
    assert get(client, o_name).name == o_name

    put(client, other_db, f"{other_db}/documents/{coll}/only-other", {"x": 1})
    assert query_ids(client, f"{default_db}/documents", {"from_": [{"collection_id": coll}]}) == ["same"]
    assert query_ids(client, f"{other_db}/documents", {"from_": [{"collection_id": coll}]}) == ["only-other", "same"]

    docs = list(client.list_documents(request={"parent": f"{default_db}/documents", "collection_id": coll}))
    assert [d.name for d in docs] == [d_name]

    # raw REST sees the same split
    r = rest.get(f"/v1/{other_db}/documents/{coll}/only-other")
    assert r.status_code == 200 and r.json()["fields"] == {"x": {"integerValue": "1"}}
    r = rest.get(f"/v1/{default_db}/documents/{coll}/only-other")
    assert r.status_code == 404

    client.delete_document(request={"name": o_name})
    assert pdata(get(client, d_name)) == {"db": "default"}


def test_named_database_transactions_are_scoped(client, project, coll):
    other_db = f"projects/{project}/databases/other-db"
    default_db = f"projects/{project}/databases/(default)"
    txn = client.begin_transaction(request={"database": other_db}).transaction
    # a transaction of one database cannot be committed in another
    with expect_rpc_error("INVALID_ARGUMENT"):
        client.commit(request={"database": default_db, "writes": [], "transaction": txn})
    client.rollback(request={"database": other_db, "transaction": txn})
