#!/bin/bash
# deb.sh - build the Debian packages (les-dkms, lesctl, strongswan-les) into
# build/deb/ and check them with lintian; exit non-zero on a build failure
# or a lintian error.
#
# dpkg-buildpackage runs in a copy of the tree (the files git tracks or would
# track, as they are now), so the build leaves the work tree alone.  The
# plugin needs Debian's strongSwan source configured (strongswan-plugin/
# source.sh, cached in /var/cache/les): fetched here, before the build, so
# that debian/rules fetches nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

version=$(tools/les-version.sh)
out=build/deb
src=$out/les-$version

for tool in dpkg-buildpackage dh dh_dkms lintian fakeroot; do
	command -v "$tool" >/dev/null || {
		echo "deb: $tool is missing: run tools/setup-host.sh" >&2; exit 1; }
done

SW_SRC=$(strongswan-plugin/source.sh)
export SW_SRC

rm -rf "$out"
mkdir -p "$src"
git ls-files -z --cached --others --exclude-standard |
	while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
	tar --null -T - -cf - | tar -xf - -C "$src"

(cd "$src" && dpkg-buildpackage -us -uc -b >../build.log 2>&1) || {
	tail -n 40 "$out/build.log" >&2
	echo "deb: dpkg-buildpackage failed (log: $out/build.log)" >&2
	exit 1
}
changes=$(ls "$out"/les_"$version"_*.changes)
ls "$out"/*.deb
# Errors fail; warnings and the rest are printed.
lintian --fail-on error --tag-display-limit 0 "$changes"
echo "deb: build/deb/ has les-dkms, lesctl and strongswan-les $version; lintian found no error"
