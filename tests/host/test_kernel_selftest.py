"""The module's load-time self-test (kernel/selftest.c), run in user space
against the same kernel/les_wire.c, so a wrong expectation is caught before
any VM boots."""
import os
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.skipif(not shutil.which("cc"), reason="no C compiler")
def test_kernel_selftest_in_user_space(tmp_path):
    exe = tmp_path / "selftest"
    subprocess.run(["cc", "-Wall", "-Werror", "-I", os.path.join(ROOT, "kernel"),
                    "-o", str(exe), os.path.join(ROOT, "tests/host/selftest_main.c"),
                    os.path.join(ROOT, "kernel/les_wire.c")], check=True)
    p = subprocess.run([str(exe)], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr


def test_kdf_vector_matches_rfc5869():
    """kernel/selftest.c checks its HKDF against RFC 5869 test case 1; this is
    the same vector computed by the `cryptography` package."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF
    okm = HKDF(hashes.SHA256(), 42, bytes(range(13)),
               bytes.fromhex("f0f1f2f3f4f5f6f7f8f9")).derive(b"\x0b" * 22)
    src = open(os.path.join(ROOT, "kernel/selftest.c")).read()
    want = ", ".join(f"0x{b:02x}" for b in okm[:10])
    assert want in src



def test_zone_vectors_match_codec():
    """kernel/selftest.c opens and seals packets of vectors.json with the
    module's own crypto path (kernel/selftest_vectors.h); each is the
    codec's, byte for byte."""
    import json
    import re
    vectors = {p["name"]: p for p in
               json.load(open(os.path.join(ROOT, "tests/host/vectors.json")))["packets"]}
    src = open(os.path.join(ROOT, "kernel/selftest_vectors.h")).read()
    arrays = {m.group(1): bytes(int(x, 16) for x in re.findall(r"0x([0-9a-f]{2})", m.group(2)))
              for m in re.finditer(r"static const u8 (\w+)\[\] = \{(.*?)\};", src, re.S)}
    table = src[src.index("les_zone_kats[] = {"):]
    entries = re.findall(r"\t\{\n(.*?)\n\t\},", table[:table.index("\n};")], re.S)
    assert len(entries) >= 3
    kinds = set()
    for entry in entries:
        field = dict(re.findall(r"\.(\w+) = \"?([\w-]+)\"?,", entry))
        field.update({f: arrays[a].hex() for f, a in re.findall(r"LES_KAT\((\w+), (\w+)\)", entry)})
        v = vectors[field["name"]]
        assert int(field["spi"], 0) == int(v["spi"])
        assert int(field["seq_hi"], 0) == int(v["seq"]) >> 32
        assert field["esn"] == ("true" if v["esn"] in (True, "True") else "false")
        assert field["blob"] == v.get("blob_in", v.get("blob"))
        assert field["esp"] == v["esp"]
        assert field["hz"] == v["hz_plain"]
        assert field.get("pz", "") == v.get("pz_plain", "")
        kinds.add((field["esn"], v["keylen"], "pz" in field))
    # ESN and not, two key lengths, header-only and two-zone packets
    assert len({k[0] for k in kinds}) == 2
    assert len({k[1] for k in kinds}) >= 2
    assert len({k[2] for k in kinds}) == 2
