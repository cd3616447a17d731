#include "support/fixtures.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>

namespace tailor::test {

std::string fixture(const std::string& name) {
  return std::string(TAILOR_BINARY_DIR) + "/fixtures/" + name + ".so";
}

std::string cxx_fixture_machine() { return TAILOR_CXX_FIXTURE_MACHINE; }

std::string nvcc_fixture_machine() { return TAILOR_NVCC_FIXTURE_MACHINE; }

std::vector<std::byte> slurp(const std::string& path) {
  std::string text = slurp_text(path);
  std::vector<std::byte> out(text.size());
  if (!text.empty()) std::memcpy(out.data(), text.data(), text.size());
  return out;
}

std::filesystem::path scratch_dir(const std::string& tag) {
  static std::mutex m;
  static std::map<std::string, std::filesystem::path> made;
  std::lock_guard lock(m);
  auto& dir = made[tag];
  if (dir.empty()) {
    dir = std::filesystem::temp_directory_path() /
          ("tailor_" + tag + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  }
  return dir;
}

TempDir::TempDir(const std::string& tag) {
  std::string pattern =
      (std::filesystem::temp_directory_path() / ("tailor-" + tag + "-XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    std::fprintf(stderr, "TempDir: cannot make %s: %s\n", pattern.c_str(), std::strerror(errno));
    std::abort();
  }
  path = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}

std::string slurp_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace tailor::test
