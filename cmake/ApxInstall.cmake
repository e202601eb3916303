# ApxInstall.cmake - where `cmake --install` puts apx (GNUInstallDirs: FHS places under the
# prefix, /etc files included: nothing is written outside the prefix) and how CPack makes the
# .deb. Included by the top-level CMakeLists.txt after every component, so that it can name
# their targets; the collector's libraries are installed by lib/collector/CMakeLists.txt (into
# lib/apx/, where `apx analyze` looks: ../lib/apx/ beside bin/). Checked by
# tests/install/test-install.sh (ctest install-tree, install-prefix, install-deb,
# install-lintian) and tests/install/unit-check.sh (install-unit).
include(GNUInstallDirs)

install(TARGETS apx RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${CMAKE_SOURCE_DIR}/docs/man/apx.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${CMAKE_SOURCE_DIR}/packaging/apx.bash-completion
	DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME apx)
install(FILES ${CMAKE_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
file(GLOB apx_docs ${CMAKE_SOURCE_DIR}/docs/*.md)	# the format spec, report, nvperfd...
install(FILES ${apx_docs} DESTINATION ${CMAKE_INSTALL_DOCDIR})
# Debian policy 12.5/12.7: every package has these two in /usr/share/doc/PACKAGE (the .deb
# gets changelog.gz from packaging/deb/prebuild.cmake)
install(FILES ${CMAKE_SOURCE_DIR}/packaging/copyright ${CMAKE_SOURCE_DIR}/packaging/changelog
	DESTINATION ${CMAKE_INSTALL_DOCDIR})

# nvperfd: the binary, its unit, the logrotate and rsyslog snippets (relative to the prefix:
# --prefix /usr puts them in /usr/etc; the .deb moves them to /etc, and -DAPX_INSTALL_ETCDIR=/etc
# does it for a plain install), the commented defaults, the man pages.
# (APX_INSTALL_ETCDIR, not the former APX_INSTALL_SYSCONFDIR, whose cached /etc would linger)
set(APX_INSTALL_ETCDIR ${CMAKE_INSTALL_SYSCONFDIR} CACHE PATH
	"where the logrotate and rsyslog snippets go (relative: under the prefix)")
if(TARGET nvperfd)
	install(TARGETS nvperfd RUNTIME DESTINATION ${CMAKE_INSTALL_SBINDIR})
	# the unit names the binary where this install puts it: the prefix is known only at
	# install time (cmake --install --prefix, cpack), so it is written then, straight into
	# the destination, and recorded in install_manifest.txt like the other files
	install(CODE "
		set(unit_dir \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/lib/systemd/system\")
		message(STATUS \"Installing: \${unit_dir}/nvperfd.service\")
		file(READ \"${CMAKE_SOURCE_DIR}/packaging/nvperfd.service\" unit)
		string(REPLACE \"/usr/sbin/nvperfd\" \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_SBINDIR}/nvperfd\"
			unit \"\${unit}\")
		file(MAKE_DIRECTORY \"\${unit_dir}\")
		file(WRITE \"\${unit_dir}/nvperfd.service\" \"\${unit}\")
		list(APPEND CMAKE_INSTALL_MANIFEST_FILES \"\${unit_dir}/nvperfd.service\")")
	install(FILES ${CMAKE_SOURCE_DIR}/packaging/nvperfd.logrotate
		DESTINATION ${APX_INSTALL_ETCDIR}/logrotate.d RENAME nvperfd)
	install(FILES ${CMAKE_SOURCE_DIR}/packaging/nvperfd.rsyslog.conf
		DESTINATION ${APX_INSTALL_ETCDIR}/rsyslog.d RENAME 30-nvperfd.conf)
	install(FILES ${CMAKE_SOURCE_DIR}/packaging/nvperfd.conf
		DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)
	install(FILES ${CMAKE_SOURCE_DIR}/docs/man/nvperfd.8 DESTINATION ${CMAKE_INSTALL_MANDIR}/man8)
	install(FILES ${CMAKE_SOURCE_DIR}/docs/man/nvperfd.conf.5
		DESTINATION ${CMAKE_INSTALL_MANDIR}/man5)
endif()

# ---- the .deb: cpack -G DEB in a release build folder made for it (README.md, "Installing":
# -DAPX_BPF_STATIC=OFF, so that nvperfd links the system's libbpf, libelf and zlib instead of
# embedding them). lintian-clean: checked by ctest install-lintian. ----
set(APX_PACKAGE_MAINTAINER "apx maintainers <maintainers@users.noreply.a-seed-d813ec56.example>"
	CACHE STRING "the Maintainer field of the .deb")
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME apx)
set(CPACK_PACKAGE_VENDOR "apx")
set(CPACK_PACKAGE_CONTACT "${APX_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "profiler for PyTorch programs on NVIDIA GPUs (apx, nvperfd)")
# the extended description (CPack puts the summary first and indents each line): lines of at
# most 80 columns (Debian policy 5.6.13)
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "apx analyze runs a program with a CUPTI collector and apx
report explains the trace: ranked findings with estimated savings. The nvperfd
daemon watches every Python process of the machine from /proc, NVML and eBPF
uprobes and leaves a summary for each.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "python3, logrotate")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "rsyslog")
set(CPACK_STRIP_FILES ON)	# Debian policy 10.1: binaries are stripped
find_program(APX_DPKG_SHLIBDEPS dpkg-shlibdeps)
# deb-systemd-helper and deb-systemd-invoke of the maintainer scripts (init-system-helpers,
# as debhelper's dh_installsystemd would add)
if(APX_DPKG_SHLIBDEPS)
	set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)	# libc6 and whatever the build linked
	set(CPACK_DEBIAN_PACKAGE_DEPENDS "init-system-helpers (>= 1.54~)")
else()
	set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6 (>= 2.36), init-system-helpers (>= 1.54~)")
endif()
# in the staging folder, before the .deb is made: /usr/etc -> /etc, man pages and the
# changelog gzip -9n, no RUNPATH (the collector finds libcupti through the CUDA toolkit's
# /etc/ld.so.conf.d entry, Debian policy 10.2)
set(CPACK_PRE_BUILD_SCRIPTS ${CMAKE_SOURCE_DIR}/packaging/deb/prebuild.cmake)
# postinst/prerm/postrm: debhelper's systemd snippets (the unit is not enabled: `systemctl
# enable --now nvperfd`; removing the package stops the daemon); the /etc snippets are
# conffiles (an administrator's edits survive an upgrade)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${CMAKE_SOURCE_DIR}/packaging/deb/postinst
	${CMAKE_SOURCE_DIR}/packaging/deb/prerm ${CMAKE_SOURCE_DIR}/packaging/deb/postrm)
if(TARGET nvperfd)
	file(WRITE ${CMAKE_BINARY_DIR}/deb/conffiles "/etc/logrotate.d/nvperfd\n"
		"/etc/rsyslog.d/30-nvperfd.conf\n")
	list(APPEND CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${CMAKE_BINARY_DIR}/deb/conffiles)
endif()
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
