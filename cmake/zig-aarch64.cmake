# Toolchain for the aarch64 manylinux_2_28 wheel: zig's clang and libc++ against glibc 2.28,
# Debian's arm64 multiarch static libraries (dpkg --add-architecture arm64).
set(TAILOR_ZIG_ARCH aarch64)
include(${CMAKE_CURRENT_LIST_DIR}/zig-toolchain.cmake)
