# ApxInstall.cmake - where `cmake --install` puts apx (GNUInstallDirs: FHS places under the
# prefix) and how CPack makes the .deb. Included by the top-level CMakeLists.txt after every
# component, so that it can name their targets. The daemon's own files (unit, logrotate,
# rsyslog) are installed by lib/daemon/CMakeLists.txt, the collector's libraries by
# lib/collector/CMakeLists.txt (into lib/apx/, where `apx analyze` looks: ../lib/apx/ beside
# bin/). Checked by tests/install/test-install.sh (ctest install-tree, install-deb).
include(GNUInstallDirs)

install(TARGETS apx RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${CMAKE_SOURCE_DIR}/docs/man/apx.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${CMAKE_SOURCE_DIR}/packaging/apx.bash-completion
	DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME apx)
install(FILES ${CMAKE_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
file(GLOB apx_docs ${CMAKE_SOURCE_DIR}/docs/*.md)	# the format spec, report, nvperfd...
install(FILES ${apx_docs} DESTINATION ${CMAKE_INSTALL_DOCDIR})

# ---- the .deb (cpack -G DEB in the build folder; a release build: cmake -B build/release) ----
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME apx)
set(CPACK_PACKAGE_VENDOR "apx")
set(CPACK_PACKAGE_CONTACT "apx maintainers <apx@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "profiler for PyTorch programs on NVIDIA GPUs (apx, nvperfd)")
set(CPACK_PACKAGE_DESCRIPTION "apx analyze runs a program with a CUPTI collector and apx report \
explains the trace: ranked findings with estimated savings. The nvperfd daemon watches every \
Python process of the machine from /proc, NVML and eBPF uprobes and leaves a summary for each.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "python3, logrotate")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "rsyslog")
find_program(APX_DPKG_SHLIBDEPS dpkg-shlibdeps)
if(APX_DPKG_SHLIBDEPS)
	set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)	# libc6 and whatever the build linked
else()
	set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6 (>= 2.36)")
endif()
# postinst/postrm: tell systemd about the unit (not enabled: `systemctl enable --now nvperfd`);
# the /etc snippets are conffiles (an administrator's edits survive an upgrade)
file(WRITE ${CMAKE_BINARY_DIR}/deb/conffiles "${APX_INSTALL_SYSCONFDIR}/logrotate.d/nvperfd\n"
	"${APX_INSTALL_SYSCONFDIR}/rsyslog.d/30-nvperfd.conf\n")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${CMAKE_SOURCE_DIR}/packaging/deb/postinst
	${CMAKE_SOURCE_DIR}/packaging/deb/postrm ${CMAKE_BINARY_DIR}/deb/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
