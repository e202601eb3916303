#!/bin/sh
# tune-analyzer.sh - a stand-in for `apx analyze` in apx tune's test (tune-check.sh; the
# APX_TUNE_ANALYZER seam of cli/cmd_tune.c): given apx analyze's arguments, it writes the -o
# trace by copying a committed real trace, TUNE_PLANTED for a run without a fix and
# TUNE_FIXED for a run with APX_TUNE_FIXES set (the development suite's planted and hand-fixed
# variants, captured on the GPU), prints the loss values a training script would (TUNE_LOSS,
# TUNE_LOSS_FIXED with a fix), writes APX_TUNE_REPORT as apx_site.py does (TUNE_REPORT_EXTRA:
# more of the fix's entry, e.g. tf32's overrides by API), and exits
# TUNE_STATUS (default 0). Records its environment's tune variables in TUNE_LOG.
# TUNE_PLANTED_ALT: the trace of the second run without the fix (FIX-base-1), to make a side's
# runs differ. TUNE_SLEEP, TUNE_HANG_FIX: hangs (below), for apx tune --time.
out=
while [ $# -gt 0 ]; do
	case $1 in
	-o) out=$2; shift 2 ;;
	--) shift; break ;;
	*) shift ;;
	esac
done
[ -n "$out" ] || { echo "tune-analyzer: no -o" >&2; exit 2; }
case $out in
*-base-1.apx) [ -n "${TUNE_PLANTED_ALT:-}" ] && TUNE_PLANTED=$TUNE_PLANTED_ALT ;;
esac
if [ -n "${APX_TUNE_FIXES:-}" ] && [ "${TUNE_HANG_FIX:-}" = "$APX_TUNE_FIXES" ]; then
	sleep 600
elif [ -n "${APX_TUNE_FIXES:-}" ]; then
	cp "$TUNE_FIXED" "$out" || exit 3
	echo "loss ${TUNE_LOSS_FIXED:-2.5}"
	[ -n "${APX_TUNE_REPORT:-}" ] &&
		printf '{"fixes": {"%s": {"applied": true%s}}}\n' "$APX_TUNE_FIXES" \
			"${TUNE_REPORT_EXTRA:-}" > "$APX_TUNE_REPORT"
else
	cp "$TUNE_PLANTED" "$out" || exit 3
	echo "loss ${TUNE_LOSS:-2.5}"
fi
[ -n "${TUNE_LOG:-}" ] &&
	echo "fixes=${APX_TUNE_FIXES:-} alloc=${PYTORCH_CUDA_ALLOC_CONF:-} steps=${APX_TUNE_STEPS:-}" \
		>> "$TUNE_LOG"
# a program that hangs after its trace is written (TUNE_SLEEP seconds), or before it
# (TUNE_HANG_FIX: in the runs with that fix, no trace at all)
[ -n "${TUNE_SLEEP:-}" ] && sleep "$TUNE_SLEEP"
exit "${TUNE_STATUS:-0}"
