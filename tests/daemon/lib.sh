# lib.sh - shared helpers of the nvperfd tests (sourced by test-*.sh): a scratch folder with its
# own config, state folder, log, socket and pid file; start/stop of the daemon; waits bounded in
# time; cleanup of everything the test started (trap on EXIT).
# Needs: APX (the apx binary), NVPERFD (the daemon binary); exits 77 (skipped) when not root.
set -u

if [ "$(id -u)" != 0 ]; then
	echo "SKIP: nvperfd tests need root (the netlink process connector needs CAP_NET_ADMIN)"
	exit 77
fi
# the system interpreter (readable by the test user too), else whatever python3 is
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3) || { echo "SKIP: python3 is not installed"; exit 77; }

T=$(mktemp -d /tmp/apxd.XXXXXX)
chmod 755 "$T"
CONF=$T/nvperfd.conf
export NVPERFD_SOCKET=$T/sock
PIDS=""
CLEANUP_EXTRA=""

cleanup() {
	for p in $PIDS; do kill -9 "$p" 2>/dev/null; done
	for p in $PIDS; do wait "$p" 2>/dev/null; done
	if [ -f "$T/pid" ]; then kill "$(cat "$T/pid")" 2>/dev/null; fi
	eval "$CLEANUP_EXTRA"
	if [ -n "${KEEP:-}" ]; then echo "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT

fail() {
	echo "FAIL: $*"
	echo "---- log ----"; tail -n 40 "$T/log" 2>/dev/null
	exit 1
}

write_conf() {
	cat > "$CONF" <<EOC
state_dir = $T/state
log_file = $T/log
socket = $T/sock
pid_file = $T/pid
syslog = no
log_level = debug
summary_min_runtime = 0
sample_period = ${SAMPLE_PERIOD:-0.2}
user_config = $T/user-%u.conf
$*
EOC
}

start_daemon() {
	"$APX" init --config "$CONF" --nvperfd "$NVPERFD" >/dev/null || fail "apx init failed"
	[ -S "$T/sock" ] || fail "no socket after apx init"
}

stop_daemon() {
	local p
	p=$(cat "$T/pid" 2>/dev/null) || return 0
	kill "$p"
	# wait (bounded) until it has released its pid file lock and exited; with uprobes the
	# kernel tears down each probe's perf event at exit (a grace period each), seconds on a
	# loaded machine
	for _ in $(seq 300); do kill -0 "$p" 2>/dev/null || return 0; sleep 0.05; done
	fail "nvperfd did not stop on SIGTERM"
}

# wait_for CMD... : retry CMD every 50 ms for up to ${WAIT_S:-5} s
wait_for() {
	local n=$(( ${WAIT_S:-5} * 20 ))
	for _ in $(seq $n); do "$@" >/dev/null 2>&1 && return 0; sleep 0.05; done
	return 1
}

tracked() {	# tracked PID: apx status --json lists it
	"$APX" status --json | grep -q "\"pid\":$1,"
}

now_ms() { date +%s%3N; }

# a Python process that lives until killed (or for $1 seconds)
start_python() {
	"$PY" -c "import time, sys; time.sleep(${1:-60})" &
	PIDS="$PIDS $!"
	LAST=$!
}

exe_is_python() { readlink "/proc/$1/exe" | grep -q python; }

# count_files DIR GLOB MIN: at least MIN files match DIR/GLOB (evaluated at each call)
count_files() { [ "$(ls "$1"/$2 2>/dev/null | wc -l)" -ge "$3" ]; }
