"""tests/vm/klog-scan.awk: which kernel log lines fail a VM run."""
import os
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCAN = os.path.join(ROOT, "tests/vm/klog-scan.awk")
START = "[    9.000000] vm-run: command starts"


def warn(where, func, message=None, frames=40):
    """A WARN() report as 6.1 prints it on the debug kernel (lockdep, KASAN)."""
    lines = ["------------[ cut here ]------------"]
    if message:
        lines.append(message)
    lines += [f"WARNING: CPU: 0 PID: 206 at {where} {func}+0x319/0x4a0",
              "Modules linked in: les(O+) nf_conntrack veth",
              "CPU: 0 PID: 206 Comm: python3 Tainted: G        W  O       6.1.192-lesdebug #1",
              "RIP: 0010:" + func + "+0x319/0x4a0"]
    lines += [f"R{i:02}: 0000000000000000" for i in range(12)]
    lines += ["Call Trace:", " <TASK>"]
    lines += [f" ? frame_{i}+0x14/0x20" for i in range(frames)]
    lines += [" </TASK>", "irq event stamp: 5", "hardirqs last  enabled at (5): x",
              "---[ end trace 0000000000000000 ]---"]
    return lines


def jump_label_episode(keys):
    """Module load with an injected allocation failure in jump_label_add_module:
    one WARN for the failure, one per static key not yet linked."""
    lines = warn("kernel/jump_label.c:832", "jump_label_module_notify",
                 "Failed to allocate memory: jump_label may not work properly.")
    for _ in range(keys):
        lines += warn("kernel/jump_label.c:757", "jump_label_del_module")
    return lines


# Debian's default awk is mawk; gawk where it is installed too.
AWKS = [a for a in ("mawk", "gawk") if shutil.which(a)] or ["awk"]


@pytest.fixture(params=AWKS)
def awk(request):
    return request.param


def scan(lines, part="command", awk="awk"):
    log = "\n".join(f"[  343.{i:06}] {s}" if not s.startswith("[") else s
                    for i, s in enumerate(lines)) + "\n"
    p = subprocess.run([awk, "-v", f"part={part}", "-v", "started=0", "-f", SCAN],
                       input=log, capture_output=True, text=True, check=True)
    return p.stdout.splitlines()


BOOT = ["Linux version 6.1.192-lesdebug", START]


def test_a_quiet_log_has_no_hit(awk):
    assert scan(BOOT + ["les: selftest passed", "This is not a bug."], awk=awk) == []


@pytest.mark.parametrize("keys", [1, 4, 12])
def test_jump_label_undoing_a_half_loaded_module_is_no_hit(keys, awk):
    # 4 and more keys put the last WARN over 150 lines after the first.
    assert scan(BOOT + jump_label_episode(keys) + ["les: loaded"], awk=awk) == []


def test_a_warning_after_a_jump_label_episode_is_a_hit(awk):
    hits = scan(BOOT + jump_label_episode(3) + warn("net/core/skbuff.c:100", "skb_put"), awk=awk)
    assert any("WARNING:" in h and "skbuff.c" in h for h in hits)
    assert any("Call Trace" in h for h in hits)


def test_a_jump_label_warning_without_a_failed_allocation_is_a_hit(awk):
    hits = scan(BOOT + warn("kernel/jump_label.c:757", "jump_label_del_module"), awk=awk)
    assert any("jump_label.c" in h for h in hits)


def test_a_jump_label_warning_long_after_an_episode_is_a_hit(awk):
    quiet = ["les: ok"] * 200
    hits = scan(BOOT + jump_label_episode(1) + quiet +
                warn("kernel/jump_label.c:757", "jump_label_del_module"), awk=awk)
    assert any("jump_label.c" in h for h in hits)


def test_another_jump_label_warning_in_an_episode_is_a_hit(awk):
    # A static key's count gone wrong is a bug, episode or not.
    hits = scan(BOOT + jump_label_episode(2) +
                warn("kernel/jump_label.c:235", "__static_key_slow_dec_cpuslocked") +
                jump_label_episode(1)[-70:], awk=awk)
    assert any("__static_key_slow_dec_cpuslocked" in h for h in hits)
    assert any("Call Trace" in h for h in hits)


def test_a_failed_allocation_hides_only_its_own_call_trace(awk):
    report = ["python3: page allocation failure: order:0, mode:0x40cc0",
              "CPU: 1 PID: 5 Comm: python3", "Hardware name: QEMU", "Call Trace:",
              " dump_stack_lvl+0x5b/0x77"]
    assert scan(BOOT + report, awk=awk) == []
    hits = scan(BOOT + report + ["BUG: KASAN: use-after-free in les_pep_finish"], awk=awk)
    assert hits and "KASAN" in hits[0]


def test_boot_and_command_parts_are_scanned_apart(awk):
    log = ["BUG: sleeping function called from invalid context"] + BOOT + ["les: ok"]
    assert scan(log, "command", awk=awk) == []
    assert len(scan(log, "boot", awk=awk)) == 1
