"""The web console (``--console-port``) in a real browser: headless Chromium driven by selenium.

The browser signs in as a console user, creates a collection and a typed document, watches a
document written by google-cloud-firestore appear in a live query, edits a field, simulates a
rules request and reads the deciding line, creates and disables a user, uploads a file and
downloads it. Screenshots of every page, wide (1280x800) and narrow (390x844), are saved under
``$HEARTH_ARTIFACTS_DIR/console`` (default ``artifacts/console``).

Security without a browser: no access without a session, changes without the CSRF token (or from
another origin) are refused, a non-admin account is refused, and the cookie is HttpOnly, Secure
and SameSite=Strict.

Needs Debian's ``chromium`` and ``chromium-driver`` and selenium (scripts/test installs them). With
``HEARTH_REQUIRE_BROWSER=1`` (set by scripts/test) a missing browser fails instead of skipping.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest
import requests

from conftest import PROJECT, HearthServer

pytestmark = pytest.mark.hearth_only(reason="the console is Hearth's own")

ADMIN_EMAIL = "console-admin@example.com"
ADMIN_PASSWORD = "correct horse battery staple"
ADMIN_TOKEN = "console-test-admin-token-" + uuid.uuid4().hex
TIMEOUT = 20
ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("HEARTH_ARTIFACTS_DIR", ROOT / "artifacts")) / "console"

FIRESTORE_RULES = """rules_version = '2';
service cloud.firestore {
  match /databases/{database}/documents {
    match /tasks/{taskId} {
      allow read: if request.auth != null && resource.data.owner == request.auth.uid;
      allow create: if request.auth != null && request.resource.data.owner == request.auth.uid;
    }
  }
}
"""

STORAGE_RULES = """rules_version = '2';
service firebase.storage {
  match /b/{bucket}/o {
    match /users/{uid}/{file} {
      allow read, write: if request.auth != null && request.auth.uid == uid;
    }
  }
}
"""


def _binary() -> str:
    binary = os.environ.get("HEARTH_BIN")
    if not binary or not os.access(binary, os.X_OK):
        pytest.skip("HEARTH_BIN is not set to the hearth executable")
    return binary


def _start(tmp_path_factory, name: str, emulator: bool, console_user: bool = True) -> HearthServer:
    binary = _binary()
    workdir = tmp_path_factory.mktemp(name)
    (workdir / "firestore.rules").write_text(FIRESTORE_RULES)
    (workdir / "storage.rules").write_text(STORAGE_RULES)
    srv = HearthServer(binary, workdir, emulator=emulator, extra_args=(
        "--admin-token", ADMIN_TOKEN,
        "--firestore-rules", str(workdir / "firestore.rules"),
        "--storage-rules", str(workdir / "storage.rules"),
    ))
    if console_user:
        subprocess.run(
            [binary, "admin", "console-user", "create", "--data-dir", str(srv.data_dir), "--project", PROJECT,
             "--email", ADMIN_EMAIL],
            check=True, capture_output=True, timeout=120, env={**os.environ, "HEARTH_CONSOLE_PASSWORD": ADMIN_PASSWORD},
        )
    srv.start()
    if "console" not in srv.ports:
        srv.stop()
        pytest.fail(f"the ready file has no console port: {srv.ports}")
    return srv


@pytest.fixture(scope="module")
def hearth(tmp_path_factory):
    srv = _start(tmp_path_factory, "console", emulator=True)
    yield srv
    srv.stop()


def console_url(srv) -> str:
    # localhost, not 127.0.0.1: browsers treat it as a secure context, so the Secure cookie is kept.
    return f"http://localhost:{srv.ports['console']}"


def keep_cookie(s: requests.Session, response) -> None:
    """requests (rightly) keeps Secure cookies for https only; send the session cookie by hand."""
    value = response.headers["Set-Cookie"].split(";")[0]
    s.headers["Cookie"] = value


def signed_in_session(srv, body=None) -> tuple[requests.Session, dict]:
    s = requests.Session()
    r = s.post(console_url(srv) + "/api/session", json=body or {"method": "token", "token": ADMIN_TOKEN}, timeout=TIMEOUT)
    assert r.status_code == 200, r.text
    keep_cookie(s, r)
    return s, r.json()


# ------------------------------------------------------------------------------------------ security


def test_pages_carry_a_strict_content_security_policy(hearth):
    r = requests.get(console_url(hearth) + "/", timeout=TIMEOUT)
    assert r.status_code == 200
    csp = r.headers["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp and "unsafe-inline" not in csp
    assert r.headers["X-Content-Type-Options"] == "nosniff"
    assert '<script type="module" src="/assets/console.js">' in r.text
    js = requests.get(console_url(hearth) + "/assets/console.js", timeout=TIMEOUT)
    assert js.status_code == 200 and js.headers["Content-Type"].startswith("text/javascript")
    # Assets are looked up by name among those compiled in: nothing else is reachable.
    for path in ("/assets/nope.js", "/assets/%2e%2e/index.html", "/assets/console.js/", "/etc/passwd"):
        assert requests.get(console_url(hearth) + path, timeout=TIMEOUT).status_code == 404, path


@pytest.mark.parametrize("method,path", [
    ("GET", "/api/overview"),
    ("GET", "/api/session"),
    ("GET", "/api/proxy/firestore/v1/projects/demo-hearth/databases/(default)/documents/tasks"),
    ("POST", "/api/proxy/auth/identitytoolkit.googleapis.com/v1/projects/demo-hearth/accounts"),
    ("GET", "/api/rules"),
    ("GET", "/api/firestore/listen?query=%7B%7D"),
])
def test_nothing_without_a_session(hearth, method, path):
    r = requests.request(method, console_url(hearth) + path, json={}, timeout=TIMEOUT)
    assert r.status_code == 401, r.text
    assert r.json()["error"]["status"] == "UNAUTHENTICATED"
    forged = requests.request(method, console_url(hearth) + path, json={}, timeout=TIMEOUT,
                              cookies={"__Host-hearth-console": "A" * 43})
    assert forged.status_code == 401


def test_session_cookie_flags_and_sign_out(hearth):
    s = requests.Session()
    r = s.post(console_url(hearth) + "/api/session", json={"method": "token", "token": ADMIN_TOKEN}, timeout=TIMEOUT)
    assert r.status_code == 200, r.text
    cookie = r.headers["Set-Cookie"]
    for flag in ("__Host-hearth-console=", "HttpOnly", "Secure", "SameSite=Strict", "Path=/"):
        assert flag in cookie
    keep_cookie(s, r)
    csrf = r.json()["csrfToken"]
    assert csrf and csrf not in cookie
    assert s.get(console_url(hearth) + "/api/overview", timeout=TIMEOUT).status_code == 200
    assert s.delete(console_url(hearth) + "/api/session", headers={"X-CSRF-Token": csrf}, timeout=TIMEOUT).status_code == 204
    assert s.get(console_url(hearth) + "/api/overview", timeout=TIMEOUT).status_code == 401


def test_changes_without_the_csrf_token_are_refused(hearth):
    s, info = signed_in_session(hearth)
    url = console_url(hearth) + "/api/proxy/firestore/v1/projects/demo-hearth/databases/(default)/documents/csrf?documentId=x"
    body = {"fields": {"a": {"stringValue": "b"}}}
    assert s.post(url, json=body, timeout=TIMEOUT).status_code == 403
    assert s.post(url, json=body, headers={"X-CSRF-Token": "wrong"}, timeout=TIMEOUT).status_code == 403
    evil = s.post(url, json=body, headers={"X-CSRF-Token": info["csrfToken"], "Origin": "http://evil.example"}, timeout=TIMEOUT)
    assert evil.status_code == 403
    doc = requests.get(f"{hearth.rest_base}/v1/projects/{PROJECT}/databases/(default)/documents/csrf/x",
                       headers={"Authorization": "Bearer owner"}, timeout=TIMEOUT)
    assert doc.status_code == 404, "a refused change must not be applied"
    ok = s.post(url, json=body, headers={"X-CSRF-Token": info["csrfToken"], "Origin": console_url(hearth)}, timeout=TIMEOUT)
    assert ok.status_code == 200, ok.text


@pytest.mark.parametrize("method,path,body,status", [
    ("POST", "/api/session", "{", 400),                                            # not JSON
    ("POST", "/api/session", '{"method": "magic"}', 400),                          # unknown sign-in method
    ("POST", "/api/rules/simulate", '{"service": "firestore", "case": {"method": "fly", "path": "/x"}}', 400),
    ("POST", "/api/rules/simulate", '{"service": "database", "case": {}}', 400),
    ("POST", "/api/firestore/indexes?collectionGroup=tasks", '{"fields": [{"fieldPath": "a", "order": "ASCENDING"}]}', 400),
    ("POST", "/api/firestore/indexes?collectionGroup=a/b", '{"fields": []}', 400),
    ("GET", "/api/firestore/listen?query=%7Bnot%20json", None, 400),
    ("GET", "/api/proxy/nowhere/v1/x", None, 404),
    ("GET", "/api/nothing-here", None, 404),
])
def test_bad_input_gets_a_clear_4xx(hearth, method, path, body, status):
    s, info = signed_in_session(hearth)
    headers = {"X-CSRF-Token": info["csrfToken"], "Content-Type": "application/json"}
    r = s.request(method, console_url(hearth) + path, data=body, headers=headers, timeout=TIMEOUT)
    assert r.status_code == status, r.text
    assert r.json()["error"]["message"], r.text


def test_sign_in_refuses_wrong_credentials_and_non_admin_accounts(hearth):
    base = console_url(hearth)
    assert requests.post(base + "/api/session", json={"method": "token", "token": "nope"}, timeout=TIMEOUT).status_code == 401
    assert requests.post(base + "/api/session", json={"method": "password", "email": ADMIN_EMAIL, "password": "wrong"},
                         timeout=TIMEOUT).status_code == 401
    # An ordinary account, signed up through the auth port: no "admin" claim.
    email = f"user-{uuid.uuid4().hex[:8]}@example.com"
    r = requests.post(f"{hearth.auth_base}/identitytoolkit.googleapis.com/v1/accounts:signUp?key=fake",
                      json={"email": email, "password": "secret123", "returnSecureToken": True}, timeout=TIMEOUT)
    assert r.status_code == 200, r.text
    refused = requests.post(base + "/api/session", json={"method": "password", "email": email, "password": "secret123"},
                            timeout=TIMEOUT)
    assert refused.status_code == 403
    assert "not a console user" in refused.json()["error"]["message"]
    # A form post from another site (no JSON content type) never reaches the credential check.
    assert requests.post(base + "/api/session", data={"method": "token", "token": ADMIN_TOKEN}, timeout=TIMEOUT).status_code == 400


def test_production_mode_refuses_the_emulator_owner_credential(tmp_path_factory):
    srv = _start(tmp_path_factory, "console-prod", emulator=False, console_user=False)
    try:
        base = console_url(srv)
        assert requests.post(base + "/api/session", json={"method": "token", "token": "owner"}, timeout=TIMEOUT).status_code == 401
        s, info = signed_in_session(srv)
        assert info["emulator"] is False and info["user"]["name"] == "admin-token"
        # The proxy presents the console's own credential: rules do not apply to the admin.
        r = s.get(base + f"/api/proxy/firestore/v1/projects/{PROJECT}/databases/(default)/documents/tasks", timeout=TIMEOUT)
        assert r.status_code == 200, r.text
    finally:
        srv.stop()


def test_public_urls_are_what_the_console_shows_and_links_to(tmp_path_factory):
    """Behind a load balancer (--public-url), the console names the load balancer's URLs, not its
    own ports: the session's publicURLs, the overview's "Clients reach it at", the metrics link."""
    binary = _binary()
    workdir = tmp_path_factory.mktemp("console-public")
    srv = HearthServer(binary, workdir, emulator=True, extra_args=(
        "--admin-token", ADMIN_TOKEN,
        "--public-url", "firestore=https://firestore.example.com/",
        "--public-url", "api=https://api.example.com/hearth",
    ))
    srv.start()
    try:
        s, info = signed_in_session(srv)
        assert info["publicURLs"]["firestore"] == "https://firestore.example.com", info
        overview = s.get(console_url(srv) + "/api/overview", timeout=TIMEOUT).json()
        services = {entry["name"]: entry for entry in overview["services"]}
        assert services["firestore"]["publicURL"] == "https://firestore.example.com"
        assert services["api"]["publicURL"] == "https://api.example.com/hearth"
        assert overview["metricsURL"] == "https://api.example.com/hearth/metrics"
        if srv.replicas == 1:
            # Unnamed services: the host the browser used and the service's own port.
            assert info["publicURLs"]["auth"] == f"http://localhost:{srv.ports['auth']}"
            assert services["auth"]["publicURL"] is None
    finally:
        srv.stop()


# ------------------------------------------------------------------------------------------ browser


def _chromium():
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        if os.environ.get("HEARTH_REQUIRE_BROWSER") == "1":
            pytest.fail("selenium is not installed (scripts/test installs it)")
        pytest.skip("selenium is not installed")
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if not binary or not driver:
        if os.environ.get("HEARTH_REQUIRE_BROWSER") == "1":
            pytest.fail("chromium and chromium-driver are not installed (scripts/test installs them)")
        pytest.skip("chromium or chromedriver is missing")
    return webdriver, Service, binary, driver


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    webdriver, Service, binary, driver = _chromium()
    downloads = tmp_path_factory.mktemp("downloads")
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1280,800",
                "--no-first-run", "--disable-extensions"):
        options.add_argument(arg)
    options.add_experimental_option("prefs", {
        "download.default_directory": str(downloads), "download.prompt_for_download": False,
        "safebrowsing.enabled": False,
    })
    d = webdriver.Chrome(service=Service(driver), options=options)
    d.set_window_size(1280, 800)
    d.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)})
    d.downloads = downloads
    yield d
    d.quit()


def wait_for(browser, condition, what: str, timeout: float = TIMEOUT):
    from selenium.common.exceptions import StaleElementReferenceException, NoSuchElementException
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            value = condition()
            if value:
                return value
        except (StaleElementReferenceException, NoSuchElementException) as e:
            last = e
        time.sleep(0.1)
    shot(browser, "FAILED-" + what.replace(" ", "-")[:40])
    raise AssertionError(f"timed out waiting for {what} ({last})\npage text:\n{browser.find_element('tag name', 'body').text[:3000]}")


def css(browser, selector):
    return browser.find_element("css selector", selector)


def css_all(browser, selector):
    return browser.find_elements("css selector", selector)


def button(browser, text, within=None):
    scope = within or browser
    for b in scope.find_elements("css selector", "button, label.button"):
        if b.text.strip() == text and b.is_displayed():
            return b
    raise AssertionError(f"no visible button {text!r}")


def shot(browser, name: str, narrow: bool = True):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(ARTIFACTS / f"{name}.png"))
    if narrow:
        browser.set_window_size(390, 844)
        time.sleep(0.3)
        browser.save_screenshot(str(ARTIFACTS / f"{name}-narrow.png"))
        browser.set_window_size(1280, 800)
        time.sleep(0.2)


def go(browser, srv, fragment: str):
    browser.get(console_url(srv) + "/#/" + fragment)
    wait_for(browser, lambda: css_all(browser, "main h1"), f"the {fragment} page")


def test_browser_drives_the_console(hearth, browser):
    base = console_url(hearth)
    # --- sign in as the console user
    browser.get(base + "/")
    wait_for(browser, lambda: css_all(browser, "form #email"), "the sign-in form")
    shot(browser, "00-sign-in")
    css(browser, "#email").send_keys(ADMIN_EMAIL)
    css(browser, "#password").send_keys(ADMIN_PASSWORD)
    button(browser, "Sign in").click()
    wait_for(browser, lambda: css(browser, "main h1").text == "Overview", "the overview")
    wait_for(browser, lambda: "console" in css(browser, "main").text and "Recent errors" in css(browser, "main").text, "overview content")
    shot(browser, "01-overview")

    # --- Firestore: a collection and a typed document, refusing a bad value inline first
    go(browser, hearth, "firestore/data")
    button(browser, "+ Start collection").click()
    dialog = wait_for(browser, lambda: css(browser, "dialog[open]"), "the new-collection dialog")
    css(browser, "#new-collection").send_keys("tasks")
    css(browser, "#new-document").send_keys("t1")
    rows = dialog.find_elements("css selector", ".field")
    rows[0].find_element("css selector", "input.key").send_keys("title")
    rows[0].find_element("css selector", "input[aria-label=value]").send_keys("Buy milk")
    def new_field(name, type_, value):
        button(browser, "+ Add field", dialog).click()  # the editor redraws itself: find it each time
        row = dialog.find_elements("css selector", ".field")[-1]
        row.find_element("css selector", "input.key").send_keys(name)
        from selenium.webdriver.support.ui import Select
        Select(row.find_element("css selector", "select[aria-label='field type']")).select_by_value(type_)
        row = dialog.find_elements("css selector", ".field")[-1]
        if value is not None:
            row.find_element("css selector", "input[aria-label=value]").send_keys(value)
        return row

    new_field("owner", "string", "alice")
    new_field("priority", "number", "3")
    new_field("due", "timestamp", None)
    new_field("done", "boolean", None)
    # Adding a field redraws the editor: find the timestamp's input only now.
    due = [r for r in dialog.find_elements("css selector", ".field")
           if r.find_element("css selector", "input.key").get_attribute("value") == "due"][0]
    due_input = due.find_element("css selector", "input[aria-label=value]")
    due_input.clear()
    due_input.send_keys("next tuesday")
    button(browser, "Save", dialog).click()
    wait_for(browser, lambda: due_input.get_attribute("aria-invalid") == "true", "the inline timestamp error")
    assert "RFC 3339" in dialog.text
    shot(browser, "02-firestore-invalid-field", narrow=False)
    doc_url = f"{hearth.rest_base}/v1/projects/{PROJECT}/databases/(default)/documents/tasks/t1"
    assert requests.get(doc_url, headers={"Authorization": "Bearer owner"}, timeout=TIMEOUT).status_code == 404, \
        "an invalid field must not be sent"
    due_input.clear()
    due_input.send_keys("2026-12-01T09:30:00Z")
    button(browser, "Save", dialog).click()
    wait_for(browser, lambda: "/firestore/data/tasks/t1" in browser.current_url, "the new document")
    wait_for(browser, lambda: "Buy milk" in css(browser, ".columns").text, "the document's fields")
    stored = requests.get(doc_url, headers={"Authorization": "Bearer owner"}, timeout=TIMEOUT).json()["fields"]
    assert stored["title"] == {"stringValue": "Buy milk"}
    assert stored["priority"] == {"integerValue": "3"}
    assert stored["due"] == {"timestampValue": "2026-12-01T09:30:00Z"}
    assert stored["done"] == {"booleanValue": True}
    shot(browser, "03-firestore-document")

    # --- edit a field
    button(browser, "Edit").click()
    title = wait_for(browser, lambda: [r for r in css_all(browser, ".columns .field") if
                                       r.find_element("css selector", "input.key").get_attribute("value") == "title"], "the editor")[0]
    value = title.find_element("css selector", "[aria-label=value]")
    value.clear()
    value.send_keys("Buy oat milk")
    button(browser, "Save").click()
    wait_for(browser, lambda: requests.get(doc_url, headers={"Authorization": "Bearer owner"}, timeout=TIMEOUT)
             .json()["fields"]["title"] == {"stringValue": "Buy oat milk"}, "the edited field to be stored")
    wait_for(browser, lambda: "Buy oat milk" in css(browser, ".columns").text, "the edited field on the page")

    # --- a live query: a document written by google-cloud-firestore appears
    go(browser, hearth, "firestore/query")
    css(browser, "#q-collection").send_keys("tasks")
    css(browser, "#q-live").click()
    button(browser, "Run").click()
    wait_for(browser, lambda: "tasks/t1" in css(browser, "#query-results").text, "the query's first results")
    wait_for(browser, lambda: css(browser, "#q-live-badge").text == "live", "the live badge")
    from google.cloud import firestore
    os.environ["FIRESTORE_EMULATOR_HOST"] = f"127.0.0.1:{hearth.port}"
    try:
        client = firestore.Client(project=PROJECT)
        client.collection("tasks").document("from-python").set({"title": "written by python", "owner": "bob"})
    finally:
        os.environ.pop("FIRESTORE_EMULATOR_HOST", None)
    wait_for(browser, lambda: "tasks/from-python" in css(browser, "#query-results").text, "the Python client's document, live")
    assert "written by python" in css(browser, "#query-results").text
    shot(browser, "04-firestore-live-query")

    # --- rules playground: the deciding line
    go(browser, hearth, "rules/firestore")
    wait_for(browser, lambda: css_all(browser, "#rules-source .line"), "the rules source")
    from selenium.webdriver.support.ui import Select
    Select(css(browser, "#sim-method")).select_by_value("get")
    css(browser, "#sim-path").send_keys("/tasks/t1")
    css(browser, "#sim-uid").send_keys("alice")
    css(browser, "#sim-existing").send_keys('{"owner": "alice"}')
    button(browser, "Simulate").click()
    verdict = wait_for(browser, lambda: css(browser, "#sim-verdict"), "the verdict")
    assert verdict.text == "ALLOW"
    line = css(browser, "#sim-line").text
    assert "line 5" in line, line
    assert css_all(browser, "#rules-source .line.decisive")[0].get_attribute("data-line") == "5"
    css(browser, "#sim-uid").clear()
    css(browser, "#sim-uid").send_keys("mallory")
    button(browser, "Simulate").click()
    wait_for(browser, lambda: css(browser, "#sim-verdict").text == "DENY", "a denial")
    assert "false at" in css(browser, "#sim-explanation").text
    shot(browser, "05-rules-playground")

    # --- Authentication: create and disable a user
    go(browser, hearth, "auth")
    button(browser, "Add user").click()
    wait_for(browser, lambda: css(browser, "dialog[open]"), "the new-user dialog")
    email = f"made-in-console-{uuid.uuid4().hex[:6]}@example.com"
    css(browser, "#new-email").send_keys(email)
    css(browser, "#new-password").send_keys("abc")
    button(browser, "Add user", css(browser, "dialog[open]")).click()
    wait_for(browser, lambda: css(browser, "#new-password").get_attribute("aria-invalid") == "true", "the short-password error")
    css(browser, "#new-password").send_keys("defgh")
    button(browser, "Add user", css(browser, "dialog[open]")).click()
    row = wait_for(browser, lambda: [r for r in css_all(browser, "#users tbody tr") if email in r.text], "the new user's row")[0]
    uid = row.get_attribute("data-uid")
    button(browser, "Disable", row).click()
    wait_for(browser, lambda: any(email in r.text and "disabled" in r.text for r in css_all(browser, "#users tbody tr")), "the disabled badge")
    looked = requests.post(f"{hearth.auth_base}/identitytoolkit.googleapis.com/v1/projects/{PROJECT}/accounts:lookup",
                           json={"localId": [uid]}, headers={"Authorization": "Bearer owner"}, timeout=TIMEOUT).json()
    assert looked["users"][0]["disabled"] is True
    shot(browser, "06-authentication")

    # --- Storage: upload with progress, then download the same bytes
    go(browser, hearth, "storage")
    payload = os.urandom(300_000)
    source = browser.downloads.parent / f"upload-{uuid.uuid4().hex[:6]}.bin"
    source.write_bytes(payload)
    css(browser, "#upload-file").send_keys(str(source))
    row = wait_for(browser, lambda: [r for r in css_all(browser, "#objects tbody tr") if source.name in r.text], "the uploaded file", 40)[0]
    shot(browser, "07-storage")
    button(browser, "Download", row).click()
    target = browser.downloads / source.name
    wait_for(browser, lambda: target.exists() and target.stat().st_size == len(payload), "the download")
    assert target.read_bytes() == payload

    # --- its metadata and a new download token, whose URL serves the bytes without credentials
    button(browser, "Details", row).click()
    wait_for(browser, lambda: css_all(browser, "dialog[open] #tokens li a"), "the file's download URL")
    before = {a.get_attribute("href") for a in css_all(browser, "#tokens li a")}
    button(browser, "+ Create token").click()
    wait_for(browser, lambda: len(css_all(browser, "#tokens li a")) == len(before) + 1, "a second download token")
    fresh = ({a.get_attribute("href") for a in css_all(browser, "#tokens li a")} - before).pop()
    assert requests.get(fresh, timeout=TIMEOUT).content == payload
    shot(browser, "07-storage-details", narrow=False)
    button(browser, "Close").click()

    # --- a composite index, created and listed
    go(browser, hearth, "firestore/indexes")
    wait_for(browser, lambda: "Create an index" in css(browser, "main").text, "the indexes page")
    css(browser, "#ix-group").send_keys("tasks")
    fields = css_all(browser, "input[aria-label='index field']")
    fields[0].send_keys("owner")
    fields[1].send_keys("priority")
    Select(css_all(browser, "select[aria-label='index order']")[1]).select_by_value("DESCENDING")
    button(browser, "Create index").click()
    wait_for(browser, lambda: css_all(browser, "#indexes") and "owner ascending, priority descending" in css(browser, "#indexes").text,
             "the new index in the list")
    shot(browser, "08-firestore-indexes")

    # --- coverage of the rules since they loaded (the Python client's writes ran as admin: the
    # playground's simulations are not counted, so every expression still shows 0)
    go(browser, hearth, "rules/firestore")
    wait_for(browser, lambda: css_all(browser, "#rules-source .line"), "the rules source")
    button(browser, "Show coverage").click()
    wait_for(browser, lambda: "expressions evaluated since the rules loaded" in css(browser, "main").text, "the coverage summary")
    # --- the Realtime Database tree, live, and a child added from the console
    db = f"http://127.0.0.1:{hearth.ports['database']}"
    ns = f"{PROJECT}-default-rtdb"
    owner = {"Authorization": "Bearer owner"}
    r = requests.put(f"{db}/bottles/b1.json?ns={ns}", json={"status": "live", "content": {"image_path": "bottles/b1/content/message_image.jpg"}},
                     headers=owner, timeout=TIMEOUT)
    assert r.status_code == 200, r.text
    go(browser, hearth, "database")
    wait_for(browser, lambda: "bottles" in css(browser, "#db-tree").text, "the tree")
    wait_for(browser, lambda: "live" == css(browser, ".badge.live").text, "the live badge")
    requests.put(f"{db}/bottles/b2.json?ns={ns}", json={"status": "dead"}, headers=owner, timeout=TIMEOUT)
    wait_for(browser, lambda: "b2" in css(browser, "#db-tree").text, "a bottle written elsewhere, live")
    button(browser, "Add child").click()
    wait_for(browser, lambda: css(browser, "dialog[open]"), "the add-child dialog")
    css(browser, "#db-key").send_keys("motd")
    area = css(browser, "#db-child-value")
    area.clear()
    area.send_keys('"hello from the console"')
    button(browser, "Add", css(browser, "dialog[open]")).click()
    wait_for(browser, lambda: requests.get(f"{db}/motd.json?ns={ns}", headers=owner, timeout=TIMEOUT).json() == "hello from the console",
             "the console's write in the database")
    wait_for(browser, lambda: "motd" in css(browser, "#db-tree").text, "the console's write in the tree")
    shot(browser, "09-realtime-database")
    # Import a JSON file at a path of its own (it replaces that path, after a confirmation).
    go(browser, hearth, "database/imports")
    wait_for(browser, lambda: "nothing is stored here" in css(browser, "#db-tree").text, "the empty path")
    exported = browser.downloads.parent / "export.json"
    exported.write_text(json.dumps({"users": {"alice": {"name": "Alice"}}, "count": 2}))
    css(browser, "#db-import").send_keys(str(exported))
    wait_for(browser, lambda: css(browser, "dialog[open]"), "the import confirmation")
    button(browser, "Import", css(browser, "dialog[open]")).click()
    wait_for(browser, lambda: requests.get(f"{db}/imports.json?ns={ns}", headers=owner, timeout=TIMEOUT).json()
             == {"users": {"alice": {"name": "Alice"}}, "count": 2}, "the imported JSON")
    wait_for(browser, lambda: "alice" in css(browser, "#db-tree").text, "the imported tree")


def test_service_account_sign_in_keeps_the_key_in_the_browser(tmp_path_factory, browser):
    binary = _binary()
    srv = _start(tmp_path_factory, "console-sa", emulator=False, console_user=False)
    try:
        key_file = srv.workdir / "sa.json"
        subprocess.run([binary, "admin", "service-account", "create", "--data-dir", str(srv.data_dir), "--project", PROJECT,
                        "--out", str(key_file), "--auth-port", str(srv.auth_port), "--name", "console-sa"],
                       check=True, capture_output=True, timeout=120)
        browser.delete_all_cookies()
        browser.get(console_url(srv) + "/")
        wait_for(browser, lambda: css_all(browser, "form #email"), "the sign-in form")
        button(browser, "Service account key").click()
        area = css(browser, "#key")
        browser.execute_script("arguments[0].value = arguments[1];", area, key_file.read_text())
        button(browser, "Sign in").click()
        wait_for(browser, lambda: css_all(browser, "main h1") and css(browser, "main h1").text == "Overview", "the overview")
        assert "console-sa@" in css(browser, ".sidebar").text
    finally:
        srv.stop()
