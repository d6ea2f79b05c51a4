"""The auth part of the Emulator Suite export (docs/import-export.md): auth_export/config.json as the
Auth emulator writes it (firebase-tools' getEmulatorProjectConfig: signIn.allowDuplicateEmails,
emailPrivacyConfig.enableImprovedEmailPrivacy; usageMode in older versions), kept by Hearth and
round-tripped Hearth→Hearth and from the emulator's format; multi-factor enrolments (mfaInfo) and
tenants' accounts (accounts-<tenantId>.json, hubExport.ts), which Hearth cannot hold, are refused
with a clear message and nothing imported."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import requests

from conftest import PROJECT, TARGET, HearthServer

pytestmark = [
    pytest.mark.skipif(TARGET != "hearth", reason="hearth export/import are Hearth's own commands"),
    pytest.mark.sqlite_files(reason="hearth export/import work on the data directory's SQLite files"),
]

BIN = os.environ.get("HEARTH_BIN", "hearth")
OWNER = {"Authorization": "Bearer owner"}
CONFIG = f"/emulator/v1/projects/{PROJECT}/config"


def run(*args) -> subprocess.CompletedProcess:
    return subprocess.run([BIN, *args], capture_output=True, text=True, timeout=300)


def config(srv) -> dict:
    r = requests.get(srv.auth_base + CONFIG, headers=OWNER, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()


def lookup(srv, uid: str) -> list:
    r = requests.post(f"{srv.auth_base}/identitytoolkit.googleapis.com/v1/projects/{PROJECT}/accounts:lookup",
                      json={"localId": [uid]}, headers=OWNER, timeout=30)
    assert r.status_code == 200, r.text
    return r.json().get("users", [])


def sign_up(srv, email: str, password: str) -> dict:
    r = requests.post(f"{srv.auth_base}/identitytoolkit.googleapis.com/v1/accounts:signUp?key=k",
                      json={"email": email, "password": password, "returnSecureToken": True}, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()


def emulator_export(root: Path, *, config_json: dict | None = None, users: list | None = None,
                    tenant_files: dict | None = None) -> Path:
    """An export in the exact shape firebase-tools writes (hubExport.ts exportAuth): accounts.json from
    accounts:batchGet, config.json from GET /emulator/v1/projects/{p}/config, accounts-<tenant>.json per tenant."""
    root.mkdir(parents=True)
    version = "13.29.1"
    (root / "firebase-export-metadata.json").write_text(json.dumps({
        "version": version, "auth": {"version": version, "path": "auth_export"}}, indent=2))
    auth = root / "auth_export"
    auth.mkdir()
    if users is None:
        users = [{
            "localId": "emuUser1", "createdAt": "1700000000000", "lastLoginAt": "1700000001000", "displayName": "Emu",
            "passwordHash": "fakeHash:salt=fakeSaltAbc:password=emu-secret", "salt": "fakeSaltAbc",
            "passwordUpdatedAt": 1700000000000,
            "providerUserInfo": [{"providerId": "password", "email": "emu@example.com", "federatedId": "emu@example.com",
                                  "rawId": "emu@example.com", "displayName": "Emu"}],
            "validSince": "1700000000", "email": "emu@example.com", "emailVerified": True, "disabled": False,
            "lastRefreshAt": "2023-11-14T22:13:21.000Z",
        }]
    (auth / "accounts.json").write_text(json.dumps({"kind": "identitytoolkit#DownloadAccountResponse", "users": users}))
    if config_json is None:
        config_json = {"signIn": {"allowDuplicateEmails": False}, "emailPrivacyConfig": {"enableImprovedEmailPrivacy": True}}
    (auth / "config.json").write_text(json.dumps(config_json))
    for tenant, tenant_users in (tenant_files or {}).items():
        body = {"kind": "identitytoolkit#DownloadAccountResponse"}
        if tenant_users:
            body["users"] = tenant_users
        (auth / f"accounts-{tenant}.json").write_text(json.dumps(body))
    return root


def test_hearth_to_hearth_keeps_the_email_privacy_setting(tmp_path):
    a = HearthServer(BIN, tmp_path / "a")
    a.start()
    try:
        assert config(a)["emailPrivacyConfig"] == {"enableImprovedEmailPrivacy": False}
        r = requests.patch(a.auth_base + CONFIG, json={"emailPrivacyConfig": {"enableImprovedEmailPrivacy": True}},
                           headers=OWNER, timeout=30)
        assert r.status_code == 200 and r.json()["emailPrivacyConfig"]["enableImprovedEmailPrivacy"] is True, r.text
        sign_up(a, "kept@example.com", "kept-secret-1")
        # The setting is the project's: it outlives a restart.
        a.stop()
        a.start()
        assert config(a)["emailPrivacyConfig"] == {"enableImprovedEmailPrivacy": True}
    finally:
        a.stop()
    out = tmp_path / "export"
    proc = run("export", str(out), "--data-dir", str(a.data_dir))
    assert proc.returncode == 0, proc.stderr
    assert json.loads((out / "auth_export" / "config.json").read_text()) == {
        "signIn": {"allowDuplicateEmails": False}, "emailPrivacyConfig": {"enableImprovedEmailPrivacy": True}}

    b = HearthServer(BIN, tmp_path / "b")
    proc = run("import", str(out), "--data-dir", str(b.data_dir))
    assert proc.returncode == 0, proc.stderr
    b.start()
    try:
        assert config(b) == {"signIn": {"allowDuplicateEmails": False}, "emailPrivacyConfig": {"enableImprovedEmailPrivacy": True}}
        # With enumeration protection on, createAuthUri does not say whether the address is registered.
        r = requests.post(f"{b.auth_base}/identitytoolkit.googleapis.com/v1/accounts:createAuthUri?key=k",
                          json={"identifier": "kept@example.com", "continueUri": "http://localhost"}, timeout=30)
        assert r.status_code == 200 and "registered" not in r.json(), r.text
    finally:
        b.stop()
    again = tmp_path / "again"
    assert run("export", str(again), "--data-dir", str(b.data_dir)).returncode == 0
    assert (again / "auth_export" / "config.json").read_text() == (out / "auth_export" / "config.json").read_text()


def test_an_auth_emulator_export_imports_with_its_config(tmp_path):
    src = emulator_export(tmp_path / "emu", tenant_files={"empty-tenant-1a2b": []})
    srv = HearthServer(BIN, tmp_path / "srv")
    proc = run("import", str(src), "--data-dir", str(srv.data_dir))
    assert proc.returncode == 0, proc.stderr
    srv.start()
    try:
        assert config(srv)["emailPrivacyConfig"] == {"enableImprovedEmailPrivacy": True}
        [user] = lookup(srv, "emuUser1")
        assert (user["email"], user["displayName"], user["emailVerified"]) == ("emu@example.com", "Emu", True)
    finally:
        srv.stop()


@pytest.mark.parametrize("case", ["older-usage-mode", "first-versions"])
def test_older_config_shapes_import(tmp_path, case):
    shape = ({"signIn": {"allowDuplicateEmails": False}, "usageMode": "DEFAULT"} if case == "older-usage-mode"
             else {"signIn": {"allowDuplicateEmails": False}})
    src = emulator_export(tmp_path / "emu", config_json=shape)
    srv = HearthServer(BIN, tmp_path / "srv")
    assert run("import", str(src), "--data-dir", str(srv.data_dir)).returncode == 0
    srv.start()
    try:
        assert config(srv)["emailPrivacyConfig"] == {"enableImprovedEmailPrivacy": False}
        assert len(lookup(srv, "emuUser1")) == 1
    finally:
        srv.stop()


MFA_USER = {
    "localId": "mfaUser", "email": "mfa@example.com", "emailVerified": True, "createdAt": "1700000000000",
    "passwordHash": "fakeHash:salt=fakeSaltX:password=mfa-secret", "salt": "fakeSaltX",
    "providerUserInfo": [{"providerId": "password", "email": "mfa@example.com", "rawId": "mfa@example.com",
                          "federatedId": "mfa@example.com"}],
    "mfaInfo": [{"mfaEnrollmentId": "enrollment-1", "displayName": "Work phone", "phoneInfo": "+15555550100",
                 "enrolledAt": "2023-11-14T22:13:20.000Z", "unobfuscatedPhoneInfo": "+15555550100"}],
}
TENANT_USER = {"localId": "tenantUser", "email": "t@example.com", "tenantId": "tenant-1a2b", "createdAt": "1700000000000"}


@pytest.mark.parametrize("case,message", [
    ("mfa", "multi-factor"),
    ("tenant-file", "tenant tenant-1a2b"),
    ("tenant-id", "tenant tenant-1a2b"),
    ("duplicate-emails", "allowDuplicateEmails"),
    ("passthrough", "PASSTHROUGH"),
    ("corrupt-config", "config.json is not JSON"),
])
def test_what_hearth_cannot_hold_is_refused_and_nothing_imported(tmp_path, case, message):
    kwargs: dict = {}
    if case == "mfa":
        kwargs["users"] = [MFA_USER]
    elif case == "tenant-file":
        kwargs["tenant_files"] = {"tenant-1a2b": [TENANT_USER]}
    elif case == "tenant-id":
        kwargs["users"] = [TENANT_USER]
    elif case == "duplicate-emails":
        kwargs["config_json"] = {"signIn": {"allowDuplicateEmails": True}}
    elif case == "passthrough":
        kwargs["config_json"] = {"signIn": {"allowDuplicateEmails": False}, "usageMode": "PASSTHROUGH"}
    src = emulator_export(tmp_path / "emu", **kwargs)
    if case == "corrupt-config":
        (src / "auth_export" / "config.json").write_text("{\"signIn\": ")
    data_dir = tmp_path / "data"
    proc = run("import", str(src), "--data-dir", str(data_dir))
    assert proc.returncode != 0, proc.stdout
    assert "hearth import:" in proc.stderr and message in proc.stderr, proc.stderr
    # Nothing was written: the same data directory takes a good export, whose settings win.
    good = emulator_export(tmp_path / "good")
    proc = run("import", str(good), "--data-dir", str(data_dir))
    assert proc.returncode == 0, proc.stderr
