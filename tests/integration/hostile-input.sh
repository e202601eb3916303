#!/bin/sh
# hostile-input.sh - the apx command against hostile or careless input: FIFOs and
# devices never block a reader, terminal escapes from traces and file names never reach the
# terminal raw, damaged chunks are reported (exit 1), a trace cut while read never faults, a
# run's files named twice are read once, apx analyze's failed starts, --force and option
# errors, colour only on a terminal and never with NO_COLOR. Every command runs under
# timeout: a hang is a failure. Exports that agree with info about damage, extreme
# header and device values, bytes that are not UTF-8 and NUL bytes in names, CSV formulas,
# thread ids that share their low 24 bits, report out of memory, a gzip bomb: sections 3b
# and 9. Called by ctest: APX SRCDIR HOSTILE-GEN.
set -u
apx=$1 src=$2 gen=${3:-}
fix=$src/tests/fixtures
fail=0
t=$(mktemp -d) || exit 1
trap 'rm -rf "$t"' EXIT
to() { timeout 30 "$@"; }
no() { echo "FAIL: $*"; fail=1; }
# no raw ESC, BEL, CSI (C1, as UTF-8 or a byte), DEL or CR in a file
clean() { ! LC_ALL=C grep -q "$(printf '[\033\007\233\177\r]')" "$1"; }

# --- 1. FIFOs and other non-regular files: refused at once, named, exit 1
mkfifo "$t/f.apx"
to "$apx" info "$t/f.apx" 2>"$t/err"; rc=$?
[ $rc -eq 1 ] && grep -q "f.apx: not a regular file (a FIFO)" "$t/err" || no "info on a FIFO: exit $rc"
to "$apx" report "$t/f.apx" >/dev/null 2>"$t/err"; rc=$?
[ $rc -eq 1 ] && grep -q "not a regular file (a FIFO)" "$t/err" || no "report on a FIFO: exit $rc"
to "$apx" info /dev/zero 2>"$t/err"; rc=$?
[ $rc -eq 1 ] && grep -q "a character device" "$t/err" || no "info on /dev/zero: exit $rc"
mkdir "$t/run" && cp "$fix/sample.apx" "$t/run/data.apx" && mkfifo "$t/run/data.apx.123"
to "$apx" report -s summary "$t/run/data.apx" >"$t/out" 2>"$t/err"; rc=$?
[ $rc -eq 1 ] && grep -q "data.apx.123: not a regular file (a FIFO)" "$t/err" &&
	grep -q "1 file;" "$t/out" || no "report with a FIFO FILE.<pid>: exit $rc"
# apx history: a daemon (here a stand-in on a socket) lists a FIFO planted among summaries
cp "$fix/sample.apx" "$t/run/good.apx"
python3 - "$t/sock" "$t/run/data.apx.123" "$t/run/good.apx" <<'PY' &
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1]); s.listen(1)
c, _ = s.accept(); c.recv(256)
c.sendall(("ok\n" + "".join("summary\t0\t1\t10\t%s\n" % p for p in sys.argv[2:]) + "end\n").encode())
c.close()
PY
i=0; while [ ! -S "$t/sock" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
to "$apx" history --socket "$t/sock" >"$t/out" 2>"$t/err"; rc=$?
[ $rc -eq 1 ] && grep -q "data.apx.123: not a regular file (a FIFO)" "$t/err" &&
	grep -q "good.apx" "$t/out" || no "history with a FIFO listed: exit $rc: $(cat "$t/err")"
wait
rm -f "$t/run/data.apx" "$t/run/good.apx"
to "$apx" analyze -q -o "$t/run/data.apx" -- true 2>"$t/err"; rc=$?
[ $rc -eq 0 ] || no "analyze with a FIFO FILE.<pid> beside its output: exit $rc"
to "$apx" analyze -o "$t/run/x.apx" -- true 2>"$t/err" || no "analyze summary"
rm -rf "$t/run"

# --- 2. escapes from a trace: escaped in text, JSON-escaped in JSON, UTF-8 kept
h=$fix/corrupt/hostile-strings.apx
to "$apx" report --color never "$h" >"$t/out" 2>"$t/err" || no "report hostile-strings: exit $?"
clean "$t/out" || no "report printed a raw control byte"
clean "$t/err" || no "report's stderr has a raw control byte"
grep -q 'evil_kernel\\u009b\\xff\\xfe' "$t/out" || no "kernel name not shown escaped"
grep -q '\\x1b\]2;retitled' "$t/out" || no "finding title not shown escaped"
grep -q "caf$(printf '\303\251') $(printf '\342\234\223')" "$t/out" || no "UTF-8 of argv lost in the text"
to "$apx" info "$h" >"$t/out" 2>"$t/err" || no "info hostile-strings: exit $?"
clean "$t/out" || no "info printed a raw control byte"
grep -q "trace time - 9223372036.854775808 s" "$t/out" || no "INT64_MIN realtime offset"
to "$apx" report --format json "$h" >"$t/json" || no "report --format json hostile-strings"
python3 - "$t/json" <<'PY' || no "JSON of hostile-strings"
import json, sys
d = json.load(open(sys.argv[1], encoding="utf-8"))  # strict UTF-8
f = d["files"][0]
assert f["command"] == "python3 \x1b]0;pwned\x07train.py --name=caf\u00e9 \u2713", f["command"]
k = d["kernels"][0]["mangled"]
assert k == "\x1b[2J\x1b[31mevil_kernel\u009b\ufffd\ufffd", repr(k)
t = [x for x in d["findings"] if x["rule"] == "recorded"][0]["title"]
assert t == "\x1b]2;retitled\x1b\\title \u2713", repr(t)
assert b"\x1b" not in open(sys.argv[1], "rb").read()
PY
# a file name with an escape: shown escaped in every message
cp "$fix/sample.apx" "$t/$(printf 'x\033]0;t\007.apx')"
to "$apx" report -s summary "$t"/x*.apx >"$t/out" 2>"$t/err"
clean "$t/out" && clean "$t/err" || no "a file name's escape reached the terminal"
to "$apx" info "$t"/x*.apx >"$t/out" 2>&1; clean "$t/out" || no "info: a file name's escape"
mkdir "$t/hist" && cp "$h" "$t/hist/s.apx" && cp "$t"/x*.apx "$t/hist/"
to "$apx" history --dir "$t/hist" >"$t/out" 2>&1 || no "history --dir: exit $?"
clean "$t/out" || no "history printed a raw control byte"
to "$apx" history --json --dir "$t/hist" >"$t/json" || no "history --json: exit $?"
python3 - "$t/json" <<'PY' || no "history --json: UTF-8 or escapes wrong"
import json, sys
d = json.load(open(sys.argv[1], encoding="utf-8"))
c = {s["path"].rsplit("/", 1)[1]: s for s in d["summaries"]}
assert c["s.apx"]["command"] == "python3 \x1b]0;pwned\x07train.py --name=caf\u00e9 \u2713", c["s.apx"]
assert c["s.apx"]["user"] == "j\u00f6rg"
assert "x\x1b]0;t\x07.apx" in c, list(c)
PY
rm -rf "$t/hist" "$t"/x*.apx

# --- 3. checksum-valid chunks with damaged contents: damaged, records counted, exit 1
for f in bad-field-table wrong-field-kind; do
	to "$apx" report --format json "$fix/corrupt/$f.apx" >"$t/json" 2>"$t/err"; rc=$?
	[ $rc -eq 1 ] && grep -q "chunk 13 (kernel, 3 records) at offset 10477" "$t/err" ||
		no "report $f: exit $rc, $(cat "$t/err")"
	python3 -c "import json,sys; f=json.load(open(sys.argv[1]))['files'][0]; \
assert f['status'] == 'damaged' and f['records_unreadable'] == 3, f" "$t/json" || no "report $f JSON"
	to "$apx" report "$fix/corrupt/$f.apx" 2>/dev/null | grep -q "3 unreadable (damaged chunks" ||
		no "report $f text does not count the lost records"
done
to "$apx" report "$fix/corrupt/records-over-payload.apx" >/dev/null 2>"$t/err"; rc=$?
[ $rc -eq 1 ] && grep -q "declares 264 records in a 263-byte payload" "$t/err" || no "records-over-payload: exit $rc"

# --- 3b. apx export agrees with info and report about damage: what was
# lost and where, exit 1; a file with an undecodable chunk is called damaged
to "$apx" export --format chrome -o "$t/o.json" "$fix/corrupt/bad-field-table.apx" 2>"$t/err"; rc=$?
[ $rc -eq 1 ] && grep -q "damaged: chunk 13 (kernel, 3 records) at offset 10477" "$t/err" &&
	grep -q "3 records of 1 chunk cannot be read" "$t/err" && [ -s "$t/o.json" ] ||
	no "export of bad-field-table: exit $rc, $(cat "$t/err")"
to "$apx" export --format chrome -o "$t/u.json" "$fix/corrupt/undecodable-record.apx" 2>"$t/err"
grep -q "undecodable-record.apx: damaged: chunk 1 (kernel)" "$t/err" || no "undecodable record not called damaged"
for f in "$fix"/corrupt/*.apx; do	# every fixture: the same exit status as info
	to "$apx" info -q "$f" >/dev/null 2>&1; i=$?
	# not-apx.apx is Kineto JSON ({"traceEvents": []}): export reads it as report does
	[ "$(basename "$f")" = not-apx.apx ] && { to "$apx" report "$f" >/dev/null 2>&1; i=$?; }
	to "$apx" export -f --format perfetto -o "$t/o.pf" "$f" >/dev/null 2>&1; e=$?
	[ $i -eq $e ] || no "$(basename "$f"): info (report) exits $i, export $e"
done
mkdir "$t/mut" && python3 "$src/tests/integration/mutate-apx.py" "$fix/sample.apx" "$t/mut" 150 &&
	python3 "$src/tests/integration/mutate-apx.py" "$fix/real/launch_bound.apx" "$t/mut" 40 7 ||
	no "mutate-apx.py"
nd=0
for f in "$t"/mut/*.apx; do
	to "$apx" info -q "$f" >/dev/null 2>&1; i=$?
	to "$apx" export -f --format chrome -o "$t/o.json" "$f" >/dev/null 2>"$t/err"; e=$?
	[ $i -eq 1 ] && nd=$((nd + 1))
	[ $i -eq $e ] || no "mutant $(basename "$f"): info exits $i, export $e: $(head -c 300 "$t/err")"
	[ $i -eq 0 ] || grep -q -e ": damaged: " -e ": truncated: " -e "cannot read the traces" "$t/err" ||
		no "mutant $(basename "$f"): export did not say what was lost"
	[ $e -le 1 ] || no "mutant $(basename "$f"): export exit $e"
done
[ $nd -ge 10 ] || no "only $nd damaged mutants: the loop checks too little"

# --- 4. a trace cut while apx report reads it: never a signal (SIGBUS was 10 of 10)
i=0
while [ $i -lt 10 ]; do
	cp "$fix/real/uvm_migrations.apx" "$t/cut.apx"
	"$apx" report "$t/cut.apx" >/dev/null 2>&1 &
	pid=$!
	truncate -s $((i * 50000 + 1000)) "$t/cut.apx"
	wait $pid; rc=$?
	[ $rc -le 1 ] || no "report on a trace cut while read: exit $rc"
	i=$((i + 1))
done

# --- 6. a run's child named as well (apx report run.apx*) is read once
cp "$fix/real/fork_and_subprocess.apx" "$t/run.apx"
cp "$fix/real/fork_and_subprocess.apx.979" "$t/run.apx.979"
to "$apx" report -s summary "$t"/run.apx* 2>"$t/err" | grep -q "2 files;" || no "run.apx* read a file twice"
to "$apx" report --format json "$t/run.apx.979" "$t/run.apx" "$t/run.apx" 2>/dev/null |
	python3 -c "import json,sys; assert len(json.load(sys.stdin)['files']) == 2" || no "dedupe by identity"

# --- 8. apx analyze: failed starts leave nothing; --force removes only the run's files
mkdir "$t/a" && cd "$t/a" || exit 1
to "$apx" analyze typo.py 2>"$t/err"; rc=$?
[ $rc -eq 1 ] && grep -q "cannot run 'typo.py': No such file" "$t/err" && [ ! -e data.apx ] ||
	no "analyze typo.py: exit $rc, data.apx $(ls)"
to "$apx" analyze -- no-such-command-apx 2>"$t/err"; rc=$?
[ $rc -eq 127 ] && grep -q "cannot run 'no-such-command-apx'" "$t/err" && [ ! -e data.apx ] ||
	no "analyze of a command that cannot start: exit $rc, $(ls)"
to "$apx" analyze -q -- true 2>/dev/null || no "analyze after failed starts (refused: exists?)"
cp "$h" h.apx.77	# the summary reads a FILE.<pid>: what it prints from it is escaped
to "$apx" analyze -o h.apx -- true 2>"$t/err" || no "analyze with a hostile FILE.<pid>"
clean "$t/err" && grep -q 'degraded: no \\x1b\[5mNVTX' "$t/err" || no "analyze summary printed raw"
cp "$fix/real/fork_and_subprocess.apx" run.apx
cp "$fix/real/fork_and_subprocess.apx.979" run.apx.979
cp "$fix/sample.apx" run.apx.5		# an apx trace, of another run
echo "not a trace" >run.apx.6
to "$apx" analyze -q -f -o run.apx -- true 2>"$t/err" || no "analyze -f"
[ ! -e run.apx.979 ] || no "-f kept the run's FILE.<pid>"
[ -e run.apx.5 ] && grep -q "kept '.*run.apx.5': not a trace of the run being replaced" "$t/err" ||
	no "-f removed another run's trace"
[ -e run.apx.6 ] && grep -q "kept '.*run.apx.6': not an apx trace" "$t/err" || no "-f removed a non-trace"
to "$apx" analyze -o "$t/" x.py 2>"$t/err"; grep -q "names a folder: give a file name" "$t/err" || no "-o DIR/"
to "$apx" analyze -o "$t" x.py 2>"$t/err"; grep -q "is a folder: give a file name" "$t/err" || no "-o DIR"
to "$apx" analyze --duration 1e99 x.py 2>"$t/err"; rc=$?
[ $rc -eq 2 ] && grep -q "takes seconds as a decimal number (e.g. 1.5), not '1e99'" "$t/err" || no "--duration 1e99"
to "$apx" analyze --duration 0x10 x.py 2>"$t/err"; rc=$?
[ $rc -eq 2 ] && grep -q "not '0x10'" "$t/err" || no "--duration 0x10 taken"
to "$apx" analyze --delay 2000000000 x.py 2>"$t/err"; grep -q "at most 1000000000 seconds" "$t/err" || no "--delay range"
to "$apx" report --format 2>"$t/err"; rc=$?
[ $rc -eq 2 ] && grep -q "option '--format' needs a value" "$t/err" || no "report --format without a value"
for c in "history -n" "status --sort" "top --delay"; do
	to "$apx" $c 2>"$t/err"; rc=$?
	[ $rc -eq 2 ] && grep -q "needs a value" "$t/err" || no "apx $c without a value: exit $rc"
done
cd "$t" || exit 1

# --- 9. exports and the report against hostile values (hostile-gen.c)
if [ -n "$gen" ] && "$gen" "$t/hv.apx"; then
	for fmt in chrome perfetto sqlite; do
		to "$apx" export -f --format $fmt -o "$t/hv.$fmt" "$t/hv.apx" >/dev/null 2>"$t/err"; rc=$?
		# sqlite is not built in without libsqlite3: then it is refused, named
		[ $rc -eq 0 ] || { [ $fmt = sqlite ] && grep -q "not built into" "$t/err"; } ||
			no "export $fmt of hostile values: exit $rc: $(cat "$t/err")"
	done
	python3 - "$t" <<'PY' || no "hostile values in the exports"
import json, os, sqlite3, sys
t = sys.argv[1]
c = json.load(open(t + "/hv.chrome", encoding="utf-8"))  # strict UTF-8
assert "baseTimeNanoseconds" not in c and "out of range" in c["apx_note"], c.get("apx_note")
names = [e["name"] for e in c["traceEvents"] if e.get("cat") == "kernel"]
assert "nul\\x00after" in names and "bad\ufffd\ufffd\ufffd" in names, names
pf = open(t + "/hv.perfetto", "rb").read()
assert b"bad\xff" not in pf and b"worker\xff" not in pf, "raw bytes in Perfetto strings"
assert b"bad\xef\xbf\xbd" in pf and b"nul\\x00after" in pf and b"w\\x00two" in pf
if os.path.exists(t + "/hv.sqlite"):
    db = sqlite3.connect(t + "/hv.sqlite")  # Python's sqlite3 refuses TEXT that is not UTF-8
    for table, in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
        db.execute("SELECT * FROM %s" % table).fetchall()
    th = db.execute("SELECT globalTid, tid, name FROM THREADS ORDER BY tid").fetchall()
    assert len(th) == 2 and th[0][0] != th[1][0], th  # tids 5 and 5 + 2^24: both kept
    assert th[1][0] % 0x1000000 == 5 and th[1][2] == "w\\x00two", th
    gpu = db.execute("SELECT totalMemory, clockRate FROM TARGET_INFO_GPU ORDER BY id").fetchall()
    assert gpu == [(None, None), (0, None)], gpu  # too large for INTEGER, or unknown: NULL
    meta = dict(db.execute("SELECT key, value FROM META WHERE key != 'input'").fetchall())
    assert "run_start_utc_ns" not in meta and "out of range" in meta["note"], meta
    names = [r[0] for r in db.execute("SELECT value FROM StringIds")]
    assert "nul\\x00after" in names and "bad\ufffd\ufffd\ufffd" in names, names
PY
	to "$apx" report --format csv -s kernels "$t/hv.apx" >"$t/csv" 2>/dev/null
	python3 - "$t/csv" <<'PY' || no "CSV formulas not neutralised"
import csv, sys
rows = list(csv.reader(open(sys.argv[1], encoding="utf-8")))
names = [r[0] for r in rows[1:] if r]
for n in names:
    assert n[:1] not in ("=", "+", "-", "@", "\t", "\r"), repr(n)
assert "'=HYPERLINK(\"http://x\",\"y\")" in names and "'+1+1" in names and "'@SUM(A1)" in names, names
assert "nul\\x00after" in names, names
PY
	to "$apx" report -s kernels "$t/hv.apx" 2>/dev/null | grep -q 'nul\\x00after' ||
		no "report text cut a name at its NUL"
	to "$apx" report --format json "$t/hv.apx" 2>/dev/null | grep -q '"nul\\\\x00after"' ||
		no "report JSON cut a name at its NUL"
else
	no "hostile-gen did not run"
fi
# a gzip bomb (3 MB inflating to 3 GB) is refused while it inflates, before 100 MiB
python3 -c "
import zlib, sys
c = zlib.compressobj(9, zlib.DEFLATED, 31); o = open(sys.argv[1], 'wb')
o.write(c.compress(b'{\"traceEvents\": ['))
for i in range(3000): o.write(c.compress(b' ' * (1 << 20)))
o.write(c.compress(b']}') + c.flush())" "$t/bomb.json.gz"
to "$apx" report "$t/bomb.json.gz" >/dev/null 2>"$t/err"; rc=$?
mib=$(sed -n 's/.*size (\([0-9]*\) MiB from.*/\1/p' "$t/err")
[ $rc -eq 1 ] && grep -q "a decompression bomb? not read" "$t/err" && [ "${mib:-999}" -lt 100 ] ||
	no "gzip bomb: exit $rc, $(cat "$t/err")"
# out of memory while reading (a sanitizer build fails allocations over 1 MB): says where
ASAN_OPTIONS=max_allocation_size_mb=1:allocator_may_return_null=1 to "$apx" report -s summary \
	"$fix/real/uvm_migrations.apx" >/dev/null 2>"$t/err"; rc=$?
[ $rc -eq 0 ] || grep -q "cannot build the model: out of memory at chunk [0-9]* (.*) at offset" "$t/err" ||
	no "report out of memory: exit $rc, $(cat "$t/err")"

# --- colour: only on a terminal, never with NO_COLOR
if command -v script >/dev/null; then
	TERM=xterm to script -qec "$apx report -s findings $fix/sample.apx" /dev/null >"$t/tty" 2>&1
	grep -q "$(printf '\033\\[1m')" "$t/tty" || no "no colour on a terminal"
	NO_COLOR=1 TERM=xterm to script -qec "$apx report -s findings $fix/sample.apx" /dev/null >"$t/tty" 2>&1
	LC_ALL=C grep -q "$(printf '\033')" "$t/tty" && no "colour with NO_COLOR"
fi
to "$apx" report -s findings "$fix/sample.apx" >"$t/out"; clean "$t/out" || no "colour into a pipe"

[ $fail -eq 0 ] && echo "hostile-input: all checks passed"
exit $fail
