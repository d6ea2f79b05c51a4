"""Helpers for the Realtime Database conformance tests: raw REST against the database port."""

from __future__ import annotations

import json
import uuid

import requests

TIMEOUT_S = 30


def unique(prefix: str = "t") -> str:
    return f"{prefix}{uuid.uuid4().hex[:12]}"


class DatabaseRest:
    """Raw HTTP against the database port; `ns` and the owner credential by default."""

    def __init__(self, srv, ns: str | None = "conformance", token: str | None = "owner"):
        self.srv = srv
        self.ns = ns
        self.session = requests.Session()
        if token:
            self.session.headers["Authorization"] = f"Bearer {token}"

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.srv.ports['database']}"

    def request(self, method: str, path: str, params=None, **kw):
        params = dict(params or {})
        if self.ns is not None:
            params.setdefault("ns", self.ns)
        kw.setdefault("timeout", TIMEOUT_S)
        return self.session.request(method, self.base + path, params=params, **kw)

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def put(self, path, value, **kw):
        return self.request("PUT", path, data=json.dumps(value), **kw)

    def post(self, path, value, **kw):
        return self.request("POST", path, data=json.dumps(value), **kw)

    def patch(self, path, value, **kw):
        return self.request("PATCH", path, data=json.dumps(value), **kw)

    def delete(self, path, **kw):
        return self.request("DELETE", path, **kw)


class EventStream:
    """An SSE stream (`Accept: text/event-stream`) read event by event."""

    def __init__(self, db: DatabaseRest, path: str, params=None, headers=None):
        h = {"Accept": "text/event-stream", **(headers or {})}
        self.response = db.request("GET", path, params=params, headers=h, stream=True, timeout=(5, 10))
        self.lines = self.response.iter_lines(decode_unicode=True)

    def next(self) -> tuple[str, object]:
        event, data = None, None
        for line in self.lines:
            if line == "":
                if event is not None:
                    return event, data
                continue
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:"):
                data = json.loads(line[5:].strip())
        raise EOFError("stream ended")

    def close(self):
        self.response.close()
