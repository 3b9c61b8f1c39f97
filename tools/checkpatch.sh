#!/bin/bash
# checkpatch.pl --strict over kernel/, from the kernel's own source
# (linux-source-6.1).  Fails on errors; warnings are printed.
set -euo pipefail
cd "$(dirname "$0")/.."

tree=build/linux-source-6.1
if [ ! -x "$tree/scripts/checkpatch.pl" ]; then
	tarball=$(ls /usr/src/linux-source-6.1.tar.* 2>/dev/null | head -n1)
	[ -n "$tarball" ] || { echo "checkpatch: install linux-source-6.1" >&2; exit 1; }
	mkdir -p build
	tar -C build -xf "$tarball" linux-source-6.1/scripts linux-source-6.1/MAINTAINERS \
		linux-source-6.1/Documentation/dev-tools/checkpatch.rst 2>/dev/null ||
		tar -C build -xf "$tarball" linux-source-6.1/scripts linux-source-6.1/MAINTAINERS
fi
# spelling.txt and const_structs.checkpatch live next to the script.
out=$("$tree/scripts/checkpatch.pl" --strict --no-tree --terse --show-types \
	--ignore FILE_PATH_CHANGES,SPDX_LICENSE_TAG -f kernel/*.c kernel/*.h || true)
echo "$out" | grep -v "^total:" || true
errors=$(echo "$out" | grep -c ": ERROR:" || true)
warnings=$(echo "$out" | grep -c ": WARNING:\|: CHECK:" || true)
echo "checkpatch: $errors errors, $warnings warnings/checks"
[ "$errors" -eq 0 ]
