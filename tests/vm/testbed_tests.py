# SPDX-License-Identifier: GPL-2.0
"""The satellite testbed cannot rot: one short fetch per mode over the geo
profile (tools/testbed.py, set "check"), each checked by hash and proven to
have gone the mode's way (SA and les.ko counters)."""
import json
import os
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(T, out, ko):
    d = f"{out}/testbed"
    p = subprocess.run(["/usr/bin/python3", f"{REPO}/tools/testbed.py", "run", "--ko", ko,
                        "--out", d, "--set", "check"],
                       capture_output=True, text=True, timeout=1200)
    T.ok(p.returncode == 0, "testbed: the check set runs", p.stdout[-2000:] + p.stderr[-2000:])
    path = f"{d}/results.jsonl"
    rows = [json.loads(ln) for ln in open(path)] if os.path.exists(path) else []
    modes = {r["mode"] for r in rows}
    T.ok({"clear", "esp", "les", "les-observer"} <= modes, "testbed: every mode ran", sorted(modes))
    for r in rows:
        T.ok(r["status"] == "ok" and r["total"] >= r["bound"],
             f"testbed: {r['profile']} {r['mode']} {r['workload']} arrives intact, "
             "carried as the mode says, no faster than the bound", r)
