# prebuild.cmake - CPACK_PRE_BUILD_SCRIPTS of the .deb (cmake/ApxInstall.cmake): run by cpack
# on the staging folder after the install and before dpkg-deb, to make what Debian policy
# and lintian ask of a binary package:
#   - the /etc snippets, installed relative to the prefix (usr/etc), go to /etc (conffiles);
#   - man pages and the changelog compressed with gzip -9n (policy 12.1, 12.7);
#   - no RUNPATH in an ELF file (policy 10.2: lintian custom-library-search-path); the
#     collector finds libcupti through the CUDA toolkit's /etc/ld.so.conf.d entry.
#   - no .comment and .note sections in an ELF file (as dh_strip; CPACK_STRIP_FILES strips the
#     debugging symbols).
# Checked by ctest install-lintian.
set(root "${CPACK_TEMPORARY_INSTALL_DIRECTORY}")
if(NOT IS_DIRECTORY "${root}/usr")
	message(FATAL_ERROR "prebuild.cmake: no usr/ in the staging folder ${root}")
endif()

if(IS_DIRECTORY "${root}/usr/etc")
	file(GLOB entries RELATIVE "${root}/usr/etc" "${root}/usr/etc/*")
	foreach(e ${entries})
		file(MAKE_DIRECTORY "${root}/etc")
		file(RENAME "${root}/usr/etc/${e}" "${root}/etc/${e}")
	endforeach()
	file(REMOVE_RECURSE "${root}/usr/etc")
endif()

file(GLOB_RECURSE pages "${root}/usr/share/man/*")
set(docs "${root}/usr/share/doc/${CPACK_PACKAGE_NAME}/changelog")
foreach(f ${pages} ${docs})
	if(EXISTS "${f}" AND NOT f MATCHES "\\.gz$")
		execute_process(COMMAND gzip -9nf "${f}" RESULT_VARIABLE rc)
		if(NOT rc EQUAL 0)
			message(FATAL_ERROR "prebuild.cmake: gzip -9n ${f} failed")
		endif()
	endif()
endforeach()

# ELF files: the magic bytes 7f 45 4c 46
find_program(strip NAMES strip)
file(GLOB_RECURSE all LIST_DIRECTORIES false "${root}/usr/*")
foreach(f ${all})
	if(IS_SYMLINK "${f}")
		continue()
	endif()
	file(READ "${f}" magic LIMIT 4 HEX)
	if(magic STREQUAL "7f454c46")
		file(RPATH_REMOVE FILE "${f}")
		if(strip)
			execute_process(COMMAND ${strip} --remove-section=.comment --remove-section=.note
				"${f}" RESULT_VARIABLE rc)
			if(NOT rc EQUAL 0)
				message(FATAL_ERROR "prebuild.cmake: strip ${f} failed")
			endif()
		endif()
	endif()
endforeach()
