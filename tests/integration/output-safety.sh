#!/bin/sh
# output-safety.sh - outputs that never destroy (rules in cli/outfile.h
# and docs/man/apx.1, "OUTPUT FILES"): apx report -o and apx export -o replace only regular
# files (with --force, never one of their inputs), write into character devices and FIFOs,
# refuse links and folders; a failed write leaves the old file and no temporary file and says
# the real errno; every command that writes stdout fails when it cannot (> /dev/full);
# apx analyze -f removes only its own run's FILE.<pid> and checks -o before the program
# starts. Device nodes (mknod), a full file system (a small tmpfs) and another user (setpriv)
# need root: those checks are skipped without it. Every command runs under timeout.
# Called by ctest: APX SRCDIR.
set -u
apx=$1 src=$2
fix=$src/tests/fixtures
s=$fix/sample.apx
fail=0
t=$(mktemp -d) || exit 1
full=
cleanup() {
	[ -n "$full" ] && umount "$full" 2>/dev/null
	rm -rf "$t"
}
trap cleanup EXIT
to() { timeout 30 "$@"; }
no() { echo "FAIL: $*"; fail=1; }
root=0; [ "$(id -u)" -eq 0 ] && root=1
mkdir "$t/tmp" && TMPDIR=$t/tmp && export TMPDIR	# streams' exports are staged here
# the number of lines of $2 that hold $1
count() { grep -c -- "$1" "$2"; }
# nothing but $1 in folder $2 (no temporary file left)
only() { [ "$(ls -A "$2")" = "$1" ]; }
cd "$t" || exit 1

# --- 1. devices and FIFOs are written into, never replaced; links and folders refused
if [ $root -eq 1 ] && mknod "$t/null" c 1 3 2>/dev/null; then
	to "$apx" export --force --format chrome -o "$t/null" "$s" 2>"$t/err" ||
		no "export --force -o DEVICE: exit $?: $(cat "$t/err")"
	[ -c "$t/null" ] || no "export --force -o DEVICE replaced the device node"
	to "$apx" report --force -o "$t/null" "$s" 2>"$t/err" || no "report --force -o DEVICE: exit $?"
	[ -c "$t/null" ] || no "report --force -o DEVICE replaced the device node"
	rm -f "$t/null"
fi
for f in perfetto chrome sqlite; do
	"$apx" export --format $f -o /dev/null "$s" 2>"$t/err"; rc=$?
	grep -q "not built into this apx" "$t/err" && continue
	[ $rc -eq 0 ] && [ -c /dev/null ] || no "export --format $f -o /dev/null: exit $rc"
done
to "$apx" report -f json -o /dev/null "$s" 2>"$t/err" && [ -c /dev/null ] || no "report -o /dev/null"
# -o - is stdout for both
to "$apx" export --format chrome -o - "$s" 2>"$t/err" >"$t/out" &&
	python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$t/out" ||
	no "export -o -: exit, or not JSON: $(cat "$t/err")"
to "$apx" report -f json -o - "$s" 2>/dev/null >"$t/out" &&
	python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$t/out" || no "report -o -"
[ ! -e ./- ] || no "-o - made a file named '-'"
# a FIFO: streamed into (a reader is there)
mkfifo "$t/p"
for c in "report -f json" "export --format chrome"; do
	(timeout 30 cat "$t/p" >"$t/got") &
	to "$apx" $c -o "$t/p" "$s" 2>"$t/err" || no "$c -o FIFO: exit $?: $(cat "$t/err")"
	wait
	[ -p "$t/p" ] && python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$t/got" ||
		no "$c -o FIFO: not streamed"
done
rm -f "$t/p" "$t/got"
# a symbolic link is refused, --force or not: neither the link nor its target changes
echo target >"$t/target"; ln -s target "$t/link"
for c in "report --force" "export --force --format chrome"; do
	to "$apx" $c -o "$t/link" "$s" 2>"$t/err"; rc=$?
	[ $rc -eq 1 ] && grep -q "is a symbolic link: apx does not write through links" "$t/err" &&
		[ -L "$t/link" ] && [ "$(cat "$t/target")" = target ] ||
		no "$c -o LINK: exit $rc: $(cat "$t/err")"
done
ln -s /dev/null "$t/nlink"
to "$apx" report --force -o "$t/nlink" "$s" 2>/dev/null; [ $? -eq 1 ] && [ -L "$t/nlink" ] ||
	no "report -o LINK-to-device"
# a folder is refused
mkdir "$t/dir"
for c in "report --force" "export --force --format chrome"; do
	to "$apx" $c -o "$t/dir" "$s" 2>"$t/err"; rc=$?
	[ $rc -eq 1 ] && grep -q "is a folder" "$t/err" && [ -d "$t/dir" ] ||
		no "$c -o FOLDER: exit $rc: $(cat "$t/err")"
done
rm -rf "$t/dir" "$t/link" "$t/nlink" "$t/target"
# a new name in a missing folder: exit 1, said
for c in "report" "export --format chrome"; do
	to "$apx" $c -o "$t/none/x" "$s" 2>"$t/err"; rc=$?
	[ $rc -eq 1 ] && grep -q "its folder does not exist" "$t/err" || no "$c -o MISSING/x: exit $rc"
done

# --- 3. write errors: the real errno, said once, exit 1, old file intact, no temporary file
for f in text json csv html; do
	to "$apx" report -f $f -o /dev/full "$s" 2>"$t/err"; rc=$?
	[ $rc -eq 1 ] && [ "$(count "No space left on device" "$t/err")" -eq 1 ] ||
		no "report -f $f -o /dev/full: exit $rc: $(cat "$t/err")"
	to "$apx" report -f $f "$s" 2>"$t/err" >/dev/full; rc=$?
	[ $rc -eq 1 ] && [ "$(count "cannot write to stdout: No space left on device" "$t/err")" -eq 1 ] &&
		[ "$(wc -l <"$t/err")" -eq 1 ] || no "report -f $f >/dev/full: exit $rc: $(cat "$t/err")"
done
for f in perfetto chrome sqlite; do
	to "$apx" export --format $f -o /dev/full "$s" 2>"$t/err"; rc=$?
	grep -q "not built into this apx" "$t/err" && continue
	[ $rc -eq 1 ] && [ "$(count "No space left on device" "$t/err")" -eq 1 ] ||
		no "export --format $f -o /dev/full: exit $rc: $(cat "$t/err")"
	to "$apx" export --format $f -o - "$s" 2>"$t/err" >/dev/full; rc=$?
	[ $rc -eq 1 ] && [ "$(count "No space left on device" "$t/err")" -eq 1 ] ||
		no "export --format $f -o - >/dev/full: exit $rc: $(cat "$t/err")"
done
only "" "$TMPDIR" || no "export left files under TMPDIR: $(ls -A "$TMPDIR")"
to "$apx" info "$s" 2>"$t/err" >/dev/full; rc=$?
[ $rc -eq 1 ] && [ "$(count "cannot write to stdout: No space left on device" "$t/err")" -eq 1 ] ||
	no "info >/dev/full: exit $rc: $(cat "$t/err")"
to "$apx" --help >/dev/full 2>/dev/null && no "apx --help >/dev/full: exit 0"
to "$apx" config -f "$t/c.conf" list 2>"$t/err" >/dev/full; rc=$?
[ $rc -eq 1 ] && grep -q "apx config: cannot write to stdout: No space left on device" "$t/err" ||
	no "config list >/dev/full: exit $rc: $(cat "$t/err")"
# status and history: a stand-in daemon on a socket answers every request with nothing
python3 - "$t/sock" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1]); s.listen(8); s.settimeout(30)
for _ in range(4):
    c, _ = s.accept(); c.recv(256); c.sendall(b"ok\nend\n"); c.close()
PY
i=0; while [ ! -S "$t/sock" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
for c in status history; do
	to "$apx" $c --socket "$t/sock" >"$t/out" 2>"$t/err" || no "$c with a stand-in: exit $?"
	to "$apx" $c --socket "$t/sock" 2>"$t/err" >/dev/full; rc=$?
	[ $rc -eq 1 ] && [ "$(count "cannot write to stdout: No space left on device" "$t/err")" -eq 1 ] ||
		no "$c >/dev/full: exit $rc: $(cat "$t/err")"
done
wait
# a full file system: the old file stays, no temporary file is left, ENOSPC is said
if [ $root -eq 1 ] && mkdir "$t/full" && mount -t tmpfs -o size=64k tmpfs "$t/full" 2>/dev/null; then
	full=$t/full
	echo old >"$full/r"
	dd if=/dev/zero of="$full/fill" bs=1k count=200 2>/dev/null	# until it is full
	big=$fix/real/sync_every_step.apx
	for f in text json csv html; do
		to "$apx" report -f $f --force -o "$full/r" "$big" 2>"$t/err"; rc=$?
		[ $rc -eq 1 ] && grep -q "cannot write '.*/r': No space left on device" "$t/err" &&
			[ "$(cat "$full/r")" = old ] && only "$(printf 'fill\nr')" "$full" ||
			no "report -f $f on a full disk: exit $rc: $(cat "$t/err"); $(ls -A "$full")"
	done
	for f in perfetto chrome sqlite; do
		to "$apx" export --format $f --force -o "$full/r" "$big" 2>"$t/err"; rc=$?
		grep -q "not built into this apx" "$t/err" && continue
		[ $rc -eq 1 ] && grep -Eq "No space left on device|disk is full" "$t/err" &&
			! grep -q "Input/output error" "$t/err" &&
			[ "$(cat "$full/r")" = old ] && only "$(printf 'fill\nr')" "$full" ||
			no "export --format $f on a full disk: exit $rc: $(cat "$t/err"); $(ls -A "$full")"
	done
	umount "$full"; full=
fi

# --- 5. an existing file only with --force, never one of the inputs
cp "$s" "$t/s.apx"
echo keep >"$t/r.txt"
to "$apx" report -o "$t/r.txt" "$s" 2>"$t/err"; rc=$?
[ $rc -eq 2 ] && grep -q "exists; pass --force" "$t/err" && [ "$(cat "$t/r.txt")" = keep ] ||
	no "report -o EXISTING without --force: exit $rc"
to "$apx" report --force -o "$t/r.txt" "$s" 2>/dev/null && grep -q '^Summary' "$t/r.txt" ||
	no "report --force -o EXISTING"
to "$apx" report -o "$t/s.apx" "$t/s.apx" 2>/dev/null; [ $? -eq 2 ] || no "report -o INPUT: not refused"
ln "$t/s.apx" "$t/hard.apx"; ln -s s.apx "$t/soft.apx"
for c in "report --force" "report -f html --force" "export --force --format chrome"; do
	for o in s.apx hard.apx; do
		for in in s.apx soft.apx hard.apx; do
			to "$apx" $c -o "$t/$o" "$t/$in" 2>"$t/err"; rc=$?
			[ $rc -eq 1 ] && grep -q "one of its inputs: refusing to write over it" "$t/err" &&
				cmp -s "$s" "$t/s.apx" || no "$c -o $o $in: exit $rc: $(cat "$t/err")"
		done
	done
done
# a run's FILE.<pid> (read along with FILE) is an input too
cp "$fix/real/fork_and_subprocess.apx" "$t/run.apx"
cp "$fix/real/fork_and_subprocess.apx.979" "$t/run.apx.979"
for c in "report --force" "export --force --format chrome"; do
	to "$apx" $c -o "$t/run.apx.979" "$t/run.apx" 2>"$t/err"; rc=$?
	[ $rc -eq 1 ] && cmp -s "$t/run.apx.979" "$fix/real/fork_and_subprocess.apx.979" ||
		no "$c -o FILE.<pid> FILE: exit $rc"
done
only "$(printf 'err\nfull\nhard.apx\nout\nr.txt\nrun.apx\nrun.apx.979\ns.apx\nsock\nsoft.apx\ntmp')" "$t" ||
	no "temporary files left: $(ls -A "$t")"
rm -f "$t/hard.apx" "$t/soft.apx"

# --- 4. apx analyze -f removes only FILE's own run's FILE.<pid>; its warnings are escaped
mkdir "$t/a" && cd "$t/a" || exit 1
cp "$fix/real/fork_and_subprocess.apx.979" run.apx.979	# another run's; run.apx missing
to "$apx" analyze -q -f -o run.apx -- true 2>"$t/err" || no "analyze -f (FILE missing): exit $?"
[ -e run.apx.979 ] && grep -q "kept '.*run.apx.979': not a trace of the run being replaced" "$t/err" ||
	no "analyze -f with FILE missing removed another run's trace"
echo "not a trace" >run.apx
to "$apx" analyze -q -f -o run.apx -- true 2>"$t/err" || no "analyze -f (FILE not a trace): exit $?"
[ -e run.apx.979 ] || no "analyze -f with FILE not a trace removed another run's trace"
esc=$(printf 'e\033[5m.apx')
cp "$s" "$esc.12"
to "$apx" analyze -q -f -o "$esc" -- true 2>"$t/err" || no "analyze -f ESC: exit $?"
! LC_ALL=C grep -q "$(printf '\033')" "$t/err" && grep -q 'kept .*e\\x1b\[5m.apx.12' "$t/err" ||
	no "analyze -f: the kept warning printed the path raw: $(cat -v "$t/err")"
# -o a device, FIFO or link: refused, even with --force, the node kept
mkfifo fifo.apx; ln -s run.apx link.apx
for o in fifo.apx link.apx; do
	to "$apx" analyze -q -f -o $o -- touch ran 2>"$t/err"; rc=$?
	[ $rc -eq 1 ] && [ ! -e ran ] && grep -q "is not a regular file" "$t/err" && [ -e $o ] ||
		no "analyze -f -o $o: exit $rc, $(ls)"
done

# --- 6. apx analyze -o into a place that cannot be written: refused before the program runs
to "$apx" analyze -q -o "$t/none/x.apx" -- touch ran 2>"$t/err"; rc=$?
[ $rc -eq 1 ] && [ ! -e ran ] && grep -q "its folder does not exist" "$t/err" ||
	no "analyze -o MISSING/x: exit $rc"
mkdir "$t/d"
to "$apx" analyze -q -o "$t/d" -- touch ran 2>"$t/err"; rc=$?
[ $rc -eq 1 ] && [ ! -e ran ] && grep -q "is a folder" "$t/err" || no "analyze -o FOLDER: exit $rc"
if [ $root -eq 1 ] && command -v setpriv >/dev/null; then
	mkdir "$t/ro" && chmod 755 "$t/ro" "$t" "$t/a" && chmod 777 "$t/a"
	to setpriv --reuid=nobody --regid=nogroup --clear-groups "$apx" analyze -q \
		-o "$t/ro/x.apx" -- touch "$t/a/ran" 2>"$t/err"; rc=$?
	[ $rc -eq 1 ] && [ ! -e "$t/a/ran" ] && grep -q "cannot write '.*x.apx': Permission denied" "$t/err" ||
		no "analyze -o UNWRITABLE as nobody: exit $rc, $(cat "$t/err")"
fi
cd "$t" || exit 1

[ $fail -eq 0 ] && echo "output-safety: all checks passed"
exit $fail
