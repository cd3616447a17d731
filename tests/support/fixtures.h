// Helpers shared by the unit tests: the libraries made at build time (tests/fixtures),
// whole-file reads and scratch folders. Linked into every test binary as tailor_test_support.
#pragma once
#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace tailor::test {

/// <build>/fixtures/<name>.so, made by tests/fixtures/CMakeLists.txt.
std::string fixture(const std::string& name);

/// The machine (uname -m spelling: "x86_64", "aarch64") of the fixtures made by the C/C++
/// compiler of the build, i.e. the target's: in a cross build, not the build machine's.
std::string cxx_fixture_machine();

/// The machine of the fixtures made by nvcc: nvcc compiles host code with its own host's
/// compiler, so in a cross build these are the build machine's, unlike cxx_fixture_machine().
std::string nvcc_fixture_machine();

/// The bytes of a file; empty when it cannot be read.
std::vector<std::byte> slurp(const std::string& path);

/// The text of a file; empty when it cannot be read.
std::string slurp_text(const std::string& path);
/// A folder of this test process for `tag`, made empty on first use:
/// <tmp>/tailor_<tag>_<pid>.
std::filesystem::path scratch_dir(const std::string& tag);

/// A fresh folder of its own, <tmp>/tailor-<tag>-XXXXXX, removed with everything in it when
/// it goes out of scope: for tests that each need a clean folder (locks, caches).
struct TempDir {
  explicit TempDir(const std::string& tag);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::filesystem::path path;
};

}  // namespace tailor::test
