"""Every acknowledged Realtime Database write survives SIGKILL in the middle of a write storm."""

from __future__ import annotations

import threading

import pytest
import requests

from dbutil import DatabaseRest, unique

pytestmark = pytest.mark.hearth_only(reason="the Realtime Database is served by Hearth, not by the Firestore emulator")


def test_acknowledged_writes_survive_sigkill_during_writes(server, restart_server):
    p = f"/{unique()}"
    acked: dict[str, dict] = {}
    pushed: list[str] = []
    stop = threading.Event()
    lock = threading.Lock()

    def writer(w: int):
        db = DatabaseRest(server)
        i = 0
        while not stop.is_set():
            value = {"w": w, "i": i, "pad": "x" * 200}
            try:
                r = db.put(f"{p}/w{w}/k{i}.json", value, timeout=5)
                if r.status_code == 200:
                    with lock:
                        acked[f"w{w}/k{i}"] = value
                r = db.post(f"{p}/pushed.json", {"w": w, "i": i}, timeout=5)
                if r.status_code == 200:
                    with lock:
                        pushed.append(r.json()["name"])
            except requests.RequestException:
                return
            i += 1

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    while True:
        with lock:
            if len(acked) >= 200:
                break
        threading.Event().wait(0.01)
    restart_server()  # SIGKILL while the writers are still writing
    stop.set()
    for t in threads:
        t.join()

    db = DatabaseRest(server)
    tree = db.get(f"{p}.json").json()
    for key, value in acked.items():
        w, k = key.split("/")
        assert tree[w][k] == value
    for name in pushed:
        assert name in tree["pushed"]
    # the restarted server keeps going, push ids still increase
    name = db.post(f"{p}/pushed.json", "after").json()["name"]
    assert name > max(pushed)
