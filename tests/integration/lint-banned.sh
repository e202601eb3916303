#!/bin/sh
# lint-banned.sh - every C file of apx includes base/banned.h after its other headers, so the
# functions it bans (strcpy, sprintf, atoi, localtime...) cannot come back. Called by ctest.
src=${1:-.}
fail=0
for f in $(cd "$src" && git ls-files '*.c' 2>/dev/null || find lib cli tests bench -name '*.c'); do
	case $f in */fuzz/corpus/*) continue ;; esac
	last=$(grep -n '^#include' "$src/$f" | tail -n 1)
	case $last in
	*'"base/banned.h"'*) ;;
	*) echo "$f: the last #include must be \"base/banned.h\" (found: ${last#*:})"; fail=1 ;;
	esac
done
[ $fail -eq 0 ] && echo "lint-banned: every C file includes base/banned.h last"
exit $fail
