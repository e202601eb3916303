#!/bin/sh
# docs-format.sh - docs/format.md lists every record type and every field of the schema that
# lib/format/schema.c implements, with the same index and kind (the spec and the code agree).
# Called by ctest with the source dir.
src=$1
doc=$src/docs/format.md
missing=$(mktemp) || exit 1
trap 'rm -f "$missing"' EXIT
grep -o '\[APX_[A-Z0-9_]*\] = { "[a-z0-9_]*", APX_FK_[A-Z0-9]* }' "$src/lib/format/schema.c" |
sed -E 's/\[APX_([A-Z0-9]+)_[A-Z0-9_]+\] = \{ "([a-z0-9_]+)", APX_FK_([A-Z0-9]+) \}/\1 \2 \3/' |
while read -r type field kind; do
	t=$(echo "$type" | tr 'A-Z' 'a-z')
	k=$(echo "$kind" | tr 'A-Z' 'a-z')
	# the row must be inside the type's section
	awk -v t="$t" -v f="$field" -v k="$k" '
		/^#### / { insec = ($2 == t) }
		insec && index($0, "| `" f "` | " k " |") { found = 1 }
		END { exit !found }' "$doc" || echo "docs/format.md: no row for $t.$field ($k)" | tee -a "$missing"
done
[ -s "$missing" ] && exit 1
echo "docs-format: every field of lib/format/schema.c is in docs/format.md"
