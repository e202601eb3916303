#!/bin/bash
# man-options.sh - the man pages say what --help says: every option (short and long) on an
# option line of `apx help CMD` appears in the "apx CMD" section of docs/man/apx.1, every option
# of `nvperfd --help` in docs/man/nvperfd.8, every command of `apx --help` has a section, every
# key of packaging/nvperfd.conf is in nvperfd.conf.5, and the pages format without a groff
# warning. Also the bash completion offers exactly the
# options of each command's help. Run by ctest (label install). Needs APX, SRC; NVPERFD if built.
set -u
fails=0
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }

# options of a --help text: the lines that define them ("  -o, --output FILE   ...")
opts_of() { grep -E '^ +-' | grep -oE '(^|[ ,])--?[A-Za-z][A-Za-z0-9-]*' | tr -d ' ,' | sort -u; }
# a man page as plain text: troff dashes and fonts removed
plain() { sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' "$1"; }
# the text of the section(s) of "apx CMD" in apx.1: from its .SS lines to the next other one
section() {
	plain "$SRC/docs/man/apx.1" | awk -v c="$1" '
		/^\.S[SH] / { on = ($0 ~ "^\\.SS \"apx " c "( |\")") }
		on'
}

cmds=$("$APX" --help | awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }')
[ -n "$cmds" ] || bad "no commands in apx --help"
for c in $cmds; do
	sec=$(section "$c")
	[ -n "$sec" ] || { bad "apx.1 has no section for 'apx $c'"; continue; }
	n=0
	for o in $("$APX" help "$c" | opts_of); do
		n=$((n + 1))
		grep -qE -- "(^|[^A-Za-z0-9-])$o([^A-Za-z0-9-]|$)" <<< "$sec" ||
			bad "apx.1, section apx $c: option $o of 'apx help $c' missing"
	done
	[ "$n" -gt 0 ] || bad "no options found in 'apx help $c'"
	# the bash completion's list for the command
	comp=$(bash -c ". '$SRC/packaging/apx.bash-completion'; _apx_opts $c" | tr ' ' '\n' | sort -u)
	[ "$comp" = "$("$APX" help "$c" | opts_of)" ] ||
		bad "bash completion of 'apx $c' offers: $(echo $comp); apx help $c has: $("$APX" help "$c" | opts_of | tr '\n' ' ')"
	echo "apx $c: $n options in apx.1 and the completion"
done
if [ -n "${NVPERFD:-}" ]; then
	for o in $("$NVPERFD" --help | opts_of); do
		plain "$SRC/docs/man/nvperfd.8" | grep -qE -- "(^|[^A-Za-z0-9-])$o([^A-Za-z0-9-]|$)" ||
			bad "nvperfd.8: option $o of 'nvperfd --help' missing"
	done
	grep -q '^\.SH OVERHEAD' "$SRC/docs/man/nvperfd.8" || bad "nvperfd.8 has no OVERHEAD section"
fi
# every key of the packaged example config is in nvperfd.conf(5)
for k in $(sed -n 's/^#\([a-z_.]*\) = .*/\1/p' "$SRC/packaging/nvperfd.conf"); do
	plain "$SRC/docs/man/nvperfd.conf.5" | grep -q "^\.BR $k " || bad "nvperfd.conf.5: key $k missing"
done
if command -v groff >/dev/null; then
	for m in apx.1 nvperfd.8 nvperfd.conf.5; do
		w=$(groff -man -Tutf8 -ww -z "$SRC/docs/man/$m" 2>&1)
		[ -z "$w" ] || bad "groff warnings in $m: $w"
	done
else
	echo "note: no groff: the pages' formatting not checked"
fi
[ "$fails" = 0 ] || exit 1
echo "ok"
