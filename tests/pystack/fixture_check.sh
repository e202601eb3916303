#!/bin/sh
# fixture_check.sh - the GPU check of tests/gpu/pystack on the traces it wrote on an H100
# (tests/fixtures/pystack/h100), made again without a GPU: the reports are built anew from the
# traces by this apx, so a change in the analysis that loses the planted lines fails here.
# Called by ctest pystack-fixtures: APX SRCDIR PYTHON.
set -eu
apx=$1 src=$2 py=$3
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
cp "$src"/tests/fixtures/pystack/h100/* "$tmp"/
programs=$(ls "$tmp"/*.apx | sed 's|.*/||; s|\.apx$||' | paste -sd, -)
exec "$py" "$src"/tests/gpu/pystack/pystack_check.py "$apx" --from "$tmp" --programs "$programs"
