"""The mutation campaign's generator (tests/vm/mutation_tests.py) makes no
valid packet: the reference codec opens none of its mutants, so whatever
the kernel delivers from a campaign is a kernel bug, never the test's.

Wire format version 3: the keys are taken from the blobs the campaign
installs (parse_blob(sa.blob()), zone keys derived from the SA's SPI and
direction), so this file depends on tests/vm only through Sa.blob(),
Sa.spi and the generator (data_base, ack_base, mutants, MUTATIONS)."""

import inspect
import pathlib
import random
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "vm"))
import mutation_tests as M  # noqa: E402
from lesvm import Config, Sa  # noqa: E402
from lescodec import blob as B  # noqa: E402
from lescodec import zone as Z  # noqa: E402
from lescodec.errors import LesError  # noqa: E402


def sa_keys(sa):
    b = B.parse_blob(sa.blob())
    return b.header_key(sa.spi), b.payload_key(sa.spi)


def opens(cfg, ab, po, esp):
    """Does any SA of the campaign accept this packet?"""
    seq_hi = 1 if cfg.esn else 0
    hk, pk = sa_keys(ab)
    ok, _ = sa_keys(po)
    for f in (lambda: Z.open_full(esp, hk, pk, cfg.esn, seq_hi=seq_hi),
              lambda: Z.open_header_only(esp, ok, cfg.esn, cfg.tunnel,
                                         seq_hi=seq_hi)):
        try:
            f()
            return True
        except LesError:
            pass
    return False


def _mutants(rng, b, others, n):
    """M.mutants() drawing the same random numbers, with each mutant's kind:
    (mutants, kind of each)."""
    out, names = [], []
    while len(out) < n:
        f = rng.choice(M.MUTATIONS)
        m = f(rng, b, others)
        if m != b.esp:
            out.append(m)
            names.append(f.__name__[2:])
    return out, names


def pep_origin_sa(cfg, ab, spi, pep_id):
    """The pep-origin-in SA of PEP pep_id for the endpoint SA `ab`."""
    params = inspect.signature(Sa).parameters
    kw = {"role": "pep-origin-in", "pep_id": pep_id}
    if "parent" in params:
        kw["parent"] = ab
    elif "ko" in params:
        kw["ko"] = B.pep_origin_ko(ab.blob(), pep_id)
    elif "endpoint" in params:
        kw["endpoint"] = ab
    elif "kp" in params:
        kw["kp"] = B.parse_blob(ab.blob()).kp
    try:
        po = Sa(cfg, "a", "b", spi, **kw)
    except TypeError as e:
        pytest.skip(f"tests/vm/lesvm.py: no v2 pep-origin-in Sa ({e})")
    want = B.pep_origin_blob(ab.blob(), pep_id, "pep-origin-in")
    if po.blob() != want:
        pytest.skip("tests/vm/lesvm.py: cannot build a v2 pep-origin-in Sa "
                    "(Sa.blob() differs from pep_origin_blob())")
    return po


@pytest.mark.parametrize("cfg", [Config("tunnel", 4, 4, esn=True), Config("tunnel", 6, 6),
                                 Config("transport", 4)], ids=str)
def test_no_mutant_opens(cfg):
    ab = Sa(cfg, "a", "b", 0x7800)
    try:
        B.parse_blob(ab.blob())
    except (B.BlobError, TypeError, AttributeError) as e:
        pytest.skip(f"tests/vm/lesvm.py still makes v1 blobs ({e})")
    po = pep_origin_sa(cfg, ab, 0x7880, 3)
    try:
        bases = [M.data_base(cfg, ab, i, i) if i % 2 else M.ack_base(cfg, po, i, i)
                 for i in range(1, 41)]
    except (AttributeError, TypeError) as e:
        pytest.skip(f"tests/vm/mutation_tests.py not yet ported to v2 ({e})")
    assert all(opens(cfg, ab, po, b.esp) for b in bases), \
        "the generator's base packets must be valid v2 packets"
    rng = random.Random(1)
    kinds, opened = {}, []
    for b in bases:
        ms, k = _mutants(rng, b, bases, 100)
        for name, m in zip(k, ms):
            kinds[name] = kinds.get(name, 0) + 1
            if opens(cfg, ab, po, m):
                opened.append((name, "data" if b.pz_plain is not None
                               else "header-only", m.hex()))
    assert not opened, "mutants that open (kind, base, packet):\n" + \
        "\n".join(" ".join(o) for o in opened[:10])
    assert set(kinds) == {f.__name__[2:] for f in M.MUTATIONS}
