# Included right after project() by cmake/zig-toolchain.cmake (tailor's project only; the
# toolchain also builds ISA-L, scripts/build_wheel.sh).
if(NOT PROJECT_NAME STREQUAL "tailor")
  return()
endif()
# 1. find_library and pkg-config's imported targets pick the static archives (.a): the
#    binary needs only glibc at run time.
set(CMAKE_FIND_LIBRARY_SUFFIXES .a)
set(OPENSSL_USE_STATIC_LIBS TRUE)
set(ZLIB_USE_STATIC_LIBS TRUE)
# 2. fmt and toml++ header-only: Debian's compiled libfmt and libtomlplusplus are built
#    against libstdc++, zig uses libc++. Defining the targets first makes their own config
#    files keep them.
foreach(t fmt::fmt fmt::fmt-header-only)
  add_library(${t} INTERFACE IMPORTED)
  set_target_properties(${t} PROPERTIES INTERFACE_COMPILE_DEFINITIONS FMT_HEADER_ONLY=1)
endforeach()
add_library(tomlplusplus::tomlplusplus INTERFACE IMPORTED)
set_target_properties(tomlplusplus::tomlplusplus PROPERTIES INTERFACE_COMPILE_DEFINITIONS TOML_HEADER_ONLY=1)
# 3. The dependencies' headers without glibc's: /usr/include also holds glibc 2.36's headers,
#    which must not shadow zig's 2.28 ones. The headers the project uses are linked into one
#    folder, and /usr/include is treated as implicit so no -isystem /usr/include is emitted.
set(triple ${CMAKE_LIBRARY_ARCHITECTURE})
set(stage ${CMAKE_BINARY_DIR}/zig-include)
file(REMOVE_RECURSE ${stage})
file(MAKE_DIRECTORY ${stage}/openssl)
foreach(h zstd.h zstd_errors.h zdict.h zlib.h zconf.h lz4.h lz4hc.h lz4frame.h libdeflate.h CLI nlohmann toml++ fmt)
  if(NOT EXISTS /usr/include/${h})
    message(FATAL_ERROR "zig build: /usr/include/${h} is missing (scripts/setup.sh installs it)")
  endif()
  file(CREATE_LINK /usr/include/${h} ${stage}/${h} SYMBOLIC)
endforeach()
file(GLOB ssl_headers /usr/include/openssl/*.h /usr/include/${triple}/openssl/*.h)
foreach(h ${ssl_headers})
  get_filename_component(n ${h} NAME)
  file(CREATE_LINK ${h} ${stage}/openssl/${n} SYMBOLIC)
endforeach()
include_directories(SYSTEM ${stage})
foreach(lang C CXX)
  list(APPEND CMAKE_${lang}_IMPLICIT_INCLUDE_DIRECTORIES /usr/include /usr/include/${triple})
endforeach()
