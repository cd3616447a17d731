# Shared part of cmake/zig-<arch>.cmake (scripts/build_wheel.sh): compile with zig's clang
# for <arch>-linux-gnu.2.28, so the binary asks for no glibc symbol newer than 2.28 and
# carries libc++ inside it; link the C libraries from Debian's static archives (.a), which
# bind their glibc symbol versions at this link (the wheel check audits the result).
set(root ${CMAKE_CURRENT_LIST_DIR}/..)
set(CMAKE_C_COMPILER ${root}/scripts/zig-cc)
set(CMAKE_CXX_COMPILER ${root}/scripts/zig-c++)
set(CMAKE_AR ${root}/scripts/zig-ar CACHE FILEPATH "")
set(CMAKE_RANLIB ${root}/scripts/zig-ranlib CACHE FILEPATH "")
set(CMAKE_C_COMPILER_TARGET ${TAILOR_ZIG_ARCH}-linux-gnu.2.28)
set(CMAKE_CXX_COMPILER_TARGET ${TAILOR_ZIG_ARCH}-linux-gnu.2.28)
set(CMAKE_ASM_COMPILER_TARGET ${TAILOR_ZIG_ARCH}-linux-gnu.2.28)
cmake_host_system_information(RESULT host_arch QUERY OS_PLATFORM)
if(NOT host_arch STREQUAL TAILOR_ZIG_ARCH)
  set(CMAKE_SYSTEM_NAME Linux)
  set(CMAKE_SYSTEM_PROCESSOR ${TAILOR_ZIG_ARCH})
endif()
set(CMAKE_LIBRARY_ARCHITECTURE ${TAILOR_ZIG_ARCH}-linux-gnu)
# Debian's <arch> pkg-config files (plus any prefixes the caller adds with PKG_CONFIG_PATH).
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/${TAILOR_ZIG_ARCH}-linux-gnu/pkgconfig:/usr/share/pkgconfig)
# No debug information and no symbol table in the shipped binary; lld strips at link.
set(CMAKE_EXE_LINKER_FLAGS_INIT "-Wl,--strip-all")
# After project(): static archives only, fmt header-only, no /usr/include (see the file).
set(CMAKE_PROJECT_INCLUDE ${CMAKE_CURRENT_LIST_DIR}/zig-project.cmake)
