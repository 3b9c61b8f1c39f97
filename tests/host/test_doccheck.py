"""tools/doccheck.py: the docs name only counters, tests, paths and
sections that exist (make check-host runs it too)."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import doccheck  # noqa: E402


def test_docs_name_what_exists():
    p = subprocess.run([sys.executable, os.path.join(ROOT, "tools/doccheck.py")],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr


@pytest.fixture(scope="module")
def known():
    return doccheck.known_names(doccheck.doc_paths())


@pytest.mark.parametrize("line, found", [
    ("`LesAccelHopDrops` and `LesPepReplay`", None),
    ("`LesAccelHopDrop`", "counter LesAccelHopDrop"),
    ("lesctl stats | grep LesAccel", None),
    ("`accel udp flood`, `accel paused reader, busy tunnel`, `step pep`", None),
    ("`accel udp floods`", 'accel test "udp floods"'),
    ("`step peps`", 'step "peps"'),
    ("`hardening init faults`, `pep tunnel v4-in-v4`, `mutation through a PEP`", None),
    ("`lesctl pep set accel off`, `accel on|off`, `pep show`", None),
    ("kernel/hold.c, `tools/timing.py`, kernel/*.c, tests/out/demo/", None),
    ("kernel/holds.c", "path kernel/holds.c"),
    ("../shared/NOTES.md", "path ../shared/NOTES.md"),
    ("docs/accel.md 5.2, section 3 of docs/pep.md", None),
    ("docs/accel.md 9", "accel.md has no section 9"),
    ('docs/testbed.md, "Timing"', None),
    ('docs/testbed.md "Nothing like it"', 'testbed.md has no section "Nothing like it"'),
    ('`tests/host/test_lescodec.py` `test_hidden_L`', None),
    ('`tests/host/test_lescodec.py` `test_hidden_Lx`', "has no `test_hidden_Lx`"),
    ('`tests/vm/pep_tests.py` "a key is gone when its lifetime ends"', None),
    ('`tests/vm/pep_tests.py` "a key is gone for good"', 'has no test "a key is gone for good"'),
    # An f-string's {field} stands for a value the doc may write out.
    ('`tests/vm/accel_tests.py` "every PEP key deleted mid-transfer on a lossy hop: ..."', None),
])
def test_what_the_checker_catches(known, line, found):
    problems = []
    doccheck.check_doc("X.md", known, problems, text=line)
    if found is None:
        assert not problems
    else:
        assert len(problems) == 1 and found in problems[0], problems
