#!/bin/sh
# analyze-calibrate.sh APX - apx analyze's measurement of the collector's cost per launch
# (cli/analyze_calibrate.c), without a GPU: a stand-in apx-calibrate beside a stand-in
# collector answers 3000 ns plain and 4000 ns with the collector injected; the program must
# get APX_LAUNCH_COST_NS=1000, the result must be cached (a second run gets it with the tool
# gone), APX_CALIBRATE=0 must skip it, and a tool that says "no GPU" (exit 2) must be silent;
# an injected run faster than the plain one is noise (said, not cached), and of 3 alternating
# pairs the median difference counts.
set -u
apx=$1
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
fail=0
: >"$dir/libapx-inject.so"
cat >"$dir/apx-calibrate" <<'SH'
#!/bin/sh
if [ -n "${CUDA_INJECTION64_PATH:-}" ]; then echo "launch_ns 4000"; else echo "launch_ns 3000"; fi
SH
chmod +x "$dir/apx-calibrate"
run() {	# run OUTPUT-FILE: the program prints the cost it was given
	XDG_CACHE_HOME="$dir/cache" APX_INJECT_LIB="$dir/libapx-inject.so" \
		"$apx" analyze -q --force -o "$dir/t.apx" -- sh -c 'echo "cost=${APX_LAUNCH_COST_NS:-none}"' \
		>"$1" 2>"$1.err"
}
run "$dir/1"
grep -q '^cost=1000$' "$dir/1" || { echo "FAIL: first run: $(cat "$dir/1" "$dir/1.err")"; fail=1; }
grep -q "$(printf '\t')1000$" "$dir/cache/apx/launch-cost" 2>/dev/null ||
	{ echo "FAIL: no cache file"; fail=1; }
rm "$dir/apx-calibrate"	# cached: the tool is not needed again
run "$dir/2"
grep -q '^cost=1000$' "$dir/2" || { echo "FAIL: cached run: $(cat "$dir/2" "$dir/2.err")"; fail=1; }
APX_CALIBRATE=0 run "$dir/3"
grep -q '^cost=none$' "$dir/3" || { echo "FAIL: APX_CALIBRATE=0: $(cat "$dir/3")"; fail=1; }
rm -rf "$dir/cache"
printf '#!/bin/sh\necho "apx-calibrate: no usable CUDA GPU" >&2\nexit 2\n' >"$dir/apx-calibrate"
chmod +x "$dir/apx-calibrate"
run "$dir/4"
if ! grep -q '^cost=none$' "$dir/4" || grep -q 'launch' "$dir/4.err"; then
	echo "FAIL: no GPU must be silent: $(cat "$dir/4" "$dir/4.err")"; fail=1
fi
# the injected run faster than the plain one (processes' speeds differ): noise, said, not cached
rm -rf "$dir/cache"
cat >"$dir/apx-calibrate" <<'SH'
#!/bin/sh
if [ -n "${CUDA_INJECTION64_PATH:-}" ]; then echo "launch_ns 2500"; else echo "launch_ns 3000"; fi
SH
chmod +x "$dir/apx-calibrate"
run "$dir/5"
if ! grep -q '^cost=none$' "$dir/5" || ! grep -q 'noise between processes' "$dir/5.err" ||
   grep -qs "$(printf '\t')" "$dir/cache/apx/launch-cost"; then
	echo "FAIL: a cost lost in the noise: $(cat "$dir/5" "$dir/5.err")"; fail=1
fi
# three alternating pairs: the median difference (1000, 1000 and an outlier of 9000)
rm -rf "$dir/cache"
cat >"$dir/apx-calibrate" <<SH
#!/bin/sh
n=\$(cat "$dir/n" 2>/dev/null || echo 0); echo \$((n + 1)) >"$dir/n"
if [ -n "\${CUDA_INJECTION64_PATH:-}" ]; then
	[ "\$n" -ge 4 ] && echo "launch_ns 12000" || echo "launch_ns 4000"
else echo "launch_ns 3000"; fi
SH
chmod +x "$dir/apx-calibrate"
run "$dir/6"
grep -q '^cost=1000$' "$dir/6" || { echo "FAIL: median of pairs: $(cat "$dir/6" "$dir/6.err")"; fail=1; }
[ "$(cat "$dir/n")" = 6 ] || { echo "FAIL: $(cat "$dir/n") calibration runs, not 6"; fail=1; }
[ $fail = 0 ] && echo "analyze-calibrate: ok (1000 ns measured, cached, skipped, silent without a GPU, noise not cached, median of 3 pairs)"
exit $fail
