# Toolchain for the x86_64 manylinux_2_28 wheel: zig's clang and libc++ against glibc 2.28.
set(TAILOR_ZIG_ARCH x86_64)
include(${CMAKE_CURRENT_LIST_DIR}/zig-toolchain.cmake)
