"""The mutation campaign's generator (tests/vm/mutation_tests.py) makes no
valid packet: the reference codec opens none of its mutants, so whatever
the kernel delivers from a campaign is a kernel bug, never the test's."""

import pathlib
import random
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "vm"))
import mutation_tests as M  # noqa: E402
from lesvm import Config, Sa  # noqa: E402
from lescodec import zone as Z  # noqa: E402
from lescodec.errors import LesError  # noqa: E402


def opens(cfg, ab, po, esp):
    seq_hi = 1 if cfg.esn else 0
    for f in (lambda: Z.open_full(esp, ab.k2, ab.k1, cfg.esn, seq_hi=seq_hi),
              lambda: Z.open_header_only(esp, po.po_key(), cfg.esn, seq_hi=seq_hi)):
        try:
            f()
            return True
        except LesError:
            pass
    return False


@pytest.mark.parametrize("cfg", [Config("tunnel", 4, 4, esn=True), Config("tunnel", 6, 6),
                                 Config("transport", 4)], ids=str)
def test_no_mutant_opens(cfg):
    ab = Sa(cfg, "a", "b", 0x7800)
    po = Sa(cfg, "a", "b", 0x7880, role="pep-origin-in", k2=ab.k2, pep_id=3)
    bases = [M.data_base(cfg, ab, i, i) if i % 2 else M.ack_base(cfg, po, i, i)
             for i in range(1, 41)]
    assert all(opens(cfg, ab, po, b.esp) for b in bases)
    rng = random.Random(1)
    kinds, opened = {}, []
    for b in bases:
        ms, k = M.mutants(rng, b, bases, 100)
        for name, n in k.items():
            kinds[name] = kinds.get(name, 0) + n
        opened += [m.hex() for m in ms if opens(cfg, ab, po, m)]
    assert not opened
    assert set(kinds) == {f.__name__[2:] for f in M.MUTATIONS}
