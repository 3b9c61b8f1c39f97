#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""What a process costs in the VM (docs/testing.md "Time"): run inside it,
  tests/vm/vm-run.sh KVER DIR -- /usr/bin/python3 tests/bench/exec_cost.py
Each line: the mean of five runs, in seconds."""
import ctypes
import os
import subprocess
import time

NETNS = "lesexec"


def main():
    subprocess.run(["ip", "netns", "add", NETNS], check=True)
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(f"/run/netns/{NETNS}", os.O_RDONLY)

    def join():     # the testbed's way into a namespace (tools/testbed.py netns_of)
        libc.setns(fd, 0x40000000)
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    try:
        for name, kw in (
                ("true (vfork)", {"args": ["true"]}),
                ("true, forked to join a namespace", {"args": ["true"], "preexec_fn": join}),
                ("bash -c true", {"args": ["bash", "-c", "true"]}),
                ("ip link show", {"args": ["ip", "link", "show"]}),
                ("bash -c 'ip link show'", {"args": ["bash", "-c", "ip link show"]}),
                ("nsenter --net true", {"args": ["nsenter", f"--net=/run/netns/{NETNS}", "true"]})):
            t0 = time.monotonic()
            for _ in range(5):
                subprocess.run(**kw, **quiet, check=True)
            print(f"{(time.monotonic() - t0) / 5:6.3f}  {name}", flush=True)
    finally:
        os.close(fd)
        subprocess.run(["ip", "netns", "del", NETNS])


if __name__ == "__main__":
    main()
