#!/usr/bin/env python3
"""Replays ../cases-*.json (Firestore cases) against Google's Firestore emulator on port 8811
and reports every case whose decision differs from the fixture's `expect`. For each case:
clear the database, store `documents` and `resource` as admin, then send the request as
the case's user (unsigned `alg: none` ID token): GET, PATCH (create/update), DELETE, or
runQuery (list). 403 = deny; any other status = allow.
    python3 case_check.py [file-substring]
"""
import base64, glob, json, os, sys
from emulator_check import BASE, P, http, b64, put_rules
import time as _time

HERE = os.path.dirname(os.path.abspath(__file__))
DOCS = f"{BASE}/v1/projects/{P}/databases/(default)/documents"
OWNER = {"Authorization": "Bearer owner"}

def token(auth):
    if auth is None: return None
    uid = auth if isinstance(auth, str) else auth["uid"]
    now = int(_time.time())
    body = {"sub": uid, "user_id": uid, "aud": P, "iss": "https://securetoken.google.com/" + P, "iat": now,
            "exp": now + 3600, "auth_time": now, "firebase": {"sign_in_provider": "custom", "identities": {}}}
    if isinstance(auth, dict): body.update(auth.get("token", {}))
    return b64({"alg": "none", "typ": "JWT"}) + "." + b64(body) + "."

def rest(v):
    if v is None: return {"nullValue": None}
    if isinstance(v, bool): return {"booleanValue": v}
    if isinstance(v, int): return {"integerValue": str(v)}
    if isinstance(v, float): return {"doubleValue": v}
    if isinstance(v, str): return {"stringValue": v}
    if isinstance(v, list): return {"arrayValue": {"values": [rest(x) for x in v]}}
    if isinstance(v, dict):
        if len(v) == 1:
            (k, x), = v.items()
            if k == "$timestamp": return {"timestampValue": x}
            if k == "$bytes": return {"bytesValue": base64.b64encode(bytes.fromhex(x)).decode()}
            if k == "$latlng": return {"geoPointValue": {"latitude": x[0], "longitude": x[1]}}
            if k == "$ref": return {"referenceValue": f"projects/{P}" + x}
            if k == "$float": return {"doubleValue": float(x)}
        return {"mapValue": {"fields": {k: rest(x) for k, x in v.items()}}}
    raise ValueError(v)

OPS = {"==": "EQUAL", "!=": "NOT_EQUAL", "<": "LESS_THAN", "<=": "LESS_THAN_OR_EQUAL", ">": "GREATER_THAN",
       ">=": "GREATER_THAN_OR_EQUAL", "in": "IN", "not-in": "NOT_IN", "array-contains": "ARRAY_CONTAINS",
       "array-contains-any": "ARRAY_CONTAINS_ANY"}

def flt(t):
    return {"fieldFilter": {"field": {"fieldPath": t[0]}, "op": OPS[t[1]], "value": rest(t[2])}}

def structured(q, coll, all_descendants):
    sq = {"from": [{"collectionId": coll, "allDescendants": all_descendants}]}
    parts = [flt(t) for t in q.get("where", [])]
    if "or" in q:
        parts.append({"compositeFilter": {"op": "OR", "filters": [
            {"compositeFilter": {"op": "AND", "filters": [flt(t) for t in b]}} if len(b) > 1 else flt(b[0]) for b in q["or"]]}})
    if len(parts) == 1: sq["where"] = parts[0]
    elif parts: sq["where"] = {"compositeFilter": {"op": "AND", "filters": parts}}
    if "limit" in q: sq["limit"] = q["limit"]
    if q.get("offset"): sq["offset"] = q["offset"]
    if "orderBy" in q:
        sq["orderBy"] = [{"field": {"fieldPath": o[0]}, "direction": "DESCENDING" if len(o) > 1 and o[1] == "desc" else "ASCENDING"} for o in q["orderBy"]]
    return sq

def store(path, data):
    st, txt = http("PATCH", f"{DOCS}/{path}", {"fields": {k: rest(v) for k, v in data.items()}}, OWNER)
    if st != 200: raise RuntimeError(f"store {path}: {st} {txt[:200]}")

def decide(case, documents):
    http("DELETE", f"{BASE}/emulator/v1/projects/{P}/databases/(default)/documents")
    for p, d in (documents or {}).items(): store(p, d)
    path, method = case["path"], case["method"]
    if "resource" in case and case["resource"] is not None: store(path, case["resource"])
    t = token(case.get("auth"))
    h = {"Authorization": "Bearer " + t} if t else {}
    if method == "get": st, _ = http("GET", f"{DOCS}/{path}", None, h)
    elif method in ("create", "update"):
        st, _ = http("PATCH", f"{DOCS}/{path}", {"fields": {k: rest(v) for k, v in case.get("data", {}).items()}}, h)
    elif method == "delete": st, _ = http("DELETE", f"{DOCS}/{path}", None, h)
    else:
        q = case.get("query", {})
        if "collectionGroup" in case:
            parent = f"{DOCS}/{path}" if path else DOCS
            st, _ = http("POST", parent + ":runQuery", {"structuredQuery": structured(q, case["collectionGroup"], True)}, h)
        else:
            segs = path.split("/")
            parent = DOCS + ("/" + "/".join(segs[:-1]) if len(segs) > 1 else "")
            st, _ = http("POST", parent + ":runQuery", {"structuredQuery": structured(q, segs[-1], False)}, h)
    return "deny" if st == 403 else "allow"

def main():
    only = sys.argv[1] if len(sys.argv) > 1 else ""
    checked = disagree = skipped = 0
    for f in sorted(glob.glob(os.path.join(HERE, "..", "cases-*.json"))):
        if only not in f: continue
        d = json.load(open(f))
        if "firebase.storage" in "\n".join(d["rules"]):
            skipped += len(d["cases"]); continue
        loaded = None
        for c in d["cases"]:
            if str(c.get("emulator", "")).startswith("skip"): skipped += 1; continue
            rules = "\n".join(c.get("rules", d["rules"])) + "\n"
            if rules != loaded:
                st, txt = put_rules(rules)
                loaded = rules
                compiled = st == 200
            if c["expect"] == "compile error" or not compiled:
                got = "allow" if compiled else "compile error"
            else:
                got = decide(c, d.get("documents"))
            checked += 1
            if got != c["expect"]:
                disagree += 1
                print(f"{os.path.basename(f)}: {c['name']}: fixture {c['expect']}, emulator {got}")
    print(f"checked {checked}, disagreements {disagree}, skipped {skipped}")

if __name__ == "__main__":
    main()
