#!/bin/bash
# run.sh BUILD part I N [OPT...] | run.sh BUILD cases LIST NAME [OPT...] | run.sh merge DEST DIR...
# - tests/gpu/suite/run.py on the GPU machine in N
# device calls (the whole suite takes about 18 minutes, a call at most 10): `part I N` runs
# every N-th case and clean model from the I-th (run.py --part I/N; N=3 gives about 6 minutes
# a call) in the foreground, facts.json written after every round, and packs the traces,
# facts.json and the log into $OUT/suite-part-I.tgz (one file: a call brings back 8 at most);
# `cases LIST NAME [RUN.PY OPTIONS]` does the same for the cases of LIST (a,b: run.py
# --cases) into $OUT/suite-part-NAME.tgz, to re-capture a few (e.g. `--traced-reps 3`).
# Options after `part I N` go to run.py too. With `--programs tests/gpu/NAME/programs.py`
# (the held-out suite: NAME heldout) the tarball is $OUT/NAME-part-I.tgz, so that the
# two suites' parts never mix. SUITE_TIMEOUT (seconds, default 570) bounds run.py, so that two
# parts fit one call.
# `merge DEST DIR...` (here, no GPU) unpacks the parts found in the DIRs into DEST (e.g.
# tests/fixtures/suite; a trace over 512 KiB, or held-out, as NAME.apx.xz) and merges their
# facts.json, case by case; commit the result. The parts merged are those of the programs
# folder DEST is named after (tests/fixtures/heldout: heldout-part-*.tgz, as
# tests/gpu/heldout exists), else the dev suite's suite-part-*.tgz.
# The measured saving (facts.json diff_ms, what suite-check compares apx's estimate with) is,
# for every case programs.PAIRABLE allows, the median difference of adjacent planted/fixed
# blocks timed in one process (3 processes of `programs.py CASE paired`, 6 pairs each), no
# longer the difference of separate processes' medians: on the H200 machine the same program's
# step time varies by up to 1.8x from process to process (some run at ~55 % speed throughout;
# adjacent blocks of one process agree within a few %), so a difference across processes was
# that spread as much as the planted problem. replica, which cannot be paired, gets 5
# processes per variant. The traced runs are as before: one process per variant.
set -u
here=$(cd "$(dirname "$0")" && pwd)
[ "${1:-}" = merge ] && set -- "${2:-}" merge "${@:3}"
case "${2:-}" in
part | cases)
	build=$(cd "$1" && pwd)
	if [ "$2" = part ]; then
		i=${3:?part I N} n=${4:?part I N}
		sel=(--part "$i/$n" "${@:5}")	# and run.py's own options after N
	else
		i=${4:?cases LIST NAME}
		sel=(--cases "$3" "${@:5}")	# and run.py's own options after NAME
	fi
	prefix=suite	# the programs folder's name: tests/gpu/heldout/programs.py -> heldout
	for ((k = 0; k < ${#sel[@]}; k++)); do
		case "${sel[k]}" in
		--programs) prefix=$(basename "$(dirname "${sel[k + 1]:-.}")") ;;
		--programs=*) prefix=$(basename "$(dirname "${sel[k]#--programs=}")") ;;
		esac
	done
	if ldd "$build/libapx-inject.so" | grep -q "not found"; then
		d=$(dirname "$(find / -name 'libcupti.so.13*' 2>/dev/null | head -1)")
		export LD_LIBRARY_PATH=$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	fi
	dir=$(mktemp -d)
	mkdir -p "$dir/out"
	PYTHONUNBUFFERED=1 timeout "${SUITE_TIMEOUT:-570}" python3 "$here/run.py" "$build" "$dir/out" "${sel[@]}" \
		2>&1 | tee "$dir/out/run-part-$i.log" | tail -25
	tar czf "${OUT:-.}/$prefix-part-$i.tgz" -C "$dir/out" .
	;;
merge)
	dest=$1
	shift 2
	mkdir -p "$dest" || exit 1
	python3 - "$here" "$dest" "$@" <<'EOF'
import glob, json, lzma, os, shutil, sys, tarfile, tempfile
here, dest, dirs = sys.argv[1], sys.argv[2], sys.argv[3:]
facts_path = os.path.join(dest, "facts.json")
facts = json.load(open(facts_path)) if os.path.exists(facts_path) else {}
name = os.path.basename(os.path.normpath(dest))     # tests/fixtures/heldout: heldout's parts
prefix = name if os.path.isfile(os.path.join(here, "..", name, "programs.py")) else "suite"
parts = sorted(p for d in dirs for p in glob.glob(os.path.join(d, f"{prefix}-part-*.tgz")))
if not parts:
    sys.exit(f"run.sh merge: no {prefix}-part-*.tgz in " + ", ".join(ascii(d) for d in dirs))
for p in parts:
    with tempfile.TemporaryDirectory() as t:
        with tarfile.open(p) as tf:     # plain files of plain names only
            for m in tf.getmembers():
                name = os.path.basename(m.name)
                if m.isfile() and name and name == m.name.removeprefix("./"):
                    with open(os.path.join(t, name), "wb") as out:
                        out.write(tf.extractfile(m).read())
        part = json.load(open(os.path.join(t, "facts.json")))
        for name in os.listdir(t):
            if not name.endswith(".apx"):
                continue
            src, out = os.path.join(t, name), os.path.join(dest, name)
            # xz for the held-out suite, a trace stored so already or one over 512 KiB (the
            # repository stays small enough to travel to the device machine); suite-check
            # reads both
            if prefix != "suite" or os.path.exists(out + ".xz") or \
                    os.path.getsize(src) > 512 * 1024:
                with open(src, "rb") as fin, lzma.open(out + ".xz", "wb", preset=9) as fout:
                    shutil.copyfileobj(fin, fout)
                if os.path.exists(out):
                    os.remove(out)
            else:
                os.replace(src, out)
                if os.path.exists(out + ".xz"):
                    os.remove(out + ".xz")
        facts.update(part)
        print(f"{ascii(p)}: {len(part)} cases: {', '.join(sorted(part))}")
with open(facts_path, "w") as fh:
    json.dump(facts, fh, indent=1, sort_keys=True)
EOF
	;;
*)
	echo "usage: run.sh BUILD part I N [OPT...] | run.sh BUILD cases LIST NAME [OPT...] |" \
		"run.sh merge DEST DIR..." >&2
	exit 2
	;;
esac
