#!/usr/bin/env python3
"""Checks that Google's emulator rejects the files of ../diagnostics-compile.json that have
errors and accepts those with only warnings."""
import json, os
from emulator_check import put_rules
HERE = os.path.dirname(os.path.abspath(__file__))
d = json.load(open(os.path.join(HERE, "..", "diagnostics-compile.json")))
bad = 0
for c in d["cases"]:
    if c["emulator"] == "skip": continue
    st, txt = put_rules("\n".join(c["rules"]))
    got = "accepts" if st == 200 else "rejects"
    msg = json.loads(txt)["error"]["message"].replace("\n", " | ") if st != 200 else ""
    flag = "" if got == c["emulator"] else "   <-- DISAGREES"
    if flag: bad += 1
    print(f"{c['name']}: {got} {msg[:150]}{flag}")
print("disagreements:", bad)
