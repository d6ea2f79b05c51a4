#!/usr/bin/env python3
"""Server CPU time per query (utime + stime of the `hearth serve` process) for one binary.

Starts `hearth serve --emulator` on a temporary data directory, loads DOCS documents over REST,
runs N of each query kind over REST from one client, and prints the server's CPU ms and the
wall ms per query as JSON. CPU time excludes waiting for a core, so two builds can be compared
on a loaded machine by running this for each in turns (docs/performance.md, "Scans behind
`snapshot(_:)`").

Usage: N=600 DOCS=2000 scripts/query-cpu.py path/to/hearth LABEL
"""
import json, os, shutil, signal, subprocess, sys, tempfile, time, urllib.request
bin_, label = sys.argv[1], sys.argv[2]
N = int(os.environ.get("N", "300"))
DOCS = int(os.environ.get("DOCS", "2000"))
work = tempfile.mkdtemp(prefix="hearth-query-cpu-")
ready = os.path.join(work, "ready.json")
cmd = [bin_, "serve", "--emulator", "--data-dir", os.path.join(work, "data"), "--project", "demo-hearth",
       "--host", "127.0.0.1"] + sum([[f"--{p}-port", "0"] for p in ["firestore", "storage", "s3", "database", "auth", "api", "console"]], []) + ["--ready-file", ready]
log = open(os.path.join(work, "log"), "wb")
proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
try:
    for _ in range(1200):
        if os.path.exists(ready):
            try:
                ports = json.load(open(ready)); break
            except Exception: pass
        time.sleep(0.5)
    else:
        raise SystemExit("not ready")
    port = ports["firestore"]
    base = f"http://127.0.0.1:{port}/v1/projects/demo-hearth/databases/(default)/documents"
    def post(path, body):
        req = urllib.request.Request(base + path, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json", "Authorization": "Bearer owner"})
        with urllib.request.urlopen(req, timeout=600) as r: return json.loads(r.read() or b"null")
    name = lambda i: f"projects/demo-hearth/databases/(default)/documents/q/d{i:09d}"
    for start in range(0, DOCS, 500):
        writes = [{"update": {"name": name(i), "fields": {
            "n": {"integerValue": str(i)}, "group": {"integerValue": str(i % 100)},
            "score": {"doubleValue": (i % 997) / 3}, "title": {"stringValue": "hello world"}}}}
            for i in range(start, min(DOCS, start + 500))]
        post(":commit", {"writes": writes})
    queries = {
        "composite index (group == 7, score desc, limit 20)": {"structuredQuery": {"from": [{"collectionId": "q"}],
            "where": {"fieldFilter": {"field": {"fieldPath": "group"}, "op": "EQUAL", "value": {"integerValue": "7"}}},
            "orderBy": [{"field": {"fieldPath": "score"}, "direction": "DESCENDING"}], "limit": 20}},
        "name order, limit 20": {"structuredQuery": {"from": [{"collectionId": "q"}], "limit": 20}},
        "single-field range (n >= 1000, limit 20)": {"structuredQuery": {"from": [{"collectionId": "q"}],
            "where": {"fieldFilter": {"field": {"fieldPath": "n"}, "op": "GREATER_THAN_OR_EQUAL", "value": {"integerValue": "1000"}}}, "limit": 20}},
        "no index: whole collection, sorted (score asc, __name__ desc)": {"structuredQuery": {"from": [{"collectionId": "q"}],
            "orderBy": [{"field": {"fieldPath": "score"}, "direction": "ASCENDING"}, {"field": {"fieldPath": "__name__"}, "direction": "DESCENDING"}], "limit": 20}},
        "OR of two equalities (2 scans)": {"structuredQuery": {"from": [{"collectionId": "q"}],
            "where": {"compositeFilter": {"op": "OR", "filters": [
                {"fieldFilter": {"field": {"fieldPath": "group"}, "op": "EQUAL", "value": {"integerValue": "3"}}},
                {"fieldFilter": {"field": {"fieldPath": "group"}, "op": "EQUAL", "value": {"integerValue": "4"}}}]}}, "limit": 20}},
    }
    for q in queries.values(): post(":runQuery", q)  # warm up, creates the composite index
    count = {"structuredAggregationQuery": {"structuredQuery": {"from": [{"collectionId": "q"}],
        "where": {"fieldFilter": {"field": {"fieldPath": "group"}, "op": "EQUAL", "value": {"integerValue": "7"}}}},
        "aggregations": [{"alias": "c", "count": {}}]}}
    post(":runAggregationQuery", count)
    results = {}
    tick = os.sysconf("SC_CLK_TCK")
    def cpu():
        f = open(f"/proc/{proc.pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / tick
    def measure(label, fn):
        c0, t0 = cpu(), time.time()
        for _ in range(N): fn()
        c1, t1 = cpu(), time.time()
        results[label] = {"server_cpu_ms_per_op": round((c1 - c0) * 1000 / N, 3), "wall_ms_per_op": round((t1 - t0) * 1000 / N, 3)}
    for rnd in range(int(os.environ.get("ROUNDS", "1"))):
        for k, q in queries.items(): measure(f"{k} #{rnd}", lambda q=q: post(":runQuery", q))
        measure(f"count aggregation (group == 7) #{rnd}", lambda: post(":runAggregationQuery", count))
finally:
    os.killpg(proc.pid, signal.SIGTERM)
    proc.wait(timeout=120)
    shutil.rmtree(work, ignore_errors=True)
print(json.dumps({"label": label, "N": N, "docs": DOCS, "results": results}, indent=1))
