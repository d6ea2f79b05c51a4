"""The Realtime Database's WebSocket protocol (v5, what the Firebase Apple/Android/JS SDKs speak), through
a raw protocol client: the hello, keepalives, frame splitting both ways, listens with and without
queries (tags), put/merge acknowledgements after the pushes they cause, transactions' hash
compare-and-set (`datastale`), onDisconnect operations run when the socket drops, auth with ID tokens and
the admin credential against rules, listens revoked (`c`) and auth expiry (`ac`), and bad input."""

from __future__ import annotations

import base64
import hashlib
import json
import struct
import time

import pytest
import websocket

from dbutil import DatabaseRest, unique

pytestmark = pytest.mark.hearth_only(reason="the Realtime Database is served by Hearth, not by the Firestore emulator")

FRAME = 16384


def unsigned_token(uid: str, lifetime_s: int = 3600) -> str:
    enc = lambda obj: base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()
    now = int(time.time())
    payload = {"sub": uid, "user_id": uid, "iat": now, "exp": now + lifetime_s, "aud": "demo-hearth",
               "iss": "https://securetoken.google.com/demo-hearth", "firebase": {"sign_in_provider": "anonymous"}}
    return f"{enc({'alg': 'none', 'typ': 'JWT'})}.{enc(payload)}."


def sdk_hash(value) -> str:
    """The SDKs' hash of a value without priorities (SHA-1 of the hash text, base64)."""
    def text(v) -> str:
        if v is None:
            return ""
        if isinstance(v, bool):
            return "boolean:" + ("true" if v else "false")
        if isinstance(v, (int, float)):
            return "number:" + struct.pack(">d", float(v)).hex()
        if isinstance(v, str):
            return "string:" + v
        def key_order(k):
            try:
                n = int(k)
                if str(n) == k and -2**31 <= n < 2**31:
                    return (0, n, "")
            except ValueError:
                pass
            return (1, 0, k)
        out = ""
        for k in sorted(v, key=key_order):
            h = sdk_hash(v[k])
            if h:
                out += ":" + k + ":" + h
        return out
    t = text(value)
    return "" if t == "" else base64.b64encode(hashlib.sha1(t.encode()).digest()).decode()


class Socket:
    """One raw protocol connection: requests answered in order, pushes collected as they come."""

    def __init__(self, srv, ns: str = "conformance", query: str | None = None, host: str | None = None):
        self.port = srv.ports["database"]
        q = query if query is not None else f"v=5&ns={ns}"
        self.ws = websocket.create_connection(f"ws://127.0.0.1:{self.port}/.ws?{q}", timeout=10, host=host)
        self.hello = self.recv()
        self.r = 0
        self.pushes: list[dict] = []

    def recv(self):
        frame = self.ws.recv()
        if len(frame) <= 6 and frame.isdigit():
            frame = "".join(self.ws.recv() for _ in range(int(frame)))
        return json.loads(frame)

    def send(self, message: dict) -> None:
        text = json.dumps(message, separators=(",", ":"))
        if len(text) <= FRAME:
            self.ws.send(text)
            return
        pieces = [text[i:i + FRAME] for i in range(0, len(text), FRAME)]
        self.ws.send(str(len(pieces)))
        for piece in pieces:
            self.ws.send(piece)

    def request(self, action: str, body: dict) -> dict:
        """Sends a request; returns its answer body `{"s": …, "d": …}`; pushes before it are kept."""
        self.r += 1
        r = self.r
        self.send({"t": "d", "d": {"r": r, "a": action, "b": body}})
        while True:
            m = self.recv()
            if m["t"] == "d" and m["d"].get("r") == r:
                return m["d"]["b"]
            assert m["t"] == "d" and "a" in m["d"], m
            self.pushes.append(m["d"])

    def push(self) -> dict:
        if self.pushes:
            return self.pushes.pop(0)
        m = self.recv()
        assert m["t"] == "d" and "a" in m["d"], m
        return m["d"]

    def no_push_within(self, seconds: float) -> None:
        assert not self.pushes, self.pushes
        self.ws.settimeout(seconds)
        try:
            with pytest.raises(websocket.WebSocketTimeoutException):
                self.recv()
        finally:
            self.ws.settimeout(10)

    def close(self) -> None:
        self.ws.close()


@pytest.fixture(scope="module")
def db(server):
    r = DatabaseRest(server)
    yield r
    r.session.close()


@pytest.fixture
def admin(server):
    s = Socket(server)
    assert s.request("gauth", {"cred": "owner"})["s"] == "ok"
    yield s
    s.close()


def rules_namespace(server, rules: dict) -> tuple[str, DatabaseRest]:
    ns = unique("ws")
    rest = DatabaseRest(server, ns=ns)
    r = rest.request("PUT", "/.settings/rules.json", data=json.dumps({"rules": rules}))
    assert r.status_code == 200, r.text
    return ns, rest


# MARK: connection


def test_hello_then_stats_and_keepalive(server):
    before = int(time.time() * 1000)
    s = Socket(server)
    try:
        assert s.hello["t"] == "c" and s.hello["d"]["t"] == "h"
        hello = s.hello["d"]["d"]
        assert isinstance(hello["ts"], int) and before - 1000 <= hello["ts"] <= int(time.time() * 1000) + 1000
        assert hello["v"] == "5"
        assert hello["h"] == f"127.0.0.1:{s.port}"
        assert isinstance(hello["s"], str) and len(hello["s"]) >= 16
        assert s.request("s", {"c": {"sdk.js.12-1-0": 1}}) == {"s": "ok", "d": ""}
        s.ws.send("0")  # keepalive: no answer, the connection goes on
        s.send({"t": "c", "d": {"t": "p", "d": {}}})  # the JS SDK's health ping
        assert s.recv() == {"t": "c", "d": {"t": "o", "d": {}}}
        assert s.request("s", {"c": {}})["s"] == "ok"
    finally:
        s.close()


def test_the_namespace_comes_from_ns_or_the_host(server):
    ns = unique("host")
    DatabaseRest(server, ns=ns).put("/where.json", "by-host")
    s = Socket(server, query="v=5", host=f"{ns}.localhost:{server.ports['database']}")
    try:
        s.request("gauth", {"cred": "owner"})
        assert s.request("g", {"p": "/where", "q": {}}) == {"s": "ok", "d": "by-host"}
    finally:
        s.close()
    s = Socket(server, ns=ns)
    try:
        s.request("gauth", {"cred": "owner"})
        assert s.request("g", {"p": "where"}) == {"s": "ok", "d": "by-host"}  # Android sends no leading slash
    finally:
        s.close()


# MARK: listens


def test_listen_sends_the_data_then_ok_then_changes_in_commit_order(db, admin):
    p = unique()
    db.put(f"/{p}.json", {"a": 1})
    assert admin.request("q", {"p": f"/{p}", "h": ""}) == {"s": "ok", "d": {}}
    assert admin.push() == {"a": "d", "b": {"p": p, "d": {"a": 1}}}
    for i in range(20):
        db.put(f"/{p}/seq.json", i)
    assert [admin.push() for _ in range(20)] == [{"a": "d", "b": {"p": f"{p}/seq", "d": i}} for i in range(20)]
    db.patch(f"/{p}.json", {"a": 2, "b/c": "deep", "seq": None})
    assert admin.push() == {"a": "m", "b": {"p": p, "d": {"a": 2, "b/c": "deep", "seq": None}}}
    db.put(f"/{unique()}.json", "elsewhere")  # not under the location: nothing
    db.put(f"/{p}.json", None)
    assert admin.push() == {"a": "d", "b": {"p": p, "d": None}}
    # Unlisten: no more pushes.
    assert admin.request("n", {"p": f"/{p}"})["s"] == "ok"
    db.put(f"/{p}/after.json", 1)
    admin.no_push_within(0.5)


def test_a_write_above_the_listen_is_the_new_value_of_the_location(db, admin):
    p = unique()
    admin.request("q", {"p": f"/{p}/x/y", "h": ""})
    assert admin.push() == {"a": "d", "b": {"p": f"{p}/x/y", "d": None}}
    db.put(f"/{p}.json", {"x": {"y": {"z": 1}, "other": 2}})
    assert admin.push() == {"a": "d", "b": {"p": f"{p}/x/y", "d": {"z": 1}}}


def test_query_listens_carry_their_tag_and_follow_the_window(db, admin):
    p = unique()
    db.put(f"/{p}.json", {"a": {"x": 3}, "b": {"x": 1}, "c": {"x": 2}, "d": {"x": 9}})
    q = {"i": "x", "l": 2, "vf": "l"}
    # no `.indexOn` covers "x": served by scanning, with Firebase's warning
    assert admin.request("q", {"p": f"/{p}", "q": q, "t": 7, "h": ""}) == {"s": "ok", "d": {"w": ["no_index"]}}
    assert admin.push() == {"a": "d", "b": {"p": p, "d": {"b": {"x": 1}, "c": {"x": 2}}, "t": 7}}
    db.put(f"/{p}/e.json", {"x": 0})  # enters the window, c leaves it
    assert admin.push() == {"a": "d", "b": {"p": p, "d": {"b": {"x": 1}, "e": {"x": 0}}, "t": 7}}
    db.put(f"/{p}/d/x.json", 10)  # outside the window: no push
    db.put(f"/{p}/b/x.json", 5)  # b leaves, c comes back
    assert admin.push() == {"a": "d", "b": {"p": p, "d": {"c": {"x": 2}, "e": {"x": 0}}, "t": 7}}
    # startAt/endAt with a key tie-break, limitToLast.
    r = admin.request("q", {"p": f"/{p}", "q": {"i": "x", "sp": 2, "sn": "c", "ep": 10, "l": 2, "vf": "r"}, "t": 8})
    assert r["s"] == "ok"
    assert admin.push() == {"a": "d", "b": {"p": p, "d": {"b": {"x": 5}, "d": {"x": 10}}, "t": 8}}
    # A one-shot get with a query.
    assert admin.request("g", {"p": f"/{p}", "q": {"i": ".key", "sp": "d"}}) == {"s": "ok", "d": {"d": {"x": 10}, "e": {"x": 0}}}
    bad = admin.request("q", {"p": f"/{p}", "q": {"l": 0}, "t": 9})
    assert bad["s"] == "failure"


def test_indexed_query_listens_carry_no_warning(server):
    ns, rest = rules_namespace(server, {".read": True, ".write": True, "scores": {".indexOn": ["points"]}})
    rest.put("/scores.json", {"a": {"points": 3}, "b": {"points": 1}})
    s = Socket(server, ns=ns)
    try:
        assert s.request("q", {"p": "/scores", "q": {"i": "points", "l": 1, "vf": "l"}, "t": 1, "h": ""}) == {"s": "ok", "d": {}}
        assert s.push()["b"]["d"] == {"b": {"points": 1}}
        assert s.request("q", {"p": "/scores", "q": {"i": "other", "l": 1, "vf": "l"}, "t": 2, "h": ""}) == {"s": "ok", "d": {"w": ["no_index"]}}
        assert s.request("q", {"p": "/scores", "q": {"i": ".key", "l": 1, "vf": "l"}, "t": 3, "h": ""}) == {"s": "ok", "d": {}}
    finally:
        s.close()


# MARK: writes


def test_put_and_merge_are_acknowledged_after_the_pushes_they_cause(db, admin):
    p = unique()
    admin.request("q", {"p": f"/{p}", "h": ""})
    assert admin.push()["b"]["d"] is None
    assert admin.request("p", {"p": f"/{p}/a", "d": {"v": 1, "at": {".sv": "timestamp"}}}) == {"s": "ok", "d": ""}
    pushed = admin.pushes.pop(0)  # arrived before the ack
    assert pushed["a"] == "d" and pushed["b"]["p"] == f"{p}/a" and pushed["b"]["d"]["v"] == 1
    assert abs(pushed["b"]["d"]["at"] - time.time() * 1000) < 60_000
    assert admin.request("m", {"p": f"/{p}", "d": {"a/v": 2, "b": "x", "n": {".sv": {"increment": 3}}}}) == {"s": "ok", "d": ""}
    assert admin.pushes.pop(0) == {"a": "m", "b": {"p": p, "d": {"a/v": 2, "b": "x", "n": 3}}}
    assert db.get(f"/{p}.json").json() == {"a": {"v": 2, "at": pushed["b"]["d"]["at"]}, "b": "x", "n": 3}
    assert admin.request("p", {"p": f"/{p}", "d": None})["s"] == "ok"
    assert db.get(f"/{p}.json").json() is None


def test_hash_compare_and_set_and_datastale(db, admin):
    p = unique()
    db.put(f"/{p}.json", {"count": 1, "name": "x"})
    current = {"count": 1, "name": "x"}
    r = admin.request("p", {"p": f"/{p}", "d": {"count": 2, "name": "x"}, "h": sdk_hash(current)})
    assert r == {"s": "ok", "d": ""}
    assert db.get(f"/{p}.json").json() == {"count": 2, "name": "x"}
    # The client's cache is stale (it still thinks count is 1): refused, nothing written.
    r = admin.request("p", {"p": f"/{p}", "d": {"count": 99}, "h": sdk_hash(current)})
    assert r["s"] == "datastale"
    assert db.get(f"/{p}.json").json() == {"count": 2, "name": "x"}
    # An empty location hashes to "".
    q = unique()
    assert admin.request("p", {"p": f"/{q}", "d": 5, "h": ""})["s"] == "ok"
    assert admin.request("p", {"p": f"/{q}", "d": 6, "h": ""})["s"] == "datastale"
    assert admin.request("p", {"p": f"/{q}", "d": 6, "h": sdk_hash(5)})["s"] == "ok"
    assert db.get(f"/{q}.json").json() == 6


def test_large_messages_are_split_both_ways(db, admin):
    p = unique()
    big = {f"k{i}": "v" * 100 + str(i) for i in range(600)}  # ~66 KB: several frames each way
    assert admin.request("p", {"p": f"/{p}", "d": big})["s"] == "ok"
    assert db.get(f"/{p}.json").json() == big
    r = admin.request("g", {"p": f"/{p}"})
    assert r == {"s": "ok", "d": big}


# MARK: onDisconnect


def test_on_disconnect_operations_run_when_the_socket_drops(server, db):
    p = unique()
    db.put(f"/{p}.json", {"status": "online", "keep": 1, "gone": {"x": 1}})
    watcher = Socket(server)
    watcher.request("gauth", {"cred": "owner"})
    watcher.request("q", {"p": f"/{p}", "h": ""})
    assert watcher.push()["b"]["d"] == {"status": "online", "keep": 1, "gone": {"x": 1}}
    client = Socket(server)
    try:
        client.request("gauth", {"cred": "owner"})
        assert client.request("o", {"p": f"/{p}/status", "d": "offline"}) == {"s": "ok", "d": ""}
        assert client.request("om", {"p": f"/{p}", "d": {"last": {".sv": "timestamp"}, "gone": None}})["s"] == "ok"
        assert client.request("o", {"p": f"/{p}/keep/deeper", "d": "never"})["s"] == "ok"
        assert client.request("oc", {"p": f"/{p}/keep", "d": None})["s"] == "ok"  # cancels at and below
        # Nothing runs while the socket is open.
        assert db.get(f"/{p}/status.json").json() == "online"
    finally:
        client.close()
    assert watcher.push() == {"a": "d", "b": {"p": f"{p}/status", "d": "offline"}}
    merged = watcher.push()
    assert merged["a"] == "m" and merged["b"]["d"]["gone"] is None and isinstance(merged["b"]["d"]["last"], int)
    final = db.get(f"/{p}.json").json()
    assert final["status"] == "offline" and final["keep"] == 1 and "gone" not in final
    watcher.close()


def test_on_disconnect_is_checked_by_the_rules_when_registered(server):
    ns, rest = rules_namespace(server, {"public": {".read": True, ".write": True}, "locked": {".read": True, ".write": False}})
    s = Socket(server, ns=ns)
    try:
        assert s.request("o", {"p": "/locked/x", "d": 1}) == {"s": "permission_denied", "d": "Permission denied"}
        assert s.request("o", {"p": "/public/x", "d": 1})["s"] == "ok"
        assert s.request("o", {"p": "/public/bad.key", "d": 1})["s"] == "failure"
    finally:
        s.close()
    deadline = time.time() + 10
    while rest.get("/public/x.json").json() != 1 and time.time() < deadline:
        time.sleep(0.05)
    assert rest.get("/public/x.json").json() == 1
    assert rest.get("/locked.json").json() is None


# MARK: auth and rules


RULES = {
    "users": {"$uid": {".read": "auth != null && auth.uid == $uid", ".write": "auth != null && auth.uid == $uid"}},
    "open": {".read": True},
}


def test_auth_with_id_tokens_against_rules(server):
    ns, rest = rules_namespace(server, RULES)
    rest.put("/users/alice.json", {"n": 1})
    s = Socket(server, ns=ns)
    try:
        assert s.request("q", {"p": "/users/alice", "h": ""}) == {"s": "permission_denied", "d": "Permission denied"}
        assert s.request("p", {"p": "/users/alice/n", "d": 2})["s"] == "permission_denied"
        r = s.request("auth", {"cred": unsigned_token("alice")})
        assert r["s"] == "ok" and r["d"]["auth"]["uid"] == "alice" and isinstance(r["d"]["expires"], int)
        assert s.request("p", {"p": "/users/alice/n", "d": 2}) == {"s": "ok", "d": ""}
        assert s.request("p", {"p": "/users/bob/n", "d": 2})["s"] == "permission_denied"
        assert s.request("q", {"p": "/users/alice", "h": ""}) == {"s": "ok", "d": {}}
        assert s.pushes.pop(0) == {"a": "d", "b": {"p": "users/alice", "d": {"n": 2}}}
        assert rest.get("/users.json").json() == {"alice": {"n": 2}}
        # A bad or expired token is refused with the SDKs' statuses.
        assert s.request("auth", {"cred": "not-a-token"})["s"] == "invalid_token"
        assert s.request("auth", {"cred": unsigned_token("alice", lifetime_s=-10)})["s"] == "expired_token"
    finally:
        s.close()


def test_changing_auth_revokes_listens_the_rules_no_longer_allow(server):
    ns, rest = rules_namespace(server, RULES)
    rest.put("/users/alice.json", {"n": 1})
    rest.put("/open.json", "yes")
    s = Socket(server, ns=ns)
    try:
        s.request("auth", {"cred": unsigned_token("alice")})
        assert s.request("q", {"p": "/users/alice", "h": ""})["s"] == "ok"
        assert s.request("q", {"p": "/open", "h": ""})["s"] == "ok"
        s.pushes.clear()
        assert s.request("auth", {"cred": unsigned_token("bob")})["s"] == "ok"
        assert s.pushes.pop(0) == {"a": "c", "b": {"p": "users/alice"}}
        rest.put("/users/alice/n.json", 5)  # revoked: not sent
        rest.put("/open.json", "still")
        assert s.push() == {"a": "d", "b": {"p": "open", "d": "still"}}
        # unauth is answered and revokes too.
        s.request("auth", {"cred": unsigned_token("alice")})
        assert s.request("q", {"p": "/users/alice", "h": ""})["s"] == "ok"
        s.pushes.clear()
        assert s.request("unauth", {}) == {"s": "ok", "d": "unauthenticated"}
        assert s.pushes == [{"a": "c", "b": {"p": "users/alice"}}]
    finally:
        s.close()


def test_new_rules_revoke_listens_and_tagged_revocations_name_their_query(server):
    ns, rest = rules_namespace(server, {".read": True})
    rest.put("/room.json", {"a": {"x": 1}})
    s = Socket(server, ns=ns)
    try:
        q = {"i": "x", "l": 1, "vf": "l"}
        assert s.request("q", {"p": "/room", "q": q, "t": 3, "h": ""})["s"] == "ok"
        s.pushes.clear()
        rest.request("PUT", "/.settings/rules.json", data=json.dumps({"rules": {".read": False}}))
        assert s.push() == {"a": "c", "b": {"p": "room", "q": [q]}}
    finally:
        s.close()


def test_an_expiring_token_is_revoked_with_ac(server):
    ns, rest = rules_namespace(server, RULES)
    s = Socket(server, ns=ns)
    try:
        assert s.request("auth", {"cred": unsigned_token("alice", lifetime_s=2)})["s"] == "ok"
        assert s.request("q", {"p": "/users/alice", "h": ""})["s"] == "ok"
        s.pushes.clear()
        s.ws.settimeout(10)
        assert s.push() == {"a": "ac", "b": {"s": "expired_token", "d": "Auth token is expired."}}
        assert s.push() == {"a": "c", "b": {"p": "users/alice"}}
        assert s.request("p", {"p": "/users/alice/n", "d": 1})["s"] == "permission_denied"
    finally:
        s.close()


def test_admin_credential_bypasses_rules_and_auth_variable_override_is_judged(server):
    ns, rest = rules_namespace(server, RULES)
    s = Socket(server, ns=ns)
    try:
        assert s.request("gauth", {"cred": "owner"})["s"] == "ok"
        assert s.request("p", {"p": "/anywhere", "d": 1})["s"] == "ok"
        r = s.request("auth", {"cred": "owner", "authvar": {"uid": "carol"}})
        assert r["s"] == "ok"
        assert s.request("p", {"p": "/users/carol/n", "d": 1})["s"] == "ok"
        assert s.request("p", {"p": "/users/dave/n", "d": 1})["s"] == "permission_denied"
    finally:
        s.close()
    assert rest.get("/anywhere.json").json() == 1


def test_app_check_tokens_are_accepted(server):
    s = Socket(server)
    try:
        assert s.request("appcheck", {"token": "eyJlcnJvciI6IlVOS05PV05fRVJST1IifQ=="})["s"] in ("ok", "invalid_token")
        assert s.request("unappeck", {})["s"] == "ok"
        assert s.request("appcheck", {})["s"] == "invalid_token"
    finally:
        s.close()


# MARK: bad input


def test_bad_requests_get_an_error_status_and_the_connection_goes_on(db, admin):
    p = unique()
    assert admin.request("zz", {})["s"] == "failure"
    assert admin.request("p", {"p": "/a.b", "d": 1})["s"] == "failure"
    assert admin.request("p", {"p": "/" + "/".join(["k"] * 40), "d": 1})["s"] == "failure"
    assert admin.request("p", {"d": 1})["s"] == "failure"
    assert admin.request("p", {"p": f"/{p}"})["s"] == "failure"
    assert admin.request("m", {"p": f"/{p}", "d": [1, 2]})["s"] == "failure"
    assert admin.request("q", {"p": f"/{p}", "q": {"zz": 1}, "t": 1})["s"] == "failure"
    # A merge with one invalid entry writes nothing.
    r = admin.request("m", {"p": f"/{p}", "d": {"ok": 1, "bad$key": 2}})
    assert r["s"] == "failure"
    assert admin.request("p", {"p": f"/{p}/x", "d": {"a": 1, "b": {"c$": 2}}})["s"] == "failure"
    assert db.get(f"/{p}.json").json() is None
    assert admin.request("n", {"p": f"/{p}/never-listened"})["s"] == "ok"
    assert admin.request("oc", {"p": f"/{p}/nothing"})["s"] == "ok"
    assert admin.request("s", {})["s"] == "ok"


@pytest.mark.parametrize("frame", ["not json", "[1,2]", '{"t":"x","d":{}}', '{"t":"d","d":{"a":"p"}}', '{"t":"d","d":{"r":1,"a":"p","b":5}}'])
def test_protocol_errors_close_the_connection_and_the_server_is_unharmed(server, db, frame):
    s = Socket(server)
    s.ws.send(frame)
    m = s.recv()
    assert m["t"] == "c" and m["d"]["t"] == "e" and isinstance(m["d"]["d"], str)
    # Then the close frame: websocket-client answers recv() with "" once the server closed.
    try:
        assert s.ws.recv() == ""
    except websocket.WebSocketConnectionClosedException:
        pass
    s.close()
    again = Socket(server)
    try:
        assert again.request("s", {})["s"] == "ok"
    finally:
        again.close()


def test_an_announced_oversized_message_closes_the_connection(server):
    s = Socket(server)
    s.ws.send("999999")
    m = s.recv()
    assert m["d"]["t"] == "e"
    s.close()


def test_other_paths_and_methods_are_not_upgraded(server):
    with pytest.raises(websocket.WebSocketBadStatusException):
        websocket.create_connection(f"ws://127.0.0.1:{server.ports['database']}/other?v=5", timeout=5)


def test_out_of_order_requests_are_answered_with_their_own_numbers(db, admin):
    p = unique()
    # Android counts from 0, others from 1; numbers are echoed whatever their order.
    for r, value in ((10, "a"), (3, "b"), (0, "c")):
        admin.send({"t": "d", "d": {"r": r, "a": "p", "b": {"p": f"/{p}", "d": value}}})
        m = admin.recv()
        assert m == {"t": "d", "d": {"r": r, "b": {"s": "ok", "d": ""}}}
    assert db.get(f"/{p}.json").json() == "c"
    # Unlisten of a tagged query names it; afterwards the query gets no pushes.
    q = {"i": ".key", "l": 1, "vf": "r"}
    assert admin.request("q", {"p": f"/{p}2", "q": q, "t": 4, "h": ""})["s"] == "ok"
    assert admin.pushes.pop(0) == {"a": "d", "b": {"p": f"{p}2", "d": None, "t": 4}}
    assert admin.request("n", {"p": f"/{p}2", "q": q, "t": 4})["s"] == "ok"
    db.put(f"/{p}2/k.json", 1)
    admin.no_push_within(0.5)


def test_a_write_over_the_sdk_limit_is_too_big_and_nothing_is_written(db, admin):
    p = unique()
    r = admin.request("p", {"p": f"/{p}", "d": "x" * (16 * 1024 * 1024 + 1000)})
    assert r["s"] == "too_big"
    assert db.get(f"/{p}.json").json() is None
    assert admin.request("p", {"p": f"/{p}", "d": "small"})["s"] == "ok"


def test_a_refreshed_token_replaces_the_expiring_one_and_a_shorter_one_is_honoured(server):
    ns, rest = rules_namespace(server, RULES)
    s = Socket(server, ns=ns)
    try:
        # Refreshed before it expires (as the SDKs do): no `ac` when the first token's time comes.
        assert s.request("auth", {"cred": unsigned_token("alice", lifetime_s=2)})["s"] == "ok"
        assert s.request("auth", {"cred": unsigned_token("alice", lifetime_s=3600)})["s"] == "ok"
        time.sleep(2.5)
        assert s.request("p", {"p": "/users/alice/n", "d": 1})["s"] == "ok"
        assert not s.pushes
        # A token that expires sooner than the pending timer still ends on time.
        assert s.request("auth", {"cred": unsigned_token("alice", lifetime_s=2)})["s"] == "ok"
        s.ws.settimeout(10)
        assert s.push() == {"a": "ac", "b": {"s": "expired_token", "d": "Auth token is expired."}}
    finally:
        s.close()
