// inspect_paths: the entry point for `tailor inspect` and for the build layer's
// verification. Wheels go to inspect_wheel; ELF files and the ELF files under
// directories are analyzed from a memory map (only the pages their headers live on are
// read).
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "formats/elf.h"
#include "inspect/inspect_report.h"
#include "inspect/library_classifier.h"
#include "inspect/wheel_pass.h"
#include "util/mapped_file.h"

namespace tailor::inspect {

namespace fs = std::filesystem;

namespace {

bool file_starts_with_elf_magic(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  char magic[4] = {};
  in.read(magic, 4);
  return in.gcount() == 4 && magic[0] == 0x7f && magic[1] == 'E' && magic[2] == 'L' && magic[3] == 'F';
}

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Directories the loader would search relative to the library: its own folder and
// $ORIGIN-relative RUNPATH/RPATH entries. A needed library found there is bundled.
bool found_beside(const LibraryReport& lib, const std::string& soname) {
  fs::path origin = fs::path(lib.path).parent_path();
  std::vector<fs::path> dirs{origin};
  for (const auto* list : {&lib.runpath, &lib.rpath})
    for (const auto& entry : *list) {
      // Only $ORIGIN-relative entries point into what ships with the library.
      for (std::string key : {"$ORIGIN", "${ORIGIN}"})
        if (entry.rfind(key, 0) == 0) dirs.push_back(fs::path(origin.string() + entry.substr(key.size())));
    }
  std::error_code ec;
  for (const auto& d : dirs)
    if (fs::exists(d / soname, ec)) return true;
  return false;
}

}  // namespace

std::vector<std::string> InspectReport::targets_union() const {
  std::vector<std::string> names;
  for (const auto& lib : libraries)
    for (const auto& t : lib.targets) names.push_back(t.name);
  for (const auto& w : wheels)
    for (const auto& t : w.targets) names.push_back(t.name);
  sort_target_names(names);
  return names;
}

Expected<InspectReport> inspect_paths(const std::vector<std::string>& paths, const InspectOptions& options) {
  InspectReport report;
  std::vector<std::string> elf_files;
  for (const auto& path : paths) {
    std::error_code ec;
    auto status = fs::status(path, ec);
    if (ec || !fs::exists(status)) return make_error(path + ": no such file or directory");
    if (fs::is_directory(status)) {
      std::vector<std::string> found;
      for (auto it = fs::recursive_directory_iterator(path, fs::directory_options::skip_permission_denied, ec);
           !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        // Versioned symlinks (libfoo.so -> libfoo.so.1) would count a library twice.
        if (it->is_symlink(ec) || !it->is_regular_file(ec)) continue;
        if (file_starts_with_elf_magic(it->path())) found.push_back(it->path().string());
      }
      if (ec) return make_error(fmt::format("{}: cannot list: {}", path, ec.message()));
      std::sort(found.begin(), found.end());
      elf_files.insert(elf_files.end(), found.begin(), found.end());
      continue;
    }
    if (ends_with(path, ".whl")) {
      TAILOR_TRY(mapped, MappedFile::open(path));
      WheelPassOptions pass;
      pass.release_file_pages = true;  // our own map: its pages go back once read
      TAILOR_TRY(wheel, inspect_wheel(mapped.bytes(), path, options, pass));
      report.wheels.push_back(std::move(wheel));
      continue;
    }
    if (!file_starts_with_elf_magic(path))
      return make_error(path + ": offset 0x0: neither an ELF file (no \\x7fELF magic) nor a .whl");
    elf_files.push_back(path);
  }

  LibraryOptions lib_options;
  lib_options.verify_payloads = options.verify_payloads;
  std::vector<LibraryReport> raw;
  std::set<std::string> bundled;
  for (const auto& path : elf_files) {
    // Installed libraries go through the file reader, which returns fatbin pages to the
    // kernel as it walks: a 456 MB libtorch_cuda.so stays near 15 MB of RSS.
    TAILOR_TRY(lib, analyze_library_file(path, lib_options));
    bundled.insert(fs::path(path).filename().string());
    if (!lib.soname.empty()) bundled.insert(lib.soname);
    raw.push_back(std::move(lib));
  }
  for (auto& lib : raw) {
    std::set<std::string> beside = bundled;
    for (const auto& n : lib.needed)
      if (!beside.count(n) && found_beside(lib, n)) beside.insert(n);
    report.libraries.push_back(classify_library(std::move(lib), beside));
  }
  return report;
}

}  // namespace tailor::inspect
