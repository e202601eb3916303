# Shared compile settings for apx targets: warnings as errors, and the sanitizers when
# APX_SANITIZE is on. Every target calls apx_target_defaults(); the injected collector opts out
# of the sanitizers (it is loaded into uninstrumented Python processes).
include(CheckCCompilerFlag)

set(APX_WARNINGS -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes
	-Wformat=2 -Wvla -Wpointer-arith -Wcast-qual -Wno-unused-parameter)
set(APX_SAN_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)

function(apx_target_defaults tgt)
	cmake_parse_arguments(A "NO_SANITIZE" "" "" ${ARGN})
	target_compile_options(${tgt} PRIVATE ${APX_WARNINGS})
	target_compile_definitions(${tgt} PRIVATE _GNU_SOURCE)
	target_include_directories(${tgt} PRIVATE ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/lib
		${CMAKE_SOURCE_DIR}
		${CMAKE_BINARY_DIR}/include)
	if(APX_SANITIZE AND NOT A_NO_SANITIZE)
		target_compile_options(${tgt} PRIVATE ${APX_SAN_FLAGS})
		target_link_options(${tgt} PRIVATE ${APX_SAN_FLAGS})
	endif()
	if(APX_FUZZ AND NOT A_NO_SANITIZE)
		target_compile_options(${tgt} PRIVATE -fsanitize=fuzzer-no-link,address,undefined)
		target_link_options(${tgt} PRIVATE -fsanitize=address,undefined)
	endif()
endfunction()
