# SPDX-License-Identifier: GPL-2.0
"""The satellite testbed cannot rot: one short fetch per mode over the geo
profile (tools/testbed.py, set "check"), each checked by hash and proven to
have gone the mode's way (SA and les.ko counters).  Then the acceleration
engine over a lossy hop (set "accel"): 1 MB through both PEPs, intact,
with what the hop lost sent again from the hub's copies."""
import json
import os
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def testbed(T, out, ko, name):
    d = f"{out}/testbed-{name}"
    p = subprocess.run(["/usr/bin/python3", f"{REPO}/tools/testbed.py", "run", "--ko", ko,
                        "--out", d, "--set", name],
                       capture_output=True, text=True, timeout=1200)
    T.ok(p.returncode == 0, f"testbed: the {name} set runs", p.stdout[-2000:] + p.stderr[-2000:])
    path = f"{d}/results.jsonl"
    return [json.loads(ln) for ln in open(path)] if os.path.exists(path) else []


def run(T, out, ko):
    rows = testbed(T, out, ko, "check")
    modes = {r["mode"] for r in rows}
    T.ok({"clear", "esp", "les", "les-observer", "les-pep"} <= modes, "testbed: every mode ran",
         sorted(modes))
    for r in rows:
        T.ok(r["status"] == "ok" and r["total"] >= r["bound"],
             f"testbed: {r['profile']} {r['mode']} {r['workload']} arrives intact, "
             "carried as the mode says, no faster than the bound", r)

    for r in testbed(T, out, ko, "accel"):
        c = r.get("counters", {})
        T.ok(r["status"] == "ok" and r["total"] >= r["bound"] and
             c.get("hpep_LesAccelEarlyAckedBytes", 0) >= r["bytes"] and
             c.get("hpep_LesAccelHopRetrans", 0) + c.get("hpep_LesAccelHopTimeouts", 0) > 0,
             f"testbed: {r['profile']} {r['mode']} {r['workload']} arrives intact, every byte "
             "ACKed early by the hub, what the hop lost sent again from its copies", r)
        # The server's PAWS drops are reported, not yet asserted: a few
        # showed on 10 MB over the lossy hop (docs/accel.md 8).
        T.ok(not c.get("client_TcpExtPAWSEstab") and
             not any(c.get(f"{n}_TcpExtTCPChallengeACK") for n in ("client", "server")),
             "testbed: the client drops nothing for PAWS, neither end sends a challenge ACK",
             {k: v for k, v in c.items() if k.startswith(("client_Tcp", "server_Tcp"))})
