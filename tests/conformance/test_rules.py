"""Security rules on the REST API, end to end.

Differential part: the same rules, the same data and the same requests — as several users with
emulator-style unsigned ID tokens — go to the target and to Google's Firestore emulator (the
oracle); every decision (allowed / denied / not found) must be the same. Each ruleset runs in a
project of its own, so the rules never touch the other tests' project.

Hearth-only part: production mode (no --emulator) with a rules file — no rules means deny,
unsigned tokens are refused, the admin token bypasses rules, and the file is reloaded when it
changes while a broken edit is ignored.
"""

from __future__ import annotations

import base64
import json
import os
import time

import pytest
import requests

from conftest import HearthServer, TARGET

HTTP_TIMEOUT = 30


def token(uid: str, **claims) -> str:
    """An unsigned (alg: none) Firebase ID token, as the emulators accept."""
    def b64(obj) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()
    payload = {"sub": uid, "user_id": uid, "iat": int(time.time()), "exp": int(time.time()) + 3600,
               "auth_time": int(time.time()), "firebase": {"sign_in_provider": "custom", "identities": {}}}
    payload.update(claims)
    return b64({"alg": "none", "typ": "JWT"}) + "." + b64(payload) + "."


def value(v) -> dict:
    if v is None:
        return {"nullValue": None}
    if isinstance(v, bool):
        return {"booleanValue": v}
    if isinstance(v, int):
        return {"integerValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, str):
        return {"stringValue": v}
    if isinstance(v, list):
        return {"arrayValue": {"values": [value(x) for x in v]}}
    if isinstance(v, dict):
        return {"mapValue": {"fields": {k: value(x) for k, x in v.items()}}}
    raise TypeError(type(v))


class Side:
    """One server (the target or the oracle) with one project for one ruleset."""

    def __init__(self, base: str, project: str):
        self.base = base
        self.project = project
        self.name = f"projects/{project}/databases/(default)/documents"
        self.session = requests.Session()

    def url(self, path: str) -> str:
        return f"{self.base}/v1/{self.name}{path}"

    def put_rules(self, text: str) -> requests.Response:
        return self.session.put(
            f"{self.base}/emulator/v1/projects/{self.project}:securityRules",
            json={"rules": {"files": [{"name": "firestore.rules", "content": text}]}}, timeout=HTTP_TIMEOUT)

    def seed(self, docs: dict) -> None:
        writes = [{"update": {"name": f"{self.name}/{p}", "fields": {k: value(v) for k, v in f.items()}}}
                  for p, f in docs.items()]
        r = self.session.post(self.url(":commit"), json={"writes": writes},
                              headers={"Authorization": "Bearer owner"}, timeout=HTTP_TIMEOUT)
        assert r.status_code == 200, r.text

    def write(self, op: str, path: str, fields: dict | None = None, mask: list | None = None) -> dict:
        doc = {"name": f"{self.name}/{path}", "fields": {k: value(v) for k, v in (fields or {}).items()}}
        if op == "create":
            return {"update": doc, "currentDocument": {"exists": False}}
        if op == "set":
            return {"update": doc}
        if op == "update":
            return {"update": doc, "updateMask": {"fieldPaths": mask or sorted(fields or {})},
                    "currentDocument": {"exists": True}}
        if op == "delete":
            return {"delete": f"{self.name}/{path}"}
        if op == "stamp":  # set a field to the server's request time
            return {"update": {"name": f"{self.name}/{path}", "fields": {}}, "updateMask": {"fieldPaths": []},
                    "updateTransforms": [{"fieldPath": mask[0], "setToServerValue": "REQUEST_TIME"}]}
        raise ValueError(op)

    def send(self, uid, request) -> requests.Response:
        headers = {}
        if uid is not None:
            if isinstance(uid, tuple):
                headers["Authorization"] = "Bearer " + token(uid[0], **uid[1])
            else:
                headers["Authorization"] = "Bearer " + token(uid)
        kind = request[0]
        if kind == "get":
            return self.session.get(self.url("/" + request[1]), headers=headers, timeout=HTTP_TIMEOUT)
        if kind == "commit":
            writes = [self.write(*w) for w in request[1]]
            return self.session.post(self.url(":commit"), json={"writes": writes}, headers=headers, timeout=HTTP_TIMEOUT)
        if kind == "query":
            _, collection, where, extra = request
            q = {"from": [{"collectionId": collection}]}
            if where:
                filters = [{"fieldFilter": {"field": {"fieldPath": f}, "op": op, "value": value(v)}} for f, op, v in where]
                q["where"] = filters[0] if len(filters) == 1 else {"compositeFilter": {"op": "AND", "filters": filters}}
            q.update(extra)
            return self.session.post(self.url(":runQuery"), json={"structuredQuery": q}, headers=headers,
                                     timeout=HTTP_TIMEOUT)
        raise ValueError(kind)


def outcome(r: requests.Response) -> str:
    if r.status_code == 200:
        return "ok"
    try:
        status = r.json()["error"]["status"]
    except (ValueError, KeyError, TypeError):
        status = r.text[:80]
    return {403: "denied", 404: "notfound"}.get(r.status_code, f"{r.status_code} {status}")


# ------------------------------------------------------------------------------------------
# Rulesets, data and requests
# ------------------------------------------------------------------------------------------

OWNER_RULES = """rules_version = '2';
service cloud.firestore {
  match /databases/{database}/documents {
    match /users/{userId} {
      allow read: if request.auth != null && request.auth.uid == userId;
      allow create: if request.auth.uid == userId
                    && request.resource.data.keys().hasOnly(['name', 'age'])
                    && request.resource.data.name is string && request.resource.data.name.size() <= 10;
      allow update: if request.auth.uid == userId
                    && request.resource.data.diff(resource.data).affectedKeys().hasOnly(['name']);
      allow delete: if request.auth.uid == userId && resource.data.name == 'deletable';
    }
    match /posts/{postId} {
      allow get: if resource.data.public == true || resource.data.owner == request.auth.uid;
      allow list: if request.query.limit <= 5 && resource.data.public == true;
      allow create: if request.resource.data.owner == request.auth.uid;
      allow update: if resource.data.owner == request.auth.uid && request.resource.data.edited == request.time;
    }
    match /mine/{id} {
      allow list: if resource.data.owner == request.auth.uid;
    }
  }
}
"""

OWNER_DATA = {
    "users/alice": {"name": "Alice"},
    "users/bob": {"name": "Bob"},
    "users/dan": {"name": "deletable"},
    "posts/p1": {"owner": "alice", "public": True, "n": 1},
    "posts/p2": {"owner": "bob", "public": False, "n": 2},
    "posts/p3": {"owner": "bob", "public": True, "n": 3},
    "mine/m1": {"owner": "alice"},
    "mine/m2": {"owner": "bob"},
}

OWNER_REQUESTS = [
    ("alice", ("get", "users/alice")),
    ("alice", ("get", "users/bob")),
    (None, ("get", "users/alice")),
    ("carol", ("get", "users/carol")),
    ("alice", ("get", "users/carol")),
    ("alice", ("get", "posts/p1")),
    ("alice", ("get", "posts/p2")),
    ("bob", ("get", "posts/p2")),
    (None, ("get", "posts/p3")),
    ("carol", ("commit", [("create", "users/carol", {"name": "Carol", "age": 30})])),
    ("erin", ("commit", [("create", "users/erin", {"name": "Erin", "role": "admin"})])),
    ("fay", ("commit", [("create", "users/fay", {"name": "a name that is too long"})])),
    ("gus", ("commit", [("create", "users/gus", {"name": 7})])),
    ("alice", ("commit", [("create", "users/hal", {"name": "Hal"})])),
    ("alice", ("commit", [("create", "users/bob", {"name": "x"})])),
    ("bob", ("commit", [("create", "users/bob", {"name": "x"})])),
    ("alice", ("commit", [("update", "users/alice", {"name": "Al"})])),
    ("alice", ("commit", [("update", "users/alice", {"age": 3})])),
    ("alice", ("commit", [("update", "users/bob", {"name": "x"})])),
    ("alice", ("commit", [("update", "users/zed", {"name": "x"})])),
    ("alice", ("commit", [("set", "users/alice", {"name": "Al", "age": 1})])),
    ("alice", ("commit", [("delete", "users/alice")])),
    ("dan", ("commit", [("delete", "users/dan")])),
    ("alice", ("commit", [("delete", "users/nobody")])),
    ("alice", ("commit", [("create", "users/alice2", {"name": "A"}), ("create", "users/ivy", {"name": "I"})])),
    ("ivy", ("commit", [("create", "users/ivy", {"name": "I"}), ("update", "users/ivy", {"name": "J"})])),
    ("alice", ("commit", [("create", "posts/p9", {"owner": "alice"})])),
    ("alice", ("commit", [("create", "posts/p10", {"owner": "bob"})])),
    ("alice", ("commit", [("stamp", "posts/p1", None, ["edited"])])),
    ("alice", ("commit", [("update", "posts/p1", {"edited": 5})])),
    ("bob", ("commit", [("stamp", "posts/p1", None, ["edited"])])),
    ("alice", ("query", "posts", [("public", "EQUAL", True)], {"limit": 5})),
    ("alice", ("query", "posts", [("public", "EQUAL", True)], {"limit": 6})),
    ("alice", ("query", "posts", [("public", "EQUAL", True)], {})),
    ("alice", ("query", "posts", [], {"limit": 5})),
    ("alice", ("query", "posts", [("public", "EQUAL", False)], {"limit": 5})),
    ("alice", ("query", "posts", [("public", "EQUAL", True), ("n", "GREATER_THAN", 1)], {"limit": 2})),
    ("alice", ("query", "mine", [("owner", "EQUAL", "alice")], {})),
    ("alice", ("query", "mine", [("owner", "EQUAL", "bob")], {})),
    ("alice", ("query", "mine", [], {})),
    (None, ("query", "mine", [("owner", "EQUAL", "alice")], {})),
    ("alice", ("query", "mine", [("owner", "IN", ["alice"])], {})),
    ("alice", ("query", "mine", [("owner", "IN", ["alice", "bob"])], {})),
]

ROLE_RULES = """rules_version = '2';
service cloud.firestore {
  match /databases/{database}/documents {
    function member(org) {
      return get(/databases/$(database)/documents/orgs/$(org)/members/$(request.auth.uid)).data;
    }
    match /orgs/{org}/docs/{d} {
      allow read: if member(org).role in ['reader', 'writer'];
      allow write: if member(org).role == 'writer';
    }
    match /orgs/{org}/members/{uid} {
      allow read: if request.auth.uid == uid;
    }
    match /games/{g} {
      allow create: if existsAfter(/databases/$(database)/documents/index/$(g))
                    && getAfter(/databases/$(database)/documents/index/$(g)).data.game == g;
    }
    match /index/{g} {
      allow create: if request.auth != null;
    }
    match /staff/{doc} {
      allow read: if request.auth.token.admin == true;
      allow write: if request.auth.token.email_verified == true && request.auth.token.email.matches('.*@example[.]com');
    }
  }
}
"""

ROLE_DATA = {
    "orgs/acme/members/rita": {"role": "reader"},
    "orgs/acme/members/will": {"role": "writer"},
    "orgs/acme/docs/d1": {"title": "plan"},
    "staff/s1": {"x": 1},
}

ROLE_REQUESTS = [
    ("rita", ("get", "orgs/acme/docs/d1")),
    ("will", ("get", "orgs/acme/docs/d1")),
    ("zoe", ("get", "orgs/acme/docs/d1")),
    (None, ("get", "orgs/acme/docs/d1")),
    ("rita", ("commit", [("set", "orgs/acme/docs/d2", {"title": "x"})])),
    ("will", ("commit", [("set", "orgs/acme/docs/d2", {"title": "x"})])),
    ("rita", ("get", "orgs/acme/members/rita")),
    ("rita", ("get", "orgs/acme/members/will")),
    ("rita", ("query", "docs", [], {})),
    ("will", ("commit", [("create", "games/g1", {"n": 1}), ("create", "index/g1", {"game": "g1"})])),
    ("will", ("commit", [("create", "games/g2", {"n": 1})])),
    ("will", ("commit", [("create", "games/g3", {"n": 1}), ("create", "index/g3", {"game": "other"})])),
    (None, ("commit", [("create", "games/g4", {"n": 1}), ("create", "index/g4", {"game": "g4"})])),
    (("ann", {"admin": True}), ("get", "staff/s1")),
    (("ann", {"admin": False}), ("get", "staff/s1")),
    ("ann", ("get", "staff/s1")),
    (("ann", {"email": "ann@example.com", "email_verified": True}), ("commit", [("set", "staff/s2", {"a": 1})])),
    (("ann", {"email": "ann@example.com", "email_verified": False}), ("commit", [("set", "staff/s3", {"a": 1})])),
    (("ann", {"email": "ann@evil.com", "email_verified": True}), ("commit", [("set", "staff/s4", {"a": 1})])),
]

SUITES = {
    "owner": (OWNER_RULES, OWNER_DATA, OWNER_REQUESTS),
    "roles": (ROLE_RULES, ROLE_DATA, ROLE_REQUESTS),
}


def run_suite(side: Side, rules: str, data: dict, reqs: list) -> list[str]:
    r = side.put_rules(rules)
    assert r.status_code == 200, r.text
    side.seed(data)
    return [outcome(side.send(uid, req)) for uid, req in reqs]


@pytest.mark.parametrize("suite", sorted(SUITES))
def test_rules_decisions_match_the_emulator(suite, rest_base, oracle_rest_base):
    rules, data, reqs = SUITES[suite]
    project = f"demo-rules-{suite}-{int(time.time() * 1000) % 10**9}"
    ours = run_suite(Side(rest_base, project), rules, data, reqs)
    theirs = run_suite(Side(oracle_rest_base, project), rules, data, reqs)
    # The scenario must exercise both outcomes, or it proves nothing.
    assert "ok" in ours and "denied" in ours
    mismatches = [f"  {uid!r} {req!r}: hearth={o} emulator={t}"
                  for (uid, req), o, t in zip(reqs, ours, theirs) if o != t]
    assert not mismatches, "decisions differ from Google's emulator:\n" + "\n".join(mismatches)


def test_rules_endpoint_rejects_a_broken_file_and_keeps_the_rules(rest_base):
    side = Side(rest_base, f"demo-rules-broken-{int(time.time() * 1000) % 10**9}")
    assert side.put_rules(OWNER_RULES).status_code == 200
    side.seed({"users/bob": {"name": "Bob"}})
    broken = side.put_rules("service cloud.firestore { match /x { allow read: if foo(; } }")
    assert broken.status_code == 400
    assert broken.json()["error"]["status"] == "INVALID_ARGUMENT"
    if TARGET == "hearth":
        assert "firestore.rules:1:" in broken.json()["error"]["message"]
    assert outcome(side.send("alice", ("get", "users/bob"))) == "denied"
    assert outcome(side.send("bob", ("get", "users/bob"))) == "ok"


# ------------------------------------------------------------------------------------------
# Production mode with a rules file (Hearth only)
# ------------------------------------------------------------------------------------------

PROD_RULES = """rules_version = '2';
service cloud.firestore {
  match /databases/{database}/documents {
    match /public/{doc} { allow read: if true; }
  }
}
"""


@pytest.fixture
def production(tmp_path):
    if TARGET != "hearth":
        pytest.skip("production mode is a Hearth property")
    rules = tmp_path / "firestore.rules"
    rules.write_text(PROD_RULES)
    srv = HearthServer(os.environ["HEARTH_BIN"], tmp_path, emulator=False,
                       extra_args=("--firestore-rules", str(rules), "--admin-token", "adm1n"))
    srv.start()
    try:
        yield srv, rules
    finally:
        srv.stop()


@pytest.mark.hearth_only("production mode")
def test_production_rules_file_is_enforced_and_reloaded(production):
    srv, rules = production
    side = Side(srv.rest_base, "demo-hearth")
    admin = {"Authorization": "Bearer adm1n"}
    for path in ("public/a", "private/b"):
        r = side.session.patch(side.url("/" + path), json={"fields": {"v": value(1)}}, headers=admin, timeout=HTTP_TIMEOUT)
        assert r.status_code == 200, r.text
    assert outcome(side.send(None, ("get", "public/a"))) == "ok"
    assert outcome(side.send(None, ("get", "private/b"))) == "denied"
    assert outcome(side.send(None, ("commit", [("set", "public/a", {"v": 2})]))) == "denied"
    # Unsigned tokens are an emulator convenience: production answers 401.
    unsigned = side.send("alice", ("get", "public/a"))
    assert unsigned.status_code == 401 and unsigned.json()["error"]["status"] == "UNAUTHENTICATED"
    # A broken edit is ignored; the previous rules stay in force.
    rules.write_text("service cloud.firestore { match /x { allow read: if foo(; } }")
    deadline = time.monotonic() + 30
    while "not reloaded" not in srv.output():
        assert time.monotonic() < deadline, "the broken edit was not reported:\n" + srv.output()
        time.sleep(0.1)
    assert "firestore.rules:1:" in srv.output()
    assert outcome(side.send(None, ("get", "public/a"))) == "ok"
    # A good edit takes effect without a restart.
    rules.write_text(PROD_RULES.replace("match /public/{doc} { allow read: if true; }",
                                        "match /private/{doc} { allow read: if true; }"))
    deadline = time.monotonic() + 30
    while outcome(side.send(None, ("get", "private/b"))) != "ok":
        assert time.monotonic() < deadline, "the edited rules file was not reloaded:\n" + srv.output()
        time.sleep(0.1)
    assert outcome(side.send(None, ("get", "public/a"))) == "denied"
    # The admin credential bypasses rules.
    assert side.session.get(side.url("/public/a"), headers=admin, timeout=HTTP_TIMEOUT).status_code == 200
