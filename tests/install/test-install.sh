#!/bin/bash
# test-install.sh MODE - apx installed like a real tool. Run by ctest (label install):
#   tree     cmake --install of the build folder into a scratch DESTDIR with the prefix /usr:
#            every file in its FHS place, the unit naming the installed nvperfd, the installed
#            apx run from there (--version, apx report on a bundled real trace, apx info),
#            nvperfd --help and --version, the bash completion sourced from the installed tree
#   prefix   cmake --install --prefix P (no DESTDIR) into an empty P, under strace: every file
#            it creates, renames, removes or opens for writing is under P (the /etc snippets
#            and the unit too); only CMake's own install_manifest.txt is written in the build
#            folder. Without strace: the manifest alone.
#   unit     the installed nvperfd.service: systemd-analyze verify says nothing; it lets the
#            daemon do what its code does: every address family in lib/daemon/*.c is in
#            RestrictAddressFamilies (AF_INET/AF_INET6: the Prometheus endpoint), every
#            capability named in lib/daemon/*.c is in CapabilityBoundingSet (the uprobes'
#            BPF, PERFMON, SYS_ADMIN...); systemd-analyze security --offline prints its score
#   deb      cpack -G DEB: the .deb's control fields, conffiles and file list (dpkg-deb -I/-c),
#            unpacked with dpkg-deb -x and its binaries run from there; dpkg installs it into a
#            private root, dpkg -r stops a running nvperfd of that root (prerm), dpkg -P leaves
#            nothing; skipped (77) without dpkg-deb. This is the package of this build.
#   lintian  the release .deb as README.md, "Installing" makes it (its own build folder
#            BUILD/deb-release: Release, dpkg-buildflags, -DAPX_BPF_STATIC=OFF), checked by
#            lintian: no error and no warning; skipped (77) without lintian (scripts/setup
#            installs it: scripts/debian-packages.txt)
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

# the files an install must have: expect_files ROOT PREFIX ETC [MANSUFFIX] (PREFIX and ETC
# relative to ROOT: usr and usr/etc for a cmake --install --prefix /usr, usr and etc for the .deb)
expect_files() {
	local r=$1 p=$2 e=$3 z=${4:-} f
	for f in $p/bin/apx $p/share/man/man1/apx.1$z $p/share/bash-completion/completions/apx \
		 $p/share/doc/apx/README.md $p/share/doc/apx/copyright; do
		[ -f "$r/$f" ] || fail "not installed: /$f"
	done
	[ -x "$r/$p/bin/apx" ] || fail "/$p/bin/apx not executable"
	if [ -e "$BUILD/nvperfd" ]; then
		for f in $p/sbin/nvperfd $p/lib/systemd/system/nvperfd.service \
			 $e/logrotate.d/nvperfd $e/rsyslog.d/30-nvperfd.conf \
			 $p/share/man/man8/nvperfd.8$z $p/share/man/man5/nvperfd.conf.5$z \
			 $p/share/doc/apx/examples/nvperfd.conf; do
			[ -f "$r/$f" ] || fail "not installed: /$f"
		done
		grep -qx "ExecStart=${EXEC_ROOT:-}/$p/sbin/nvperfd --foreground" "$r/$p/lib/systemd/system/nvperfd.service" ||
			fail "the unit does not start the installed nvperfd: $(grep ExecStart "$r/$p/lib/systemd/system/nvperfd.service")"
	fi
	# the collector where apx analyze looks for it (../lib/apx/ beside bin/), when built
	for f in libapx-inject.so libapx-watch.so; do
		if [ -e "$BUILD/lib/collector/$f" ] || ls "$BUILD"/$f >/dev/null 2>&1; then
			[ -f "$r/$p/lib/apx/$f" ] || fail "not installed: /$p/lib/apx/$f"
		fi
	done
	# nothing outside the FHS places of the prefix
	local stray
	stray=$(cd "$r" && find . -type f | grep -vE "^\./($p/(bin|sbin|lib/apx|lib/systemd/system|share/(man|doc|bash-completion))|$e/(logrotate|rsyslog)\.d)/")
	[ -z "$stray" ] || fail "installed outside the FHS places: $stray"
}

case $MODE in
tree)
	DESTDIR=$T/root cmake --install "$BUILD" --prefix /usr > "$T/install.log" 2>&1 ||
		fail "cmake --install: $(tail -n 20 "$T/install.log")"
	expect_files "$T/root" usr usr/etc
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
	for f in ./usr/bin/apx ./usr/share/man/man1/apx.1.gz ./usr/share/bash-completion/completions/apx \
		 ./usr/share/doc/apx/copyright ./usr/share/doc/apx/changelog.gz; do
		grep -qx "$f" "$T/list" || fail "$f not in the .deb: $(cat "$T/list")"
	done
	if [ -e "$BUILD/nvperfd" ]; then
		for f in ./usr/sbin/nvperfd ./usr/lib/systemd/system/nvperfd.service \
			 ./etc/logrotate.d/nvperfd ./etc/rsyslog.d/30-nvperfd.conf ./usr/share/man/man8/nvperfd.8.gz \
			 ./usr/share/man/man5/nvperfd.conf.5.gz; do
			grep -qx "$f" "$T/list" || fail "$f not in the .deb"
		done
		dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles > "$T/conffiles" 2>/dev/null ||
			fail "no conffiles in the .deb"
		grep -qx /etc/logrotate.d/nvperfd "$T/conffiles" && grep -qx /etc/rsyslog.d/30-nvperfd.conf "$T/conffiles" ||
			fail "conffiles: $(cat "$T/conffiles")"
	fi
	for f in postinst prerm postrm; do
		dpkg-deb --ctrl-tarfile "$deb" | tar -t | grep -qx "./$f" || fail "no $f in the .deb"
	done
	dpkg-deb -x "$deb" "$T/root" || fail "dpkg-deb -x"
	expect_files "$T/root" usr etc .gz
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
		# prerm: a running nvperfd of this root (named by its pid file) is stopped by dpkg -r.
		# The stand-in is sleep copied over the installed binary (its /proc/PID/exe is that
		# path), so no real daemon runs on the test machine.
		if [ -e "$BUILD/nvperfd" ]; then
			cp "$(command -v sleep)" "$I/usr/sbin/nvperfd"
			"$I/usr/sbin/nvperfd" 300 & pid=$!
			mkdir -p "$I/run" && echo "$pid" > "$I/run/nvperfd.pid"
			dpk -r apx > "$T/dpkg.log" 2>&1 || fail "dpkg -r: $(tail -n 5 "$T/dpkg.log")"
			state=$(awk '{ print $3 }' "/proc/$pid/stat" 2>/dev/null)
			if [ -n "$state" ] && [ "$state" != Z ]; then
				kill "$pid"
				fail "dpkg -r left the running nvperfd (pid $pid, state $state): no prerm stop"
			fi
			wait "$pid" 2>/dev/null
			rm -f "$I/run/nvperfd.pid"
			[ -d "$I/var/lib/nvperfd" ] || fail "dpkg -r removed /var/lib/nvperfd (only a purge may)"
		fi
		dpk -P apx > "$T/dpkg.log" 2>&1 || fail "dpkg -P: $(tail -n 5 "$T/dpkg.log")"
		left=$(cd "$I" && find . -type f)
		[ -z "$left" ] || fail "left after dpkg -P: $left"
	fi
	echo "ok: $(basename "$deb"), $(grep -c '[^/]$' "$T/list") files, Depends: $(dpkg-deb -f "$deb" Depends)"
	;;
prefix)
	P=$T/inst/p
	mkdir -p "$P"
	rm -f "$BUILD/install_manifest.txt"
	if command -v strace >/dev/null; then
		(cd "$T" && env -u DESTDIR strace -f -qq -o "$T/trace" -e trace=%file \
			cmake --install "$BUILD" --prefix "$P") > "$T/install.log" 2>&1 ||
			fail "cmake --install --prefix: $(tail -n 20 "$T/install.log")"
		# the paths of the calls that write: open/creat for writing, mkdir, rename, link,
		# symlink, unlink, rmdir, chmod, chown, utime, truncate (absolute: cmake names them so)
		awk '/O_WRONLY|O_RDWR|O_CREAT|O_TRUNC/ || /^[0-9]+ +(creat|mkdir|mkdirat|rename|renameat2?|link|linkat|symlink|symlinkat|unlink|unlinkat|rmdir|chmod|fchmodat|chown|lchown|fchownat|utimensat|utimes|truncate)\(/' \
			"$T/trace" | grep -v ' = -1 ' | grep -oE '"[^"]*"' | tr -d '"' | sort -u > "$T/written"
		[ -s "$T/written" ] || fail "strace saw no write: $(head -n 5 "$T/trace")"
		out=$(grep -vE "^($P(/|\$)|/dev/null\$|$BUILD/install_manifest\.txt\$)" "$T/written")
		[ -z "$out" ] || fail "cmake --install --prefix $P wrote outside it: $out"
		how="strace: $(wc -l < "$T/written") paths written"
	else
		env -u DESTDIR cmake --install "$BUILD" --prefix "$P" > "$T/install.log" 2>&1 ||
			fail "cmake --install --prefix: $(tail -n 20 "$T/install.log")"
		how="no strace: install_manifest.txt only"
	fi
	out=$(grep -v "^$P/" "$BUILD/install_manifest.txt")
	[ -z "$out" ] || fail "install_manifest.txt: outside $P: $out"
	EXEC_ROOT=$T/inst expect_files "$T/inst" p p/etc	# the unit names this prefix's nvperfd
	echo "ok: $(wc -l < "$BUILD/install_manifest.txt") files, all under the prefix ($how)"
	;;
unit)
	[ -e "$BUILD/nvperfd" ] || { echo "SKIP: nvperfd not built"; exit 77; }
	P=$T/p
	env -u DESTDIR cmake --install "$BUILD" --prefix "$P" > "$T/install.log" 2>&1 ||
		fail "cmake --install --prefix: $(tail -n 20 "$T/install.log")"
	U=$P/lib/systemd/system/nvperfd.service
	# the daemon's own needs, from its code: socket families and capabilities
	val() { sed -n "s/^$1=//p" "$U" | tr ' ' '\n'; }
	for af in $(cat "$SRC"/lib/daemon/*.c | grep -oE '\bAF_[A-Z0-9]+' | sort -u); do
		val RestrictAddressFamilies | grep -qx "$af" ||
			fail "the unit forbids $af, which lib/daemon uses: RestrictAddressFamilies=$(val RestrictAddressFamilies | xargs)"
	done
	for cap in $(cat "$SRC"/lib/daemon/*.c | grep -oE '\bCAP_[A-Z_]+' | sort -u) CAP_SETPCAP CAP_SYS_RESOURCE; do
		val CapabilityBoundingSet | grep -qx "$cap" ||
			fail "the unit withholds $cap, which nvperfd uses: CapabilityBoundingSet=$(val CapabilityBoundingSet | xargs)"
	done
	# what systemd itself says of it
	if command -v systemd-analyze >/dev/null; then
		out=$(systemd-analyze verify --man=no "$U" 2>&1) || fail "systemd-analyze verify: $out"
		[ -z "$out" ] || fail "systemd-analyze verify: $out"
		score=$(systemd-analyze security --offline=yes "$U" 2>/dev/null | grep -o 'exposure level.*')
		echo "ok: systemd-analyze verify clean; $score"
	else
		echo "ok: families and capabilities (no systemd-analyze: verify not run)"
	fi
	;;
lintian)
	command -v lintian >/dev/null || { echo "SKIP: no lintian (apt-get install lintian; scripts/setup does)"; exit 77; }
	command -v dpkg-buildflags >/dev/null || { echo "SKIP: no dpkg-buildflags (dpkg-dev)"; exit 77; }
	R=$BUILD/deb-release
	# Debian's hardening flags (what debhelper passes), added to the project's own
	export DEB_BUILD_MAINT_OPTIONS=hardening=+all
	cflags="$(dpkg-buildflags --get CFLAGS) $(dpkg-buildflags --get CPPFLAGS)"
	CFLAGS=$cflags LDFLAGS=$(dpkg-buildflags --get LDFLAGS) cmake -S "$SRC" -B "$R" \
		-DCMAKE_BUILD_TYPE=Release -DAPX_BPF_STATIC=OFF > "$T/cmake.log" 2>&1 ||
		fail "cmake: $(tail -n 20 "$T/cmake.log")"
	cmake --build "$R" -j"$(nproc)" > "$T/build.log" 2>&1 || fail "build: $(grep -m 5 -E 'error|Error' "$T/build.log")"
	(cd "$R" && cpack -G DEB -B "$T/pkg") > "$T/cpack.log" 2>&1 || fail "cpack: $(tail -n 20 "$T/cpack.log")"
	deb=$(ls "$T"/pkg/apx_*.deb 2>/dev/null | head -n 1)
	[ -n "$deb" ] || fail "no .deb made: $(tail -n 5 "$T/cpack.log")"
	lintian --tag-display-limit 0 -I "$deb" > "$T/lintian.txt" 2>"$T/lintian.err"
	rc=$?
	grep -E '^[EWIXPO]: ' "$T/lintian.txt" | awk '{ print $1, $3 }' | sort | uniq -c
	bad=$(grep -E '^[EW]: ' "$T/lintian.txt")
	[ "$rc" -le 2 ] || fail "lintian failed to run ($rc): $(cat "$T/lintian.err")"
	[ -z "$bad" ] || fail "lintian: $bad"
	echo "ok: $(basename "$deb"): lintian: no error, no warning ($(grep -c '^I: ' "$T/lintian.txt") info tags)"
	;;
*)
	fail "unknown mode $MODE"
	;;
esac
