#!/usr/bin/env python3
"""Server CPU time per REST create (utime + stime of the `hearth serve` process) for one binary.

Starts `hearth serve --emulator` on a temporary data directory, runs wrk (64 connections) posting
the `write-wrk` phase's four-field document to one collection for WARM seconds, then measures the
server's CPU time over SECONDS more of the same load, and prints CPU µs per create, the rate and
wrk's latencies as JSON. CPU time excludes waiting for a core, so two builds can be compared on a
loaded machine by running this for each in turns (docs/performance.md, "The write path").
With STRACE=1 the measured window runs under `strace -c -f` instead (system calls per create).
With PERF=file the measured window is sampled by `perf record -e cpu-clock -g` into that file.
With READS=seconds, point GETs of 500 of the created documents follow (wrk, same connections), with
their rate, latencies and CPU µs per get.

Usage: DURATION=10 WARM=5 scripts/write-cpu.py path/to/hearth LABEL
"""
import json, os, re, shutil, signal, subprocess, sys, tempfile, time
bin_, label = sys.argv[1], sys.argv[2]
SECONDS = int(os.environ.get("DURATION", "10"))
WARM = int(os.environ.get("WARM", "5"))
CONNS = int(os.environ.get("CONNS", "64"))
work = tempfile.mkdtemp(prefix="hearth-write-cpu-")
ready = os.path.join(work, "ready.json")
cmd = [bin_, "serve", "--emulator", "--data-dir", os.path.join(work, "data"), "--project", "demo-hearth",
       "--host", "127.0.0.1"] + sum([[f"--{p}-port", "0"] for p in ["firestore", "storage", "s3", "database", "auth", "api", "console"]], []) + ["--ready-file", ready]
log = open(os.path.join(work, "log"), "wb")
proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
BODY = '{"fields":{"title":{"stringValue":"hello world"},"n":{"integerValue":"7"},"group":{"integerValue":"7"},"score":{"doubleValue":2.5}}}'
lua = os.path.join(work, "post.lua")
with open(lua, "w") as f:
    f.write('wrk.method = "POST"\nwrk.body = \'%s\'\nwrk.headers["Content-Type"] = "application/json"\n'
            'wrk.headers["Authorization"] = "Bearer owner"\n' % BODY)


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        parts = f.read().rsplit(")", 1)[1].split()
    return int(parts[11]) + int(parts[12])  # utime, stime (whole process)


def wrk(url, seconds):
    out = subprocess.run(["wrk", "-t", "2", "-c", str(CONNS), "-d", f"{seconds}s", "--latency", "-s", lua, url],
                         capture_output=True, text=True, check=True).stdout
    n = int(re.search(r"(\d+) requests in", out).group(1))
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    lat = dict(re.findall(r"^\s+(50|99)%\s+(\S+)", out, re.M))
    return n, (int(non2xx.group(1)) if non2xx else 0), lat


try:
    for _ in range(1200):
        if os.path.exists(ready):
            try:
                ports = json.load(open(ready)); break
            except Exception: pass
        time.sleep(0.5)
    else:
        raise SystemExit("not ready")
    url = f"http://127.0.0.1:{ports['firestore']}/v1/projects/demo-hearth/databases/(default)/documents/wrk"
    wrk(url, WARM)
    hz = os.sysconf("SC_CLK_TCK")
    tracer = None
    if os.environ.get("STRACE"):
        tracer = subprocess.Popen(["strace", "-c", "-f", "-p", str(proc.pid), "-o", os.path.join(work, "strace.txt")])
        time.sleep(1)
    elif os.environ.get("PERF"):
        tracer = subprocess.Popen(["perf", "record", "-e", "cpu-clock", "-g", "-p", str(proc.pid), "-o", os.environ["PERF"]],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1)
    c0, t0 = cpu_ticks(proc.pid), time.monotonic()
    n, bad, lat = wrk(url, SECONDS)
    c1, t1 = cpu_ticks(proc.pid), time.monotonic()
    result = {"label": label, "creates": n, "non2xx": bad, "rate": round(n / (t1 - t0)),
              "cpu_us_per_create": round((c1 - c0) / hz * 1e6 / max(n, 1), 1), "p50": lat.get("50"), "p99": lat.get("99"),
              "load": os.getloadavg()[0]}
    if tracer:
        tracer.send_signal(signal.SIGINT)
        tracer.wait()
        if os.environ.get("STRACE"):
            text = open(os.path.join(work, "strace.txt")).read()
            calls = {}
            for line in text.splitlines():
                m = re.match(r"\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)$", line)
                if m: calls[m.group(2)] = round(int(m.group(1)) / max(n, 1), 2)
            result["syscalls_per_create"] = dict(sorted(calls.items(), key=lambda kv: -kv[1])[:12])
    reads = int(os.environ.get("READS", "0"))
    if reads:
        import urllib.request
        req = urllib.request.Request(url + "?pageSize=500", headers={"Authorization": "Bearer owner"})
        names = [d["name"].split("/documents/", 1)[1] for d in json.load(urllib.request.urlopen(req))["documents"]]
        get_lua = os.path.join(work, "get.lua")
        with open(get_lua, "w") as f:
            f.write("paths = {" + ",".join('"%s"' % n for n in names) + "}\n"
                    'wrk.headers["Authorization"] = "Bearer owner"\n'
                    "counter = 0\nrequest = function()\n counter = counter + 1\n"
                    ' return wrk.format("GET", "/v1/projects/demo-hearth/databases/(default)/documents/" .. paths[(counter % #paths) + 1])\nend\n')
        base = url.split("/v1/")[0]
        c0, t0 = cpu_ticks(proc.pid), time.monotonic()
        out = subprocess.run(["wrk", "-t", "2", "-c", str(CONNS), "-d", f"{reads}s", "--latency", "-s", get_lua, base],
                             capture_output=True, text=True, check=True).stdout
        c1, t1 = cpu_ticks(proc.pid), time.monotonic()
        n = int(re.search(r"(\d+) requests in", out).group(1))
        bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
        lat = dict(re.findall(r"^\s+(50|99)%\s+(\S+)", out, re.M))
        result.update({"gets": n, "gets_non2xx": int(bad.group(1)) if bad else 0, "get_rate": round(n / (t1 - t0)),
                       "cpu_us_per_get": round((c1 - c0) / hz * 1e6 / max(n, 1), 1), "get_p50": lat.get("50"), "get_p99": lat.get("99")})
    print(json.dumps(result))
finally:
    os.killpg(proc.pid, signal.SIGTERM)
    try: proc.wait(timeout=20)
    except subprocess.TimeoutExpired: os.killpg(proc.pid, signal.SIGKILL)
    shutil.rmtree(work, ignore_errors=True)
