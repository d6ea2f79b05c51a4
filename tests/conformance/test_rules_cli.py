"""`hearth rules test`: the cases file runs against a rules file without a server.

Runs the built binary ($HEARTH_BIN) and checks its output and exit status (0 all pass,
1 failures, 2 usage/compile errors). Hearth only: the emulator has no such command.
"""
import json
import os
import subprocess

import pytest

pytestmark = pytest.mark.hearth_only(reason="hearth rules test is a Hearth command")

RULES = """rules_version = '2';
service cloud.firestore {
  match /databases/{database}/documents {
    match /users/{userId} {
      allow read: if request.auth != null && request.auth.uid == userId;
      allow update: if request.auth.uid == userId && request.resource.data.owner == userId;
      allow delete: if request.auth.token.admin == true;
    }
    match /posts/{postId} {
      allow list: if resource.data.owner == request.auth.uid;
    }
  }
}
"""

CASES = {
    "documents": {"users/alice": {"owner": "alice", "since": {"$timestamp": "2020-01-01T00:00:00Z"}}},
    "cases": [
        {"name": "owner reads", "method": "get", "path": "/users/alice", "auth": "alice", "expect": "allow"},
        {"name": "stranger", "method": "get", "path": "/users/alice", "auth": "eve", "expect": "deny",
         "reason": "request.auth.uid == userId"},
        {"name": "admin", "method": "delete", "path": "/users/alice",
         "auth": {"uid": "root", "token": {"admin": True}}, "expect": "allow"},
        {"name": "rename", "method": "update", "path": "/users/alice", "auth": "alice",
         "data": {"owner": "alice", "name": "A"}, "expect": "allow"},
        {"name": "my posts", "method": "list", "path": "/posts", "auth": "alice",
         "query": {"where": [["owner", "==", "alice"]]}, "expect": "allow"},
    ],
}


def run(tmp_path, rules=RULES, cases=CASES, *extra):
    binary = os.environ.get("HEARTH_BIN")
    if not binary:
        pytest.skip("HEARTH_BIN is not set")
    (tmp_path / "firestore.rules").write_text(rules)
    (tmp_path / "cases.json").write_text(cases if isinstance(cases, str) else json.dumps(cases))
    return subprocess.run([binary, "rules", "test", "firestore.rules", "cases.json", *extra], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)


def test_all_pass(tmp_path):
    r = run(tmp_path, RULES, CASES, "--coverage-json", "cov.json", "--coverage-html", "cov.html")
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == 'PASS owner reads — allowed by firestore.rules:5:7 ' \
        '"allow read: if request.auth != null && request.auth.uid == userId"'
    assert lines[1].startswith("PASS stranger — denied: ")
    assert lines[-1].startswith("5 passed, 0 failed, 5 cases;")
    report = json.loads((tmp_path / "cov.json").read_text())
    assert report["file"] == "firestore.rules"
    read_check = [e for e in report["report"] if e["text"] == "request.auth.uid == userId" and e["start"]["line"] == 5]
    assert len(read_check) == 1
    assert read_check[0]["true"] == 1 and read_check[0]["false"] == 1 and read_check[0]["status"] == "both"
    html = (tmp_path / "cov.html").read_text()
    assert html.startswith("<!DOCTYPE html>") and "&amp;&amp;" in html


def test_failures_exit_1(tmp_path):
    cases = dict(CASES, cases=CASES["cases"] + [
        {"name": "wrong", "method": "get", "path": "/users/alice", "auth": "alice", "expect": "deny"}])
    r = run(tmp_path, RULES, cases)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "FAIL wrong — expected deny, but allowed by firestore.rules:5:7" in r.stdout
    assert r.stdout.splitlines()[-1].startswith("5 passed, 1 failed, 6 cases;")


def test_compile_error_exit_2(tmp_path):
    r = run(tmp_path, RULES.replace("request.auth != null &&", "request.auth != &&"), CASES)
    assert r.returncode == 2
    assert "firestore.rules:5:" in r.stderr and "^" in r.stderr


def test_bad_cases_exit_2(tmp_path):
    r = run(tmp_path, RULES, '{"cases": [{"name": "x", "method": "get", "path": "/a/b"}]}')
    assert r.returncode == 2
    assert 'cases[0] (x): "expect" must be "allow" or "deny"' in r.stderr
