# Cross build for aarch64 Linux on an x86_64 Debian host (scripts/aarch64_check.sh):
#   cmake -S . -B build-aarch64 -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
# Needs Debian's cross compiler (g++-aarch64-linux-gnu), the :arm64 -dev packages and
# qemu-user-static; `scripts/setup.sh --aarch64` installs them. libisal-dev is not
# Multi-Arch: same (its amd64 and arm64 packages cannot be installed together), so its
# arm64 files live unpacked in a folder of their own, TAILOR_AARCH64_DEPS.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

if(NOT TAILOR_AARCH64_DEPS)
  if(DEFINED ENV{TAILOR_AARCH64_DEPS})
    set(TAILOR_AARCH64_DEPS $ENV{TAILOR_AARCH64_DEPS})
  else()
    set(TAILOR_AARCH64_DEPS /opt/tailor-aarch64-deps)
  endif()
endif()
set(TAILOR_AARCH64_DEPS ${TAILOR_AARCH64_DEPS} CACHE PATH "unpacked arm64 packages that cannot be co-installed")
# try_compile projects re-read this file: hand them the folder too.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES TAILOR_AARCH64_DEPS)

# "/" too: architecture-independent packages (CLI11, nlohmann-json) keep their CMake
# package files in /usr/share/cmake.
set(CMAKE_FIND_ROOT_PATH / /usr/aarch64-linux-gnu ${TAILOR_AARCH64_DEPS})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# pkg-config sees only arm64 .pc files (never the host's).
set(ENV{PKG_CONFIG_LIBDIR}
    "${TAILOR_AARCH64_DEPS}/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")

# ctest and gtest_discover_tests run the test binaries through qemu-user. "-L /": the
# loader and libc.so.6 then both come from libc6:arm64; with -L /usr/aarch64-linux-gnu the
# loader would come from the cross package and libc from libc6:arm64, two glibc builds that
# hang in the first pthread_create.
find_program(TAILOR_QEMU_AARCH64 NAMES qemu-aarch64-static qemu-aarch64)
if(TAILOR_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${TAILOR_QEMU_AARCH64} -L /)
endif()
