#!/bin/bash
# test-install.sh MODE - apx installed like a real tool. Run by ctest (label install):
#   tree  cmake --install of the build folder into a scratch DESTDIR with the prefix /usr: every
#         file in its FHS place, the unit naming the installed nvperfd, the installed apx run
#         from there (--version, apx report on a bundled real trace, apx info), nvperfd --help
#         and --version, the bash completion sourced from the installed tree
#   deb   cpack -G DEB: the .deb's control fields, conffiles and file list (dpkg-deb -I/-c),
#         unpacked with dpkg-deb -x and its binaries run from there; skipped (77) without
#         dpkg-deb. This is the package of this build: a release one is made the same way in
#         a release build folder (README.md, "Installing").
# Needs: BUILD (the build folder), SRC (the source tree); APX for the expected version.
set -u
MODE=${1:?tree or deb}
T=$(mktemp -d /tmp/apxinst.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
FIXTURE=$SRC/tests/fixtures/real/launch_bound.apx
VERSION=$("$APX" --version | awk '{ print $2 }')

# run_installed ROOT: the binaries of an installed tree under ROOT work from there
run_installed() {
	local r=$1 out
	out=$("$r/usr/bin/apx" --version) || fail "installed apx --version"
	[ "$out" = "$("$APX" --version)" ] || fail "installed apx --version: $out"
	"$r/usr/bin/apx" report --color never "$FIXTURE" > "$T/report.txt" 2>"$T/report.err" ||
		fail "installed apx report: $(cat "$T/report.err")"
	grep -q "launch" "$T/report.txt" || fail "installed apx report: no finding ($(head -n 20 "$T/report.txt"))"
	"$r/usr/bin/apx" report --format json "$FIXTURE" | "${PY:-python3}" -c "import json, sys; json.load(sys.stdin)" ||
		fail "installed apx report --format json: not JSON"
	"$r/usr/bin/apx" info --quiet "$FIXTURE" > /dev/null || fail "installed apx info"
	if [ -e "$BUILD/nvperfd" ]; then
		"$r/usr/sbin/nvperfd" --help | grep -q "^usage: nvperfd " || fail "installed nvperfd --help"
		[ "$("$r/usr/sbin/nvperfd" --version)" = "nvperfd $VERSION" ] || fail "installed nvperfd --version"
	fi
}

# the files an install must have (relative to the root)
expect_files() {
	local r=$1 f
	for f in usr/bin/apx usr/share/man/man1/apx.1 usr/share/bash-completion/completions/apx \
		 usr/share/doc/apx/README.md; do
		[ -f "$r/$f" ] || fail "not installed: /$f"
	done
	[ -x "$r/usr/bin/apx" ] || fail "/usr/bin/apx not executable"
	if [ -e "$BUILD/nvperfd" ]; then
		for f in usr/sbin/nvperfd usr/lib/systemd/system/nvperfd.service \
			 etc/logrotate.d/nvperfd etc/rsyslog.d/30-nvperfd.conf \
			 usr/share/man/man8/nvperfd.8 usr/share/man/man5/nvperfd.conf.5 \
			 usr/share/doc/apx/examples/nvperfd.conf; do
			[ -f "$r/$f" ] || fail "not installed: /$f"
		done
		grep -qx "ExecStart=/usr/sbin/nvperfd --foreground" "$r/usr/lib/systemd/system/nvperfd.service" ||
			fail "the unit does not start the installed nvperfd: $(grep ExecStart "$r/usr/lib/systemd/system/nvperfd.service")"
	fi
	# the collector where apx analyze looks for it (../lib/apx/ beside bin/), when built
	for f in libapx-inject.so libapx-watch.so; do
		if [ -e "$BUILD/lib/collector/$f" ] || ls "$BUILD"/$f >/dev/null 2>&1; then
			[ -f "$r/usr/lib/apx/$f" ] || fail "not installed: /usr/lib/apx/$f"
		fi
	done
	# nothing outside the FHS places of a /usr package
	local stray
	stray=$(cd "$r" && find . -type f | grep -vE '^\./(usr/(bin|sbin|lib/apx|lib/systemd/system|share/(man|doc|bash-completion))|etc/(logrotate|rsyslog)\.d)/')
	[ -z "$stray" ] || fail "installed outside the FHS places: $stray"
}

case $MODE in
tree)
	DESTDIR=$T/root cmake --install "$BUILD" --prefix /usr > "$T/install.log" 2>&1 ||
		fail "cmake --install: $(tail -n 20 "$T/install.log")"
	expect_files "$T/root"
	run_installed "$T/root"
	# the completion, as bash-completion loads it
	got=$(bash -c ". '$T/root/usr/share/bash-completion/completions/apx'
		COMP_WORDS=(apx rep); COMP_CWORD=1; _apx; echo \"\${COMPREPLY[*]}\"
		COMP_WORDS=(apx report --s); COMP_CWORD=2; _apx; echo \"\${COMPREPLY[*]}\"
		COMP_WORDS=(apx report --section k); COMP_CWORD=3; _apx; echo \"\${COMPREPLY[*]}\"")
	[ "$got" = "report
--section --savings --single
kernels" ] || fail "bash completion: $got"
	echo "ok: $(cd "$T/root" && find . -type f | wc -l) files installed, binaries run from the tree"
	;;
deb)
	command -v dpkg-deb >/dev/null || { echo "SKIP: no dpkg-deb"; exit 77; }
	command -v cpack >/dev/null || { echo "SKIP: no cpack"; exit 77; }
	(cd "$BUILD" && cpack -G DEB -B "$T/pkg") > "$T/cpack.log" 2>&1 || fail "cpack: $(tail -n 20 "$T/cpack.log")"
	deb=$(ls "$T"/pkg/apx_*.deb 2>/dev/null | head -n 1)
	[ -n "$deb" ] || fail "no .deb made: $(tail -n 5 "$T/cpack.log")"
	[ "$(dpkg-deb -f "$deb" Package)" = apx ] || fail "Package: $(dpkg-deb -f "$deb" Package)"
	[ "$(dpkg-deb -f "$deb" Version)" = "$VERSION" ] || fail "Version: $(dpkg-deb -f "$deb" Version)"
	dpkg-deb -f "$deb" Depends | grep -q "libc6" || fail "Depends: $(dpkg-deb -f "$deb" Depends)"
	dpkg-deb -c "$deb" | awk '{ print $6 }' > "$T/list"
	for f in ./usr/bin/apx ./usr/share/man/man1/apx.1 ./usr/share/bash-completion/completions/apx; do
		grep -qx "$f" "$T/list" || fail "$f not in the .deb: $(cat "$T/list")"
	done
	if [ -e "$BUILD/nvperfd" ]; then
		for f in ./usr/sbin/nvperfd ./usr/lib/systemd/system/nvperfd.service \
			 ./etc/logrotate.d/nvperfd ./etc/rsyslog.d/30-nvperfd.conf ./usr/share/man/man8/nvperfd.8 \
			 ./usr/share/man/man5/nvperfd.conf.5; do
			grep -qx "$f" "$T/list" || fail "$f not in the .deb"
		done
		dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles > "$T/conffiles" 2>/dev/null ||
			fail "no conffiles in the .deb"
		grep -qx /etc/logrotate.d/nvperfd "$T/conffiles" && grep -qx /etc/rsyslog.d/30-nvperfd.conf "$T/conffiles" ||
			fail "conffiles: $(cat "$T/conffiles")"
	fi
	dpkg-deb -x "$deb" "$T/root" || fail "dpkg-deb -x"
	expect_files "$T/root"
	run_installed "$T/root"
	# dpkg itself installs it (maintainer scripts, conffiles) into a private root and database,
	# the binaries run from there, and a purge leaves nothing (and nothing of the host touched:
	# the scripts act under DPKG_ROOT). Its dependencies are not in that empty database.
	if command -v dpkg >/dev/null; then
		I=$T/instdir A=$T/admin
		mkdir -p "$I" "$A/updates" "$A/info" && : > "$A/status" && : > "$A/available"
		mkdir -p "$I/var/lib/nvperfd/0" && : > "$I/var/lib/nvperfd/0/x.apx"
		dpk() { dpkg --instdir="$I" --admindir="$A" --force-depends --force-not-root \
			     --force-script-chrootless "$@"; }
		dpk -i "$deb" > "$T/dpkg.log" 2>&1 || fail "dpkg -i: $(tail -n 5 "$T/dpkg.log")"
		[ "$(dpkg-query --admindir="$A" -W -f='${Status}' apx)" = "install ok installed" ] ||
			fail "dpkg status: $(dpkg-query --admindir="$A" -W -f='${Status}' apx)"
		if [ -e "$BUILD/nvperfd" ]; then
			dpkg-query --admindir="$A" -W -f='${Conffiles}' apx | grep -q "/etc/logrotate.d/nvperfd" ||
				fail "conffiles not recorded by dpkg"
		fi
		run_installed "$I"
		dpk -P apx > "$T/dpkg.log" 2>&1 || fail "dpkg -P: $(tail -n 5 "$T/dpkg.log")"
		left=$(cd "$I" && find . -type f)
		[ -z "$left" ] || fail "left after dpkg -P: $left"
	fi
	echo "ok: $(basename "$deb"), $(grep -c '[^/]$' "$T/list") files, Depends: $(dpkg-deb -f "$deb" Depends)"
	;;
*)
	fail "unknown mode $MODE"
	;;
esac
