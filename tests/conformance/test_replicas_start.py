"""Replicas that start at once on one fresh data directory (docs/postgres.md, "Testing several
replicas"): in production mode the first start makes the admin token and a service-account key
there. Exactly one replica makes them and every other one reads that token — none fails its
start because another made the file first, none reads a file half written, and no temporary file
is left behind. And every replica verifies the ID tokens every other one signs (issue 18 part 3:
signing keys in the database, not one key ring per process).

Runs only over PostgreSQL (``HEARTH_TEST_DATABASE_URL``)."""

from __future__ import annotations

import json
import os
import uuid

import pytest
import requests

from conftest import DATABASE_ADMIN_URL, PROJECT, TARGET, HearthServer

pytestmark = [
    pytest.mark.skipif(TARGET != "hearth", reason="replicas of hearth serve over PostgreSQL are Hearth's own"),
    pytest.mark.skipif(not DATABASE_ADMIN_URL, reason="needs PostgreSQL: set HEARTH_TEST_DATABASE_URL (docs/postgres.md)"),
]


def start_at_once(tmp_path, replicas: int) -> HearthServer:
    binary = os.environ.get("HEARTH_BIN")
    if not binary:
        pytest.skip("HEARTH_BIN is not set")
    srv = HearthServer(binary, tmp_path, emulator=False, replicas=replicas)
    srv.stagger = False  # all at once, racing for the first start's files
    srv.start()  # raises, with the replica's output, if any replica fails to start
    return srv


@pytest.mark.parametrize("round", range(3))
def test_replicas_started_at_once_on_a_fresh_data_directory_share_one_admin_token(tmp_path, round):
    srv = start_at_once(tmp_path, 4)
    try:
        token = (srv.data_dir / "admin-token").read_text().strip()
        assert token.startswith("hearth_") and len(token) > 40
        for i in range(srv.replicas):
            r = requests.post(f"{srv.replica_base(i)}/v1/projects/{PROJECT}/databases/(default)/documents/start?documentId=r{i}",
                              json={"fields": {"replica": {"integerValue": str(i)}}},
                              headers={"Authorization": f"Bearer {token}"}, timeout=30)
            assert r.status_code == 200, f"replica {i} does not take the data directory's admin token: {r.status_code} {r.text}"
        key = json.loads((srv.data_dir / "service-account.json").read_text())
        assert key["type"] == "service_account" and "PRIVATE KEY" in key["private_key"]
        made = [i for i in range(srv.replicas) if "Hearth made an admin credential" in srv.replica_output(i)]
        assert len(made) == 1, f"replicas {made} each announced making the admin credential:\n{srv.output()}"
        leftovers = [p.name for p in srv.data_dir.iterdir() if p.name.startswith(".admin-token") or p.name.startswith(".service-account")]
        assert not leftovers, f"temporary files left in the data directory: {leftovers}"
    finally:
        srv.stop()


def test_replicas_started_at_once_verify_each_others_id_tokens(tmp_path):
    srv = start_at_once(tmp_path, 3)
    try:
        tokens = []
        for i in range(srv.replicas):
            r = requests.post(f"{srv.replica_base(i, 'auth')}/identitytoolkit.googleapis.com/v1/accounts:signUp?key=fake-api-key",
                              json={"email": f"r{i}-{uuid.uuid4().hex[:8]}@example.com", "password": "secret123", "returnSecureToken": True},
                              timeout=30)
            assert r.status_code == 200, f"sign-up on replica {i}: {r.status_code} {r.text}"
            tokens.append(r.json()["idToken"])
        refused = []
        for signer, token in enumerate(tokens):
            for verifier in range(srv.replicas):
                r = requests.post(f"{srv.replica_base(verifier, 'auth')}/identitytoolkit.googleapis.com/v1/accounts:lookup?key=fake-api-key",
                                  json={"idToken": token}, timeout=30)
                if r.status_code != 200:
                    refused.append(f"replica {verifier} refused replica {signer}'s ID token: {r.status_code} {r.text[:200]}")
        assert not refused, "replicas sign with keys the others do not know:\n  " + "\n  ".join(refused)
    finally:
        srv.stop()
