"""Bad input on the database port: Firebase's `{"error": "..."}` with a 4xx, nothing half-written,
the server unharmed; and production mode's refusals."""

from __future__ import annotations

import json

import pytest

from authutil import start
from dbutil import DatabaseRest, unique

pytestmark = pytest.mark.hearth_only(reason="the Realtime Database is served by Hearth, not by the Firestore emulator")


@pytest.fixture(scope="module")
def db(server):
    r = DatabaseRest(server)
    yield r
    r.session.close()


def error(r, status: int) -> str:
    assert r.status_code == status, r.text
    body = r.json()
    assert set(body) == {"error"} and isinstance(body["error"], str)
    return body["error"]


def test_malformed_json_is_refused(db):
    p = f"/{unique()}"
    for body in ("{", "{'a':1}", "[1,]", "nul", "\"\\ud800\"", "1 2", ""):
        r = db.request("PUT", f"{p}.json", data=body)
        assert error(r, 400) == "Invalid data; couldn't parse JSON object, array, or value."
    assert db.get(f"{p}.json").json() is None


@pytest.mark.parametrize("key", ["a.b", "a$", "a#", "a[", "a]", "\u0001", "\u007f", "x" * 769])
def test_invalid_keys_in_data_write_nothing(db, key):
    p = f"/{unique()}"
    r = db.put(f"{p}.json", {"ok": 1, "nested": {key: 1}})
    assert error(r, 400).startswith("Invalid data;")
    r = db.patch(f"{p}.json", {"ok": 1, "bad": {key: 1}})
    assert error(r, 400).startswith("Invalid data;")
    assert db.get(f"{p}.json").json() is None


@pytest.mark.parametrize("segment", ["a.b", "a$b", "a%23b", "a[b", "a%5Db", "a%01b"])
def test_invalid_keys_in_paths(db, segment):
    r = db.request("GET", f"/{segment}.json")
    assert error(r, 400) == "Invalid path: Invalid token in path"


def test_depth_and_size_limits(db):
    p = unique()
    deep = "/".join(f"k{i}" for i in range(33))
    assert error(db.get(f"/{deep}.json"), 400).startswith("Invalid path")
    value: object = 1
    for _ in range(33):
        value = {"k": value}
    assert error(db.put(f"/{p}.json", value), 400).startswith("Invalid data;")
    big = {"blob": "x" * 20000}
    r = db.put(f"/{p}.json", big, params={"writeSizeLimit": "tiny"})
    assert error(r, 413) == "Data to write exceeds the maximum size that can be modified with a single request."
    assert db.get(f"/{p}.json").json() is None
    assert db.put(f"/{p}.json", big, params={"writeSizeLimit": "small"}).status_code == 200
    r = db.delete(f"/{p}.json", params={"writeSizeLimit": "tiny"})
    assert r.status_code == 413 and db.get(f"/{p}/blob.json").json() == big["blob"]
    assert error(db.get(f"/{p}.json", params={"writeSizeLimit": "huge"}), 400)


@pytest.mark.parametrize("params", [
    {"startAt": "1"},
    {"orderBy": "$key"},
    {"orderBy": '"$key"', "startAt": "1"},
    {"orderBy": '"h"', "limitToFirst": "1", "limitToLast": "1"},
    {"orderBy": '"h"', "limitToFirst": "-1"},
    {"orderBy": '"h"', "equalTo": "{}"},
    {"orderBy": '"a.b"'},
    {"orderBy": '"h"', "shallow": "true"},
    {"print": "loud"},
    {"format": "xml"},
    {"timeout": "forever"},
    {"auth_variable_override": "[1]"},
])
def test_bad_query_parameters(db, params):
    error(db.get(f"/{unique()}.json", params=params), 400)


def test_bad_credentials_and_methods(server, db):
    r = DatabaseRest(server, token="garbage").get("/x.json")
    assert error(r, 401) == "Could not parse auth token."
    r = db.get("/x.json", params={"auth": "garbage"})
    assert error(r, 401) == "Could not parse auth token."
    r = db.request("PATCH", f"/{unique()}.json", data="[1,2]")
    error(r, 400)
    r = db.request("POST", f"/{unique()}.json", data="1", headers={"X-HTTP-Method-Override": "TRACE"})
    error(r, 400)
    r = db.request("GET", "/no-suffix")
    error(r, 400)
    # method override: POST acting as PUT
    p = f"/{unique()}"
    r = db.request("POST", f"{p}.json", data="5", headers={"X-HTTP-Method-Override": "PUT"})
    assert r.status_code == 200 and db.get(f"{p}.json").json() == 5
    # the server is unharmed
    assert db.put(f"{p}.json", {"ok": True}).status_code == 200


@pytest.fixture(scope="module")
def prod(tmp_path_factory):
    srv = start(tmp_path_factory, "database-production", emulator=False, extra_args=("--admin-token", "db-admin-secret"),
                service_account=False)
    yield srv
    srv.stop()


def test_production_refuses_clients_without_rules_and_owner_is_not_admin(prod):
    p = f"/{unique()}"
    anonymous = DatabaseRest(prod, token=None)
    assert error(anonymous.get(f"{p}.json"), 401) == "Permission denied"
    assert error(anonymous.put(f"{p}.json", 1), 401) == "Permission denied"
    assert error(DatabaseRest(prod, token="owner").get(f"{p}.json"), 401) == "Could not parse auth token."
    unsigned = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ1MSJ9."
    assert error(DatabaseRest(prod, token=unsigned).get(f"{p}.json"), 401) == "Could not parse auth token."
    admin = DatabaseRest(prod, token="db-admin-secret")
    assert admin.put(f"{p}.json", {"v": 1}).status_code == 200
    assert admin.get(f"{p}.json").json() == {"v": 1}
    assert admin.get("/.settings/rules.json").json() == {"rules": {".read": False, ".write": False}}
    override = admin.get(f"{p}.json", params={"auth_variable_override": json.dumps({"uid": "u1"})})
    assert error(override, 401) == "Permission denied"


def test_database_rules_file_is_loaded_and_checked(tmp_path_factory, tmp_path):
    rules = {"rules": {"public": {".read": "true"}}}
    good = tmp_path / "database.rules.json"
    good.write_text(json.dumps(rules))
    srv = start(tmp_path_factory, "database-rules-file", emulator=True, extra_args=("--database-rules", str(good)),
                service_account=False)
    try:
        admin = DatabaseRest(srv, ns=None)
        assert admin.get("/.settings/rules.json").json() == rules
        assert admin.put("/public/x.json", 1).status_code == 200
        # The file's rules judge clients: /public is readable by anyone, nothing else is, nothing is
        # writable; the admin is not judged.
        anonymous = DatabaseRest(srv, ns=None, token=None)
        readable = anonymous.get("/public/x.json")
        assert readable.status_code == 200 and readable.json() == 1, readable.text
        assert error(anonymous.get("/other.json"), 401) == "Permission denied"
        assert error(anonymous.put("/public/x.json", 2), 401) == "Permission denied"
        assert admin.get("/public/x.json").json() == 1
        # Other namespaces keep the emulator's defaults.
        assert DatabaseRest(srv, ns="elsewhere", token=None).get("/x.json").status_code == 200
    finally:
        srv.stop()
    bad = tmp_path / "bad.rules.json"
    bad.write_text("{\"rules\": ")
    with pytest.raises(Exception) as failure:
        start(tmp_path_factory, "database-rules-bad", emulator=True, extra_args=("--database-rules", str(bad)),
              service_account=False)
    assert "bad.rules.json" in str(failure.value)
