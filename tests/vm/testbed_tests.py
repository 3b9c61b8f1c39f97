# SPDX-License-Identifier: GPL-2.0
"""The satellite testbed cannot rot: one short download and upload per mode
over the geo profile (tools/testbed.py, set "check"), each checked by hash
and proven to have gone the mode's way (SA and les.ko counters); les-ike's
keys from charon (`accel rekeys` takes les-ike over the lossy hop).  Then
the acceleration engine over a lossy hop (set "accel"): 1 MB down and up
through both PEPs, intact, with what the hop lost sent again from the
copies of the PEP before it.  And the page
through ESP and through accelerating PEPs, twice each (set "page"): no
faster than its round trips, and faster through the PEPs, which save the
first round's second round trip (docs/benchmarks.md, "The page, timed
without the harness")."""
import json
import math
import os
import statistics
import subprocess
import tomllib

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def testbed(T, out, ko, name, *extra):
    d = f"{out}/testbed-{name}"
    p = subprocess.run(["/usr/bin/python3", f"{REPO}/tools/testbed.py", "run", "--ko", ko,
                        "--out", d, "--set", name, *extra],
                       capture_output=True, text=True, timeout=1200)
    T.ok(p.returncode == 0, f"testbed: the {name} set runs", p.stdout[-2000:] + p.stderr[-2000:])
    path = f"{d}/results.jsonl"
    return [json.loads(ln) for ln in open(path)] if os.path.exists(path) else []


def run(T, out, ko):
    rows = testbed(T, out, ko, "check")
    modes = {r["mode"] for r in rows}
    T.ok({"clear", "esp", "les", "les-observer", "les-pep", "les-ike"} <= modes,
         "testbed: every mode ran",
         sorted(modes))
    for r in rows:
        T.ok(r["status"] == "ok" and r["total"] >= r["bound"],
             f"testbed: {r['profile']} {r['mode']} {r['workload']} arrives intact, "
             "carried as the mode says, no faster than the bound", r)

    conf = tomllib.load(open(f"{REPO}/tools/testbed.toml", "rb"))
    for r in testbed(T, out, ko, "accel"):
        c = r.get("counters", {})
        # Downloads: the hub ACKs early and resends what the hop lost going
        # down; uploads: the remote PEP, going up.
        up = conf["workloads"][r["workload"]].get("upload")
        pep, hop, rcv = ("rpep", "up", "server") if up else ("hpep", "down", "client")
        T.ok(r["status"] == "ok" and r["total"] >= r["bound"] and
             c.get(f"{pep}_LesAccelEarlyAckedBytes", 0) >= r["bytes"] and
             (c.get(f"{pep}_LesAccelHopRetrans", 0) + c.get(f"{pep}_LesAccelHopTimeouts", 0) > 0
              or not c.get(f"hop_{hop}_drops")),
             f"testbed: {r['profile']} {r['mode']} {r['workload']} arrives intact, every byte "
             f"ACKed early by {pep}, what the hop lost sent again from its copies", r)
        # The sender's PAWS drops are reported, not yet asserted: a few
        # showed on 10 MB over the lossy hop (docs/accel.md 8).
        T.ok(not c.get(f"{rcv}_TcpExtPAWSEstab") and
             not any(c.get(f"{n}_TcpExtTCPChallengeACK") for n in ("client", "server")),
             f"testbed: {r['workload']}: the receiver drops nothing for PAWS, neither end "
             "sends a challenge ACK",
             {k: v for k, v in c.items() if k.startswith(("client_Tcp", "server_Tcp"))})

    loaded(T, out, ko)

    rows = testbed(T, out, ko, "page")
    for r in rows:
        w, prof = conf["workloads"]["page"], conf["profiles"][r["profile"]]
        # The HTML's handshake and request, the objects' connections'
        # handshakes, then one request per object on the busiest one:
        # no path, accelerated or not, takes fewer round trips.
        rtts = 3 + math.ceil(w["objects"] / w["parallel"])
        floor = rtts * prof["rtt_ms"] / 1000
        T.ok(r["status"] == "ok" and r["total"] >= floor,
             f"testbed: {r['profile']} {r['mode']} page arrives intact, in no less than its "
             f"{rtts} round trips", {"floor": floor, **r})
    best = {m: min((r["total"] for r in rows if r["mode"] == m and r["status"] == "ok"),
                   default=None) for m in ("esp", "les-pep")}
    esp, pep = best["esp"], best["les-pep"]
    print(f"# testbed: the page in {esp} s through ESP, {pep} s through accelerating PEPs "
          "(the faster of two each)", flush=True)
    # The round trip saved less the PEPs' own time was 0.47 s (ESP 5.07 to
    # 5.43 s, les-pep 4.59 to 4.76); the faster of two fetches is within
    # 0.1 s of the next mode's when nothing is saved (clear, ESP, LES:
    # docs/benchmarks.md), the first of a run being the slowest.
    name = ("testbed: the page takes less time through accelerating PEPs than through ESP, "
            "by 0.2 s or more (the faster of two fetches each)")
    # A host that did not keep the link's timing (tools/timing.py) cannot
    # time a difference of a few tenths: said, not failed.
    why = sorted({w for r in rows for w in r.get("timing", {}).get("why", [])})
    if why:
        T.skip(name, "the host did not keep the link's timing: " + "; ".join(why))
        return
    T.ok(esp is not None and pep is not None and pep < esp - 0.2, name,
         {"esp": esp, "les-pep": pep, "fetches": rows})


def loaded(T, out, ko):
    """A loaded host (set "loaded": two busy loops beside the namespaces):
    the engine's timers come late there, and accelerating PEPs must still
    be no slower than none (docs/testbed.md).  FULL=1: 10M too, and
    medians of three."""
    extra = ["--workloads", "1M,10M", "--reps", "3"] if os.environ.get("LES_FULL") else []
    rows = testbed(T, out, ko, "loaded", *extra)
    for w in sorted({r["workload"] for r in rows}):
        med = {}
        for m in ("les", "les-pep"):
            t = [r["total"] for r in rows
                 if r["workload"] == w and r["mode"] == m and r["status"] == "ok"]
            med[m] = statistics.median(t) if t else None
        why = sorted({x for r in rows for x in r.get("timing", {}).get("why", [])})
        print(f"# testbed: loaded host, {w}: les {med['les']} s, les-pep {med['les-pep']} s; "
              f"timing {'held' if not why else '; '.join(why)}", flush=True)
        T.ok(None not in med.values() and med["les-pep"] <= med["les"],
             f"testbed: with two busy loops beside the namespaces, {w} through accelerating "
             "PEPs takes no longer than through LES alone", {"medians": med, "fetches": rows})
