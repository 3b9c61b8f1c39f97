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
