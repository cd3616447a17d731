// Internal to src/slim: the steps slim_paths' input drivers share (one file slimmed and
// checked, work spread over threads, the marker a slimmed wheel carries, the tallies) and
// the wheel's driver (slim_wheel.cpp).
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "formats/device_file.h"
#include "slim/elf_slim.h"
#include "slim/keep_policy.h"
#include "slim/slim_paths.h"
#include "util/expected.h"
#include "util/files.h"
#include "util/sha256.h"

namespace tailor::slim::inputs {

/// An error once an interrupt arrived ("nothing was replaced").
Expected<void> interrupted_check();

// A private folder for a wheel's inflated libraries, removed with everything in it.
class TempDir {
 public:
  static Expected<TempDir> inside(const std::string& parent) {
    TempDir t;
    t.m_path =
        (std::filesystem::path(parent.empty() ? "." : parent) / ".tailor-slim-XXXXXX").string();
    if (!::mkdtemp(t.m_path.data()))
      return make_error(parent + ": cannot create a temporary folder: " + errno_text(errno));
    return t;
  }
  TempDir() = default;
  TempDir(TempDir&& o) noexcept : m_path(std::move(o.m_path)) { o.m_path.clear(); }
  TempDir& operator=(TempDir&&) = delete;
  ~TempDir() {
    std::error_code ec;
    if (!m_path.empty()) std::filesystem::remove_all(m_path, ec);
  }
  const std::string& path() const { return m_path; }

 private:
  std::string m_path;
};

inline uint64_t disk_bytes(const struct stat& st) {
  return static_cast<uint64_t>(st.st_blocks) * 512;
}

struct FileResult {
  LibrarySlim lib;
  Sha256::Digest sha{};  // of the output, when written
  bool written = false;
};

// Slims `in` to `out` (the same path for in place); a dry run when `out` is empty. A file
// without anything to remove is copied when `copy_unchanged` (an --out folder stays
// complete), else left alone. `punch`: the output stays on disk (not a wheel's member), so
// its zeroed ranges are punched out of it.
Expected<FileResult> slim_file(const std::string& in, const std::string& out,
                               const KeepPolicy& policy, bool copy_unchanged, bool punch);

// Runs `work(i)` for i in [0, n) on `jobs` threads; the first error wins and stops the rest.
Expected<void> parallel_for(size_t n, unsigned jobs,
                            const std::function<Expected<void>(size_t)>& work);

/// A regular file of at least 64 bytes that starts with the ELF magic.
bool has_elf_magic(const std::string& path);
/// What a file's first bytes say it is (formats::classify_device_file; none for anything
/// but a regular file).
formats::DeviceFileKind device_file_kind_at(const std::string& path);
/// A cubin (an ELF file whose e_machine is EM_CUDA): device code, not a host library.
inline bool is_cubin_file(const std::string& path) {
  return device_file_kind_at(path) == formats::DeviceFileKind::cubin;
}
// Names worth opening: shared libraries and extension modules, and files without a
// dot in their name (executables).
bool may_be_library(std::string_view name);
/// The tailor-slim.json a slimmed wheel carries: the policy, the original and what went.
nlohmann::json marker_json(const SlimOptions& o, const std::string& original_name,
                           const std::string& original_sha, const std::vector<SlimmedFile>& files,
                           const std::vector<DeviceFilePackage>& device_packages = {});
/// Adds one library's sizes to its input's.
void tally(InputSlim& in, const LibrarySlim& lib);

/// A wheel: its libraries inflated, slimmed in parallel and checked, the archive written
/// again (untouched members copied compressed, the marker, RECORD last).
Expected<InputSlim> slim_wheel_input(const std::string& path, const SlimOptions& o);

}  // namespace tailor::slim::inputs
