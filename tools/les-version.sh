#!/bin/sh
# les-version.sh - print the project's version: debian/changelog's first entry.
sed -n '1s/^[^(]*(\([^)]*\)).*/\1/p' "$(dirname "$0")/../debian/changelog"
