"""`hearth serve --print-config` (docs/production.md, "Configuration"): every setting in force with
where it came from — flags beat the environment, which beats firebase.json, which beats the
defaults — secrets redacted, and nothing served or written."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import hearth_bin

pytestmark = pytest.mark.hearth_only(reason="Hearth's own command line")

SECRET_TOKEN = "s3cret-admin-token-0123456789"
SMTP_PASSWORD = "smtp-pa55word"
API_SECRET = "api-secret-key-abcdef"


def clean_env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEARTH_") or k == "HEARTH_BIN"}
    env.pop("AWS_ACCESS_KEY_ID", None)
    env.pop("AWS_SECRET_ACCESS_KEY", None)
    env.update(extra)
    return env


def print_config(cwd: Path, *args: str, env: dict | None = None, fmt: str = "json") -> subprocess.CompletedProcess:
    return subprocess.run(
        [hearth_bin(), "serve", "--print-config", "--print-config-format", fmt, *args],
        cwd=cwd, env=env if env is not None else clean_env(), capture_output=True, text=True, timeout=60)


def settings(cwd: Path, *args: str, env: dict | None = None) -> dict:
    done = print_config(cwd, *args, env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["settings"]


def tree(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


@pytest.fixture
def project_dir(tmp_path: Path) -> Path:
    (tmp_path / "firebase.json").write_text(json.dumps({
        "emulators": {"firestore": {"port": 8181, "host": "127.0.0.2"}, "auth": {"port": 9199}, "ui": {"port": 4444}},
        "firestore": {"rules": "firestore.rules"},
        "hearth": {"maxRequestBytes": 2_000_000, "trustedProxies": ["10.0.0.0/8"]},
    }))
    (tmp_path / ".firebaserc").write_text(json.dumps({"projects": {"default": "rc-project"}}))
    (tmp_path / "firestore.rules").write_text("rules_version = '2';\nservice cloud.firestore { match /{d=**} { allow read: if false; } }\n")
    return tmp_path


def test_defaults_with_no_project_folder(tmp_path: Path):
    s = settings(tmp_path)
    assert s["data-dir"] == {"value": "./hearth-data", "source": "default", "from": "default"}
    assert s["project"]["value"] == "demo-hearth" and s["project"]["from"] == "default"
    assert s["firestore-port"]["value"] == 8080 and s["firestore-port"]["source"] == "default"
    assert s["auth-port"]["value"] == 9099
    assert s["console-port"]["value"] == 4000
    assert s["mode"] == {"value": "production", "source": "default", "from": "default"}
    # Production without a credential: the first start makes one in the data directory.
    assert s["admin-token"]["from"] == "first-run"
    assert s["admin-token"]["source"].endswith("hearth-data/admin-token")
    assert s["admin-token"]["value"] == "(made on the first start)"
    assert s["max-request-bytes.firestore"]["value"] == 11 << 20
    assert s["max-request-bytes.auth"]["value"] == 4 << 20
    assert s["max-request-bytes.database"]["value"] == 256 << 20
    assert s["max-object-bytes"]["value"] == 5 << 30
    assert s["log-format"]["value"] == "text"
    assert s["mail-from"] == {"value": "noreply@demo-hearth.firebaseapp.com", "source": "derived from project", "from": "derived"}
    # Nothing was written: no data directory, no first-run files.
    assert tree(tmp_path) == []


def test_firebase_json_beats_defaults(project_dir: Path):
    s = settings(project_dir)
    assert s["project"] == {"value": "rc-project", "source": ".firebaserc projects.default", "from": ".firebaserc"}
    assert s["firestore-port"] == {"value": 8181, "source": "firebase.json emulators.firestore.port", "from": "firebase.json"}
    assert s["auth-port"]["value"] == 9199 and s["auth-port"]["source"] == "firebase.json emulators.auth.port"
    assert s["console-port"]["value"] == 4444 and s["console-port"]["source"] == "firebase.json emulators.ui.port"
    assert s["storage-port"]["source"] == "default"
    assert s["host"] == {"value": "127.0.0.2", "source": "firebase.json emulators.firestore.host", "from": "firebase.json"}
    assert s["firestore-rules"]["value"] == str(project_dir / "firestore.rules")
    assert s["firestore-rules"]["source"] == "firebase.json firestore.rules"
    assert s["trusted-proxies"]["value"] == ["10.0.0.0/8"] and s["trusted-proxies"]["source"] == "firebase.json hearth.trustedProxies"
    for service in ("firestore", "auth", "database", "storage", "s3", "api", "console"):
        assert s[f"max-request-bytes.{service}"] == {
            "value": 2_000_000, "source": "firebase.json hearth.maxRequestBytes", "from": "firebase.json"}


def test_env_beats_firebase_json_and_flags_beat_env(project_dir: Path):
    env = clean_env(
        HEARTH_PROJECT="env-project", HEARTH_FIRESTORE_PORT="8282", HEARTH_HOST="127.0.0.3", HEARTH_MAX_REQUEST_BYTES="3000000",
        HEARTH_TRUSTED_PROXIES="192.168.0.0/16, 172.16.0.0/12", HEARTH_LOG_FORMAT="json", HEARTH_DATA_DIR=str(project_dir / "env-data"))
    s = settings(project_dir, env=env)
    assert s["project"] == {"value": "env-project", "source": "env HEARTH_PROJECT", "from": "env"}
    assert s["firestore-port"] == {"value": 8282, "source": "env HEARTH_FIRESTORE_PORT", "from": "env"}
    assert s["host"]["source"] == "env HEARTH_HOST"
    assert s["max-request-bytes.auth"] == {"value": 3_000_000, "source": "env HEARTH_MAX_REQUEST_BYTES", "from": "env"}
    assert s["trusted-proxies"]["value"] == ["192.168.0.0/16", "172.16.0.0/12"]
    assert s["log-format"]["source"] == "env HEARTH_LOG_FORMAT"
    assert s["data-dir"]["source"] == "env HEARTH_DATA_DIR"
    # auth-port is still firebase.json's: each setting is decided on its own.
    assert s["auth-port"]["source"] == "firebase.json emulators.auth.port"

    s = settings(
        project_dir, "--project", "flag-project", "--firestore-port", "0", "--max-request-bytes", "4096",
        "--trusted-proxy", "127.0.0.1", "--log-format", "text", "--no-console", "--emulator", env=env)
    assert s["project"] == {"value": "flag-project", "source": "flag --project", "from": "flag"}
    assert s["firestore-port"] == {"value": 0, "source": "flag --firestore-port", "from": "flag"}
    assert s["max-request-bytes.firestore"] == {"value": 4096, "source": "flag --max-request-bytes", "from": "flag"}
    assert s["trusted-proxies"] == {"value": ["127.0.0.1"], "source": "flag --trusted-proxy", "from": "flag"}
    assert s["log-format"]["source"] == "flag --log-format"
    assert s["console-port"]["source"] == "flag --no-console"
    assert s["mode"] == {"value": "emulator", "source": "flag --emulator", "from": "flag"}
    assert s["admin-token"]["source"] == "derived from --emulator"
    assert tree(project_dir) == [".firebaserc", "firebase.json", "firestore.rules"]


def test_secrets_are_redacted(tmp_path: Path):
    env = clean_env(
        HEARTH_ADMIN_TOKEN=SECRET_TOKEN, HEARTH_API_S3_ACCESS_KEY_ID="AKIDPRINTCONFIG", HEARTH_API_S3_SECRET_ACCESS_KEY=API_SECRET,
        AWS_ACCESS_KEY_ID="AKIDBLOB", AWS_SECRET_ACCESS_KEY="blob-secret-xyz")
    args = ("--smtp-url", f"smtp://mailer:{SMTP_PASSWORD}@127.0.0.1:2525", "--blob-s3", "http://127.0.0.1:1/bucket/prefix")
    for fmt in ("json", "text"):
        done = print_config(tmp_path, *args, env=env, fmt=fmt)
        assert done.returncode == 0, done.stderr
        for secret in (SECRET_TOKEN, SMTP_PASSWORD, API_SECRET, "blob-secret-xyz"):
            assert secret not in done.stdout and secret not in done.stderr
    s = json.loads(print_config(tmp_path, *args, env=env).stdout)["settings"]
    assert s["admin-token"] == {"value": "(set, redacted)", "source": "env HEARTH_ADMIN_TOKEN", "from": "env", "secret": True}
    assert s["api-s3-secret-access-key"]["value"] == "(set, redacted)" and s["api-s3-secret-access-key"]["secret"] is True
    assert s["api-s3-access-key-id"]["value"] == "AKIDPRINTCONFIG"
    assert s["blob-s3-secret-access-key"] == {
        "value": "(set, redacted)", "source": "env AWS_SECRET_ACCESS_KEY", "from": "env", "secret": True}
    assert s["smtp-url"]["value"] == "smtp://mailer:REDACTED@127.0.0.1:2525"
    assert s["smtp-url"]["source"] == "flag --smtp-url"
    # The flag beats the environment for the admin token too, and stays redacted.
    s = settings(tmp_path, "--admin-token", "another-secret-token-42", env=env)
    assert s["admin-token"]["source"] == "flag --admin-token" and s["admin-token"]["value"] == "(set, redacted)"
    assert tree(tmp_path) == []


def test_first_run_file_is_named_once_written(tmp_path: Path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "admin-token").write_text("hearth_" + "x" * 40 + "\n")
    s = settings(tmp_path, "--data-dir", str(data))
    assert s["admin-token"] == {
        "value": "(set, redacted)", "source": f"first-run file {data / 'admin-token'}", "from": "first-run", "secret": True}
    assert tree(tmp_path) == ["data", "data/admin-token"]


def test_text_format_and_bad_values(tmp_path: Path):
    done = print_config(tmp_path, "--firestore-port", "8088", fmt="text")
    assert done.returncode == 0, done.stderr
    line = next(l for l in done.stdout.splitlines() if l.startswith("firestore-port "))
    assert line.split()[1:] == ["8088", "flag", "--firestore-port"]
    assert any(l.split()[:2] == ["max-object-bytes", str(5 << 30)] for l in done.stdout.splitlines())
    # A value that cannot be used is refused, whichever source it came from.
    bad = print_config(tmp_path, env=clean_env(HEARTH_MAX_REQUEST_BYTES="lots"))
    assert bad.returncode != 0 and "HEARTH_MAX_REQUEST_BYTES" in bad.stderr
    bad = print_config(tmp_path, "--max-request-bytes", "10")
    assert bad.returncode != 0 and "max-request-bytes" in bad.stderr
    bad = print_config(tmp_path, "--print-config-format", "yaml")
    assert bad.returncode != 0
    assert tree(tmp_path) == []


def test_public_urls_from_each_source(tmp_path: Path):
    """`--public-url SERVICE=URL` (repeatable), HEARTH_PUBLIC_URLS (comma-separated), firebase.json
    hearth.publicUrls (an object): where clients reach a service behind a load balancer."""
    s = settings(tmp_path)
    assert s["public-urls"] == {"value": [], "source": "default", "from": "default"}
    (tmp_path / "firebase.json").write_text(json.dumps({"hearth": {"publicUrls": {"firestore": "https://fs.example.com/"}}}))
    s = settings(tmp_path)
    assert s["public-urls"]["value"] == ["firestore=https://fs.example.com/"]
    assert s["public-urls"]["source"] == "firebase.json hearth.publicUrls"
    env = clean_env(HEARTH_PUBLIC_URLS="auth=https://auth.example.com, console=http://10.0.0.5:4000")
    s = settings(tmp_path, env=env)
    assert s["public-urls"]["value"] == ["auth=https://auth.example.com", "console=http://10.0.0.5:4000"]
    assert s["public-urls"]["source"] == "env HEARTH_PUBLIC_URLS"
    s = settings(tmp_path, "--public-url", "s3=https://s3.example.com", env=env)
    assert s["public-urls"]["value"] == ["s3=https://s3.example.com"] and s["public-urls"]["source"] == "flag --public-url"


@pytest.mark.parametrize("entry,reason", [
    ("firestore", "SERVICE=URL"),                                   # no '='
    ("cloud=https://x.example.com", "is not a service"),           # unknown service
    ("firestore=ftp://x.example.com", "http:// or https://"),       # wrong scheme
    ("firestore=https:///nohost", "http:// or https://"),           # no host
    ("firestore=https://x.example.com/?a=b", "query"),              # a query
])
def test_a_malformed_public_url_stops_the_start_with_the_reason(tmp_path: Path, entry: str, reason: str):
    bad = print_config(tmp_path, "--public-url", entry)
    assert bad.returncode != 0
    assert "--public-url" in bad.stderr and reason in bad.stderr, bad.stderr
    twice = print_config(tmp_path, "--public-url", "auth=https://a.example.com", "--public-url", "auth=https://b.example.com")
    assert twice.returncode != 0 and "more than one" in twice.stderr, twice.stderr
    assert tree(tmp_path) == []
