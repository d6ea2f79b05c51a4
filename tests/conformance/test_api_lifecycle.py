"""The lifecycle worker (docs/app-backend.md) on a data set of thousands of documents: cascade
deletes (storage prefix, subcollections, document) when a condition holds, TTL, age-based storage
expiry; `hearth lifecycle plan` as a dry run; a SIGKILL in the middle of a sweep, after which the
restarted worker finishes the job and touches nothing live."""

from __future__ import annotations

import json
import subprocess
import time
from urllib.parse import quote

import pytest
import requests

from apiutil import ADMIN_TOKEN, start_api_server
from authutil import V1, AuthRest, hearth_binary
from conftest import PROJECT

pytestmark = pytest.mark.hearth_only(reason="the lifecycle worker is Hearth's")

EXPIRED, DEAD, LIVE = 2000, 400, 400
WITH_CHAT = 300          # bottles (of each kind) with a chat subcollection document
WITH_MEDIA = 40          # bottles (of each kind) with storage objects under bottles/{id}/
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
PAST, FUTURE = "2020-01-01T00:00:00Z", "2100-01-01T00:00:00Z"
RULES = {
    "intervalSeconds": 1, "batchSize": 200,
    "rules": [
        {"cascade": "bottles/{bottleId}",
         "when": [{"field": "expiresAt", "op": "<", "value": "now"}, {"field": "status", "op": "==", "value": "dead"}],
         "storagePrefixes": ["bottles/{bottleId}/"]},
        {"ttl": "sessions/{sessionId}", "field": "expireAt"},
        {"storageAge": "tmp/", "maxAgeSeconds": 1},
        {"onAccountDeletion": "users/{uid}", "documents": ["users/{uid}"], "storage": ["users/{uid}/avatar.png", "users/{uid}/private/"]},
    ],
}


def docs_url(srv):
    return f"{srv.rest_base}/v1/projects/{PROJECT}/databases/(default)/documents"


def commit(srv, writes):
    for start in range(0, len(writes), 500):
        r = requests.post(f"{docs_url(srv)}:commit", json={"writes": writes[start:start + 500]}, headers=ADMIN, timeout=60)
        assert r.status_code == 200, r.text


def count(srv, collection, parent=""):
    body = {"structuredAggregationQuery": {"structuredQuery": {"from": [{"collectionId": collection}]},
                                           "aggregations": [{"alias": "n", "count": {}}]}}
    r = requests.post(f"{docs_url(srv)}{parent}:runAggregationQuery", json=body, headers=ADMIN, timeout=60)
    assert r.status_code == 200, r.text
    return int(r.json()[0]["result"]["aggregateFields"]["n"]["integerValue"])


def objects(srv, prefix):
    r = requests.get(f"{srv.storage_base}/storage/v1/b/{PROJECT}.appspot.com/o", params={"prefix": prefix, "maxResults": 1000},
                     headers=ADMIN, timeout=60)
    assert r.status_code == 200, r.text
    return [o["name"] for o in r.json().get("items", [])]


def put_object(srv, name, data=b"x"):
    r = requests.post(f"{srv.storage_base}/upload/storage/v1/b/{PROJECT}.appspot.com/o",
                      params={"uploadType": "media", "name": name}, data=data, headers={**ADMIN, "Content-Type": "image/jpeg"}, timeout=60)
    assert r.status_code == 200, r.text


def name(path):
    return f"projects/{PROJECT}/databases/(default)/documents/{path}"


def bottle(kind, i):
    return f"{kind}-{i:05d}"


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    s = start_api_server(tmp_path_factory, "api-lifecycle")
    rules = s.workdir / "lifecycle.json"
    rules.write_text(json.dumps(RULES))
    s.lifecycle_rules = rules
    writes = []
    for kind, n, expires, status in (("exp", EXPIRED, PAST, "live"), ("dead", DEAD, FUTURE, "dead"), ("live", LIVE, FUTURE, "live")):
        for i in range(n):
            fields = {"expiresAt": {"timestampValue": expires}, "status": {"stringValue": status}}
            writes.append({"update": {"name": name(f"bottles/{bottle(kind, i)}"), "fields": fields}})
            if i < WITH_CHAT:
                writes.append({"update": {"name": name(f"bottles/{bottle(kind, i)}/chat/m1"), "fields": {"text": {"stringValue": "hi"}}}})
    for i in range(50):
        writes.append({"update": {"name": name(f"sessions/old-{i}"), "fields": {"expireAt": {"timestampValue": PAST}}}})
        writes.append({"update": {"name": name(f"sessions/new-{i}"), "fields": {"expireAt": {"timestampValue": FUTURE}}}})
    commit(s, writes)
    for kind in ("exp", "dead", "live"):
        for i in range(WITH_MEDIA):
            put_object(s, f"bottles/{bottle(kind, i)}/content/message_image.jpg")
            put_object(s, f"bottles/{bottle(kind, i)}/chat/m1/audio.m4a")
    put_object(s, "tmp/old.bin")
    put_object(s, "keep/me.bin")
    yield s
    s.stop()


def test_plan_is_a_dry_run(srv):
    srv.stop()
    time.sleep(1.5)  # tmp/old.bin must be older than its rule's 1 second
    r = subprocess.run([hearth_binary(), "lifecycle", "plan", "--config", str(srv.lifecycle_rules), "--data-dir", str(srv.data_dir),
                        "--project", PROJECT], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[-1].startswith("would delete ")
    listed = set(lines[:-1])
    assert f"document bottles/{bottle('exp', 0)}" in listed and f"document bottles/{bottle('exp', 0)}/chat/m1" in listed
    assert f"object bottles/{bottle('exp', 0)}/content/message_image.jpg" in listed
    assert f"document bottles/{bottle('dead', 0)}" in listed
    assert "document sessions/old-0" in listed and "object tmp/old.bin" in listed
    assert not any("live-" in line or "sessions/new" in line or "keep/" in line for line in listed)
    srv.start()
    # Nothing was deleted.
    assert count(srv, "bottles") == EXPIRED + DEAD + LIVE
    assert len(objects(srv, "bottles/")) == 6 * WITH_MEDIA


def test_worker_sweeps_and_resumes_after_a_crash(srv):
    srv.extra_args += ["--lifecycle", str(srv.lifecycle_rules)]
    srv.stop()
    srv.start()
    # Let the sweep get going, then kill the process mid-sweep.
    deadline = time.monotonic() + 60
    while count(srv, "bottles") == EXPIRED + DEAD + LIVE and time.monotonic() < deadline:
        time.sleep(0.05)
    remaining = count(srv, "bottles")
    assert remaining < EXPIRED + DEAD + LIVE, "the worker did not start"
    assert remaining > LIVE, "the sweep finished before the crash"
    srv.crash_and_restart()
    deadline = time.monotonic() + 180
    while count(srv, "bottles") > LIVE and time.monotonic() < deadline:
        time.sleep(0.5)
    assert count(srv, "bottles") == LIVE
    # Live bottles keep everything; nothing of the expired or dead ones is left.
    r = requests.get(f"{docs_url(srv)}/bottles/{bottle('live', 0)}/chat/m1", headers=ADMIN, timeout=30)
    assert r.status_code == 200
    for kind in ("exp", "dead"):
        assert requests.get(f"{docs_url(srv)}/bottles/{bottle(kind, 0)}", headers=ADMIN, timeout=30).status_code == 404
        assert requests.get(f"{docs_url(srv)}/bottles/{bottle(kind, 0)}/chat/m1", headers=ADMIN, timeout=30).status_code == 404
    assert count(srv, "chat", parent=f"/bottles/{bottle('live', 1)}") == 1
    left = objects(srv, "bottles/")
    assert len(left) == 2 * WITH_MEDIA and all(n.startswith("bottles/live-") for n in left)
    deadline = time.monotonic() + 30
    while (count(srv, "sessions") > 50 or objects(srv, "tmp/")) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert count(srv, "sessions") == 50 and objects(srv, "tmp/") == [] and objects(srv, "keep/") == ["keep/me.bin"]
    assert "lifecycle deleted" in srv.output()


def test_account_deletion_removes_listed_paths(srv):
    """Runs after the sweep test (the worker is on): deleting an account removes its listed
    document (with subcollections) and objects; another user's stay."""
    rest = AuthRest(srv)
    gone, kept = (rest.sign_up(f"life-{i}-{time.time_ns()}@example.com", "secret-pass-1")["localId"] for i in range(2))
    writes = []
    for uid in (gone, kept):
        writes.append({"update": {"name": name(f"users/{uid}"), "fields": {"nick": {"stringValue": uid}}}})
        writes.append({"update": {"name": name(f"users/{uid}/settings/app"), "fields": {"dark": {"booleanValue": True}}}})
    commit(srv, writes)
    for uid in (gone, kept):
        put_object(srv, f"users/{uid}/avatar.png")
        put_object(srv, f"users/{uid}/private/notes.txt")
        put_object(srv, f"users/{uid}/public.txt")
    time.sleep(2)  # the worker sees both accounts alive: nothing goes
    assert requests.get(f"{docs_url(srv)}/users/{gone}", headers=ADMIN, timeout=30).status_code == 200
    r = rest.call(f"{V1}/accounts:delete", {"localId": gone}, admin=ADMIN_TOKEN)
    assert r.status_code == 200, r.text
    deadline = time.monotonic() + 30
    while requests.get(f"{docs_url(srv)}/users/{gone}", headers=ADMIN, timeout=30).status_code != 404 and time.monotonic() < deadline:
        time.sleep(0.25)
    assert requests.get(f"{docs_url(srv)}/users/{gone}", headers=ADMIN, timeout=30).status_code == 404
    assert requests.get(f"{docs_url(srv)}/users/{gone}/settings/app", headers=ADMIN, timeout=30).status_code == 404
    assert objects(srv, f"users/{gone}/") == [f"users/{gone}/public.txt"]  # not listed: kept
    assert requests.get(f"{docs_url(srv)}/users/{kept}/settings/app", headers=ADMIN, timeout=30).status_code == 200
    assert sorted(objects(srv, f"users/{kept}/")) == sorted(f"users/{kept}/{n}" for n in ("avatar.png", "private/notes.txt", "public.txt"))


def test_bad_rules_stop_the_server_at_start(tmp_path_factory, srv):
    bad = srv.workdir / "bad-lifecycle.json"
    for rules in ({"rules": [{"cascade": "bottles", "when": []}]}, {"rules": [{"nope": 1}]}, {"rules": "x"}, {"batchSize": 0, "rules": []}):
        bad.write_text(json.dumps(rules))
        r = subprocess.run([hearth_binary(), "lifecycle", "plan", "--config", str(bad), "--data-dir", str(srv.workdir / "empty")],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode != 0 and "lifecycle" not in r.stdout, (rules, r.stdout)


def test_account_deletion_hook_runs_without_waiting_for_a_pass(tmp_path_factory):
    """With an hour between passes, only the auth engine's deletion hook can delete a deleted
    account's paths within seconds: for an admin delete (`accounts:delete` with the admin credential), a
    batch delete (`accounts:batchDelete`) and a user deleting themselves (`accounts:delete` with
    their ID token). Other users' paths stay."""
    s = start_api_server(tmp_path_factory, "api-lifecycle-hook")
    try:
        rules = s.workdir / "hook-lifecycle.json"
        rules.write_text(json.dumps({"intervalSeconds": 3600, "rules": [
            {"onAccountDeletion": "users/{uid}", "documents": ["users/{uid}", "profiles/{uid}"], "storage": ["users/{uid}/avatar.png", "users/{uid}/private/"]}]}))
        s.extra_args += ["--lifecycle", str(rules)]
        s.stop()
        s.start()
        time.sleep(1)  # the pass at start has run; the next is an hour away
        rest = AuthRest(s)
        ups = [rest.sign_up(f"hook-{i}-{time.time_ns()}@example.com", "secret-pass-1") for i in range(5)]
        uids = [u["localId"] for u in ups]
        writes = []
        for uid in uids:
            writes.append({"update": {"name": name(f"users/{uid}"), "fields": {"nick": {"stringValue": uid}}}})
            writes.append({"update": {"name": name(f"users/{uid}/settings/app"), "fields": {"dark": {"booleanValue": True}}}})
            writes.append({"update": {"name": name(f"profiles/{uid}"), "fields": {"bio": {"stringValue": "x"}}}})
        commit(s, writes)
        for uid in uids:
            put_object(s, f"users/{uid}/avatar.png")
            put_object(s, f"users/{uid}/private/notes.txt")
            put_object(s, f"users/{uid}/public.txt")

        def gone(uid, timeout=15.0):
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                if (requests.get(f"{docs_url(s)}/users/{uid}", headers=ADMIN, timeout=30).status_code == 404
                        and objects(s, f"users/{uid}/") == [f"users/{uid}/public.txt"]):
                    break
                time.sleep(0.2)
            assert requests.get(f"{docs_url(s)}/users/{uid}", headers=ADMIN, timeout=30).status_code == 404
            assert requests.get(f"{docs_url(s)}/users/{uid}/settings/app", headers=ADMIN, timeout=30).status_code == 404
            assert requests.get(f"{docs_url(s)}/profiles/{uid}", headers=ADMIN, timeout=30).status_code == 404
            assert objects(s, f"users/{uid}/") == [f"users/{uid}/public.txt"]

        r = rest.call(f"{V1}/accounts:delete", {"localId": uids[0]}, admin=ADMIN_TOKEN)
        assert r.status_code == 200, r.text
        gone(uids[0])
        r = rest.call(f"{V1}/projects/{PROJECT}/accounts:batchDelete", {"localIds": [uids[1], uids[2]], "force": True}, admin=ADMIN_TOKEN)
        assert r.status_code == 200 and not r.json().get("errors"), r.text
        gone(uids[1])
        gone(uids[2])
        r = rest.call(f"{V1}/accounts:delete", {"idToken": ups[3]["idToken"]})
        assert r.status_code == 200, r.text
        gone(uids[3])
        # The untouched user keeps everything.
        kept = uids[4]
        assert requests.get(f"{docs_url(s)}/users/{kept}/settings/app", headers=ADMIN, timeout=30).status_code == 200
        assert requests.get(f"{docs_url(s)}/profiles/{kept}", headers=ADMIN, timeout=30).status_code == 200
        assert sorted(objects(s, f"users/{kept}/")) == sorted(f"users/{kept}/{n}" for n in ("avatar.png", "private/notes.txt", "public.txt"))
        assert "account deletion" in s.output()
        # The worker's totals on the api port's /metrics: 3 documents and 2 objects per deleted account.
        metrics = dict(line.rsplit(" ", 1) for line in requests.get(f"http://127.0.0.1:{s.ports['api']}/metrics", timeout=30).text.splitlines()
                       if line.startswith("hearth_lifecycle_deleted_total"))
        assert metrics['hearth_lifecycle_deleted_total{kind="document"}'] == "12"
        assert metrics['hearth_lifecycle_deleted_total{kind="object"}'] == "8"
        assert metrics['hearth_lifecycle_deleted_total{kind="database"}'] == "0"
    finally:
        s.stop()


def test_database_paths_in_cascades_plans_and_account_deletions(tmp_path_factory):
    """Realtime Database paths: a `database:/…` cascade deletes expired nodes (and their listed
    paths and storage prefixes) through the database's write path; `plan` lists them as
    `database /…` lines; an account deletion removes the rule's `database` paths."""
    s = start_api_server(tmp_path_factory, "api-lifecycle-rtdb")
    try:
        rules = s.workdir / "rtdb-lifecycle.json"
        rules.write_text(json.dumps({"intervalSeconds": 1, "rules": [
            {"cascade": "database:/rtbottles/{bottleId}",
             "when": [{"field": "expiresAt", "op": "<", "value": "now"}, {"field": "status", "op": "==", "value": "dead"}],
             "storagePrefixes": ["rtbottles/{bottleId}/"], "database": ["/rtchats/{bottleId}"]},
            {"onAccountDeletion": "users/{uid}", "documents": ["users/{uid}"], "database": ["/users/{uid}", "/presence/{uid}"]}]}))
        db = f"http://127.0.0.1:{s.ports['database']}"
        now_ms = int(time.time() * 1000)
        tree = {"rtbottles": {}, "rtchats": {}}
        for i in range(30):
            kind = "exp" if i < 10 else ("dead" if i < 20 else "live")
            key = f"{kind}-{i:02d}"
            tree["rtbottles"][key] = {"expiresAt": now_ms - 60_000 if kind == "exp" else now_ms + 3_600_000,
                                      "status": "dead" if kind == "dead" else "live", "owner": "u"}
            tree["rtchats"][key] = {"-Nmsg1": {"text": "hi"}}
        r = requests.patch(f"{db}/.json", json=tree, headers=ADMIN, timeout=30)
        assert r.status_code == 200, r.text
        for key in ("exp-00", "dead-10", "live-20"):
            put_object(s, f"rtbottles/{key}/content/message_image.jpg")
        s.stop()
        r = subprocess.run([hearth_binary(), "lifecycle", "plan", "--config", str(rules), "--data-dir", str(s.data_dir),
                            "--project", PROJECT], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        listed = set(r.stdout.splitlines()[:-1])
        assert "database /rtbottles/exp-00" in listed and "database /rtchats/exp-00" in listed and "database /rtbottles/dead-10" in listed
        assert "object rtbottles/exp-00/content/message_image.jpg" in listed
        assert not any("live-" in line for line in listed)
        assert "20 database paths" not in r.stdout.splitlines()[-1] and "40 database paths" in r.stdout.splitlines()[-1]

        s.extra_args += ["--lifecycle", str(rules)]
        s.start()
        db = f"http://127.0.0.1:{s.ports['database']}"  # a new port after the restart
        deadline = time.monotonic() + 30
        while len(requests.get(f"{db}/rtbottles.json", params={"shallow": "true"}, headers=ADMIN, timeout=30).json() or {}) > 10 \
                and time.monotonic() < deadline:
            time.sleep(0.25)
        assert sorted(requests.get(f"{db}/rtbottles.json", params={"shallow": "true"}, headers=ADMIN, timeout=30).json()) == \
            [f"live-{i}" for i in range(20, 30)]
        assert sorted(requests.get(f"{db}/rtchats.json", params={"shallow": "true"}, headers=ADMIN, timeout=30).json()) == \
            [f"live-{i}" for i in range(20, 30)]
        assert objects(s, "rtbottles/") == ["rtbottles/live-20/content/message_image.jpg"]

        rest = AuthRest(s)
        gone, kept = (rest.sign_up(f"rt-{i}-{time.time_ns()}@example.com", "secret-pass-1")["localId"] for i in range(2))
        for uid in (gone, kept):
            assert requests.put(f"{db}/users/{uid}.json", json={"name": uid}, headers=ADMIN, timeout=30).status_code == 200
            assert requests.put(f"{db}/presence/{uid}.json", json=True, headers=ADMIN, timeout=30).status_code == 200
        assert rest.call(f"{V1}/accounts:delete", {"localId": gone}, admin=ADMIN_TOKEN).status_code == 200
        deadline = time.monotonic() + 15
        while requests.get(f"{db}/users/{gone}.json", headers=ADMIN, timeout=30).json() is not None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert requests.get(f"{db}/users/{gone}.json", headers=ADMIN, timeout=30).json() is None
        assert requests.get(f"{db}/presence/{gone}.json", headers=ADMIN, timeout=30).json() is None
        assert requests.get(f"{db}/users/{kept}.json", headers=ADMIN, timeout=30).json() == {"name": kept}
        assert requests.get(f"{db}/presence/{kept}.json", headers=ADMIN, timeout=30).json() is True
    finally:
        s.stop()
