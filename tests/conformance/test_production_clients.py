"""docs/production-clients.md, run: every Python recipe in it against a production `hearth serve`
with TLS on every port, without any *_EMULATOR_HOST variable — the credentials are the ones the
server wrote on its first start (hearth-data/admin-token, hearth-data/service-account.json), the
trust is the CA from `hearth admin tls self-signed` (certs/ca.pem), and only the port numbers in
the recipes are replaced by the ones the server bound."""

from __future__ import annotations

import subprocess

import pytest

from authutil import hearth_binary
from tlsutil import ROOT, code_blocks, run_python, start_tls_server, with_ports

pytestmark = pytest.mark.hearth_only(reason="production mode and TLS are Hearth's")

DOC = ROOT / "docs" / "production-clients.md"
RECIPES = code_blocks(DOC, "python")


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("production-clients")
    server = start_tls_server(workdir)
    server.workdir = workdir
    out = subprocess.run([hearth_binary(), "admin", "s3-keys", "create", "--data-dir", str(server.data_dir), "--json"],
                         check=True, capture_output=True, text=True, timeout=60)
    (workdir / "s3-key.json").write_text(out.stdout)
    yield server
    server.stop()


def test_the_document_has_every_recipe():
    labels = [label for label, _ in RECIPES]
    assert labels == ["requests", "firestore", "gapic-rest", "grpcio", "storage", "boto3", "firebase-admin"], labels
    for _, code in RECIPES:
        assert "EMULATOR_HOST" not in code


@pytest.mark.parametrize("label,code", RECIPES, ids=[label for label, _ in RECIPES])
def test_recipe(srv, label, code):
    r = run_python(with_ports(code, srv.ports), cwd=srv.workdir)
    assert r.returncode == 0, f"{label}\n--- stdout ---\n{r.stdout}\n--- stderr ---\n{r.stderr}\n--- server ---\n{srv.output()}"
    assert r.stdout.strip().endswith(": ok"), r.stdout
