"""The Swift SDK's Firestore tests against Google's Firestore emulator (issue 16, "the same Firestore
test suite against two servers").

`swift test` runs Tests/HearthClientTests' Firestore suites against an in-process Hearth. This test
starts Google's Cloud Firestore emulator on a free port and runs the same suites again with
``HEARTH_CLIENT_TARGET=emulator`` and ``HEARTH_CLIENT_FIRESTORE_EMULATOR=127.0.0.1:<port>``
(Tests/HearthClientTests/FirestoreTestTarget.swift): the SDK must pass against both servers, which
shows it speaks Firestore's protocol rather than Hearth's quirks. Auth still comes from the
in-process Hearth; each test uses a project of its own on the emulator.

It needs the test products built (``swift build --build-tests``): it runs
``swift test --skip-build`` in the package root (the root that holds ``$HEARTH_BIN``'s ``.build``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import TARGET, EmulatorServer

pytestmark = pytest.mark.skipif(TARGET != "hearth", reason="runs the Swift SDK's tests against the emulator itself")

SUITES = ["FirestoreClientTests", "FirestoreListenerTests", "FirestoreQueryTests", "FirestoreAggregateTests",
          "FirestoreTransactionTests"]


def package_root() -> Path:
    """The package whose build holds $HEARTH_BIN (…/.build/<config>/hearth), else this checkout."""
    binary = os.environ.get("HEARTH_BIN")
    if binary:
        for parent in Path(binary).resolve().parents:
            if parent.name == ".build":
                return parent.parent
    return Path(__file__).resolve().parents[2]


def test_swift_firestore_suites_pass_against_the_emulator(tmp_path):
    swift = shutil.which("swift")
    if swift is None:
        pytest.fail("swift is not on PATH")
    emulator = EmulatorServer(tmp_path)
    emulator.start()
    try:
        env = {**os.environ, "HEARTH_CLIENT_TARGET": "emulator",
               "HEARTH_CLIENT_FIRESTORE_EMULATOR": f"127.0.0.1:{emulator.port}",
               "HEARTH_CLIENT_DATA_DIR": str(tmp_path / "client")}
        pattern = "HearthClientTests\\.(" + "|".join(SUITES) + ")"
        proc = subprocess.run([swift, "test", "--skip-build", "--filter", pattern], cwd=package_root(), env=env,
                              capture_output=True, text=True, timeout=900)
    finally:
        emulator.stop()
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"swift test against the emulator failed:\n{out[-12000:]}\n--- emulator ---\n{emulator.output()}"
    # A filter that matches nothing passes vacuously: every suite must have run and passed.
    for suite in SUITES:
        assert re.search(rf"Suite \"?{suite}\"? passed", out), f"{suite} did not run:\n{out[-6000:]}"
