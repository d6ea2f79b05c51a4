#!/usr/bin/env python3
"""Checks the expression fixtures against Google's Firestore emulator and regenerates
../expr-*.json from the *.txt sources (one `expression<TAB>expected[<TAB>note]` per line).

Each expression becomes `match /p/eN { allow get: if (E); }` and `.../nN { allow get: if !(E); }`;
a GET as user alice gives true (eN allowed), false (nN allowed) or error (both denied).
Start the emulator first (see /work/shared/reference/firestore-emulator.md), port 8811:
    python3 emulator_check.py [--offline]      (--offline: regenerate JSON without the emulator)
"""
import base64, glob, json, os, sys, time, urllib.request

BASE, P = "http://127.0.0.1:8811", "demo-hearth"
HERE = os.path.dirname(os.path.abspath(__file__))

def b64(d): return base64.urlsafe_b64encode(json.dumps(d).encode()).rstrip(b"=").decode()

def token(uid):
    now = int(time.time())
    return b64({"alg": "none", "typ": "JWT"}) + "." + b64({
        "sub": uid, "user_id": uid, "aud": P, "iss": "https://securetoken.google.com/" + P, "iat": now,
        "exp": now + 3600, "auth_time": now, "firebase": {"sign_in_provider": "custom", "identities": {}}}) + "."

def http(method, url, body=None, headers=None):
    req = urllib.request.Request(url, method=method, data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req) as r: return r.status, r.read().decode()
    except urllib.error.HTTPError as e: return e.code, e.read().decode()

def put_rules(src):
    return http("PUT", f"{BASE}/emulator/v1/projects/{P}:securityRules",
                {"rules": {"files": [{"name": "firestore.rules", "content": src}]}})

def allowed(path):
    st, _ = http("GET", f"{BASE}/v1/projects/{P}/databases/(default)/documents/{path}",
                 headers={"Authorization": "Bearer " + token("alice")})
    return st == 404

def run(exprs):
    blocks = [f"    match /p/e{i} {{ allow get: if {e}; }}\n    match /p/n{i} {{ allow get: if !({e}); }}" for i, e in enumerate(exprs)]
    src = "rules_version = '2';\nservice cloud.firestore {\n  match /databases/{database}/documents {\n" + "\n".join(blocks) + "\n  }\n}\n"
    st, txt = put_rules(src)
    if st != 200: return None
    out = []
    for i in range(len(exprs)):
        a, b = allowed(f"p/e{i}"), allowed(f"p/n{i}")
        out.append("true" if a and not b else "false" if b and not a else "error" if not a and not b else "??")
    return out

def check(exprs):
    res = run(exprs)
    if res is not None: return res
    if len(exprs) == 1: return ["compile error"]
    mid = len(exprs) // 2
    return check(exprs[:mid]) + check(exprs[mid:])

def main():
    offline = "--offline" in sys.argv
    disagreements = 0
    for src in sorted(glob.glob(os.path.join(HERE, "*.txt"))):
        topic = os.path.splitext(os.path.basename(src))[0]
        rows = []
        for line in open(src, encoding="utf-8"):
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"): continue
            parts = line.split("\t")
            rows.append({"expr": parts[0], "expect": parts[1] if len(parts) > 1 else "?",
                         **({"note": parts[2]} if len(parts) > 2 else {})})
        if not offline:
            results = []
            for i in range(0, len(rows), 40): results += check([r["expr"] for r in rows[i:i + 40]])
            for r, e in zip(rows, results):
                r["emulator"] = e
                if e != r["expect"]:
                    disagreements += 1
                    print(f"{topic}: {r['expr']!r}: fixture {r['expect']}, emulator {e}" + (f"  ({r.get('note')})" if r.get("note") else ""))
        else:
            old = os.path.join(HERE, "..", f"expr-{topic}.json")
            if os.path.exists(old):
                prev = {x["expr"]: x.get("emulator") for x in json.load(open(old))["expressions"]}
                for r in rows:
                    if prev.get(r["expr"]): r["emulator"] = prev[r["expr"]]
        with open(os.path.join(HERE, "..", f"expr-{topic}.json"), "w", encoding="utf-8") as f:
            json.dump({"version": "2", "source": f"sources/{topic}.txt",
                       "emulator": "Google Cloud Firestore emulator 1.19.9 (cloud-firestore-emulator), checked by sources/emulator_check.py",
                       "expressions": rows}, f, indent=1, ensure_ascii=False)
            f.write("\n")
    print("disagreements:", disagreements)

if __name__ == "__main__":
    main()
