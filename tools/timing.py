# SPDX-License-Identifier: GPL-2.0
"""Can this host keep the emulated link's timing?  The testbed's instrument
check (docs/testbed.md, "Timing"): a host whose timers wake late, or whose
hop takes longer than the profile's round trip, times transfers that are not
comparable with docs/benchmarks.md, and the testbed says so instead of
printing them as if they were."""
import re
import time

# What a host must hold for its numbers to stand beside docs/benchmarks.md.
RTT_TOLERANCE = 0.10        # the hop's round trip: the profile's, +10 % ...
RTT_SLACK_MS = 30           # ... + 30 ms
TIMER_P90_MS = 5.0          # 9 of 10 1-ms sleeps wake at most this late
CLEAR_OVER_BOUND = 3.5      # clear TCP, loss-free profile: at most this times the bound


def timer_lateness(n=200):
    """How late a 1 ms sleep wakes, in ms: (median, 90th percentile)."""
    late = []
    for _ in range(n):
        t = time.monotonic()
        time.sleep(0.001)
        late.append((time.monotonic() - t) * 1000 - 1)
    late.sort()
    return round(late[n // 2], 2), round(late[n * 9 // 10], 2)


def ping_rtt(out):
    """The average round trip ping printed, in ms, or None."""
    m = re.search(r"= [\d.]+/([\d.]+)/", out)
    return float(m.group(1)) if m else None


def judge(prof, hop_rtt_ms, late):
    """The instrument's reading before a mode's fetches: a dict for
    results.jsonl, with "ok" and, if not, "why"."""
    why = []
    want = prof["rtt_ms"] * (1 + RTT_TOLERANCE) + RTT_SLACK_MS
    if hop_rtt_ms is None:
        why.append("no round trip across the hop")
    elif hop_rtt_ms > want:
        why.append(f"hop round trip {hop_rtt_ms:.0f} ms, profile {prof['rtt_ms']:g} ms")
    if late[1] > TIMER_P90_MS:
        why.append(f"1 ms sleeps wake {late[1]:g} ms late (90th percentile)")
    return {"hop_rtt_ms": hop_rtt_ms, "timer_late_ms": list(late), "ok": not why,
            **({"why": why} if why else {})}


def judge_clear(prof, total, bound):
    """Clear TCP on a loss-free profile is slow start's, a few times the
    bound: far slower, the link did not keep its timing.  A reason, or None."""
    if prof["loss_pct"] or total is None or total <= CLEAR_OVER_BOUND * bound:
        return None
    return f"clear TCP took {total:.1f} s, over {CLEAR_OVER_BOUND:g} times the bound {bound:.1f} s"
