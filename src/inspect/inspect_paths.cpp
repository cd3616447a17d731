// inspect_paths: the entry point for `tailor inspect` and for the build layer's
// verification. Wheels go to inspect_wheel; ELF files and the ELF files under
// directories are analyzed from a memory map (only the pages their headers live on are
// read).
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "formats/device_file.h"
#include "formats/elf.h"
#include "inspect/inspect_report.h"
#include "inspect/library_classifier.h"
#include "inspect/library_resolver.h"
#include "inspect/wheel_pass.h"
#include "util/mapped_file.h"
#include "util/user_file.h"

namespace tailor::inspect {

namespace fs = std::filesystem;

namespace {

// What a regular file is from its first bytes: a host ELF file, device code of its own
// (formats/device_file.h) or neither; an error when it cannot be read ("permission
// denied", "not a regular file (a FIFO)"): opened without blocking.
struct FileKind {
  bool elf = false;  // a host ELF file (a library)
  formats::DeviceFileKind device = formats::DeviceFileKind::none;
};
Expected<FileKind> kind_of_file(const std::string& path) {
  TAILOR_TRY(head, read_file_head(path, 64));
  if (formats::may_start_ptx(as_bytes(head)) && head.size() == 64) {
    TAILOR_TRY(longer, read_file_head(path, formats::k_device_file_head_bytes));
    head = std::move(longer);
  }
  FileKind kind;
  kind.device = formats::classify_device_file(as_bytes(head));
  kind.elf =
      kind.device == formats::DeviceFileKind::none && formats::looks_like_elf(as_bytes(head));
  return kind;
}

// The ELF libraries and device files under `dir`, sorted; what could not be read goes to
// `skipped`.
struct FoundFiles {
  std::vector<std::string> libraries;
  std::vector<std::pair<std::string, formats::DeviceFileKind>> device_files;
  bool empty() const { return libraries.empty() && device_files.empty(); }
};
Expected<FoundFiles> find_files(const std::string& dir, std::vector<std::string>& skipped) {
  FoundFiles found;
  std::error_code ec;
  for (auto it =
           fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    // Versioned symlinks (libfoo.so -> libfoo.so.1) would count a library twice.
    if (it->is_symlink(ec)) continue;
    const std::string p = it->path().string();
    if (it->is_directory(ec)) {
      // The iterator would skip a folder it cannot enter without a word: name it.
      if (::access(p.c_str(), R_OK | X_OK) != 0) {
        skipped.push_back(p + ": permission denied (folder)");
        it.disable_recursion_pending();
      }
      continue;
    }
    if (!it->is_regular_file(ec)) continue;  // FIFOs, devices, sockets
    auto kind = kind_of_file(p);
    if (!kind)
      skipped.push_back(kind.error().message);
    else if (kind->elf)
      found.libraries.push_back(p);
    else if (kind->device != formats::DeviceFileKind::none)
      found.device_files.emplace_back(p, kind->device);
  }
  if (ec) return make_error(fmt::format("{}: cannot list: {}", dir, ec.message()));
  std::sort(found.libraries.begin(), found.libraries.end());
  std::sort(found.device_files.begin(), found.device_files.end());
  return found;
}

}  // namespace

std::vector<cuda::FatbinCode> InspectReport::target_codes() const {
  std::set<cuda::FatbinCode> codes;
  for (const auto& lib : libraries)
    for (const auto& t : lib.targets) codes.insert(t.code);
  for (const auto& w : wheels)
    for (const auto& t : w.targets) codes.insert(t.code);
  for (const auto& f : device_files)
    for (const auto& t : f.targets) codes.insert(t.code);
  return {codes.begin(), codes.end()};
}

std::vector<std::string> InspectReport::targets_union() const {
  std::vector<std::string> names;
  for (const auto& code : target_codes()) names.push_back(code.name());
  return names;
}

Expected<InspectReport> inspect_paths(const std::vector<std::string>& paths,
                                      const InspectOptions& options) {
  InspectReport report;
  std::vector<std::string> elf_files;
  std::vector<std::pair<std::string, formats::DeviceFileKind>> device_files;
  for (const auto& path : paths) {
    std::error_code ec;
    auto status = fs::status(path, ec);
    if (ec && ec != std::errc::no_such_file_or_directory)
      return make_error(path + ": " + ec.message());
    if (ec || !fs::exists(status)) return make_error(path + ": no such file or directory");
    if (fs::is_directory(status)) {
      if (::access(path.c_str(), R_OK | X_OK) != 0)
        return make_error(path + ": permission denied (folder)");
      const size_t skipped_before = report.skipped.size();
      TAILOR_TRY(found, find_files(path, report.skipped));
      if (found.empty()) {
        const size_t skipped = report.skipped.size() - skipped_before;
        if (skipped == 0)
          return make_error(path +
                            ": no ELF libraries under this folder, nor cubin, PTX or fatbin "
                            "files (name wheels directly)");
        return make_error(fmt::format("{}: no ELF library could be read; {} skipped, the first: {}",
                                      path, skipped, report.skipped[skipped_before]));
      }
      elf_files.insert(elf_files.end(), found.libraries.begin(), found.libraries.end());
      device_files.insert(device_files.end(), found.device_files.begin(), found.device_files.end());
      continue;
    }
    if (path.ends_with(".whl")) {
      TAILOR_TRY(mapped, MappedFile::open(path));
      WheelPassOptions pass;
      pass.release_file_pages = true;  // our own map: its pages go back once read
      TAILOR_TRY(wheel, inspect_wheel(mapped.bytes(), path, options, pass));
      report.wheels.push_back(std::move(wheel));
      continue;
    }
    TAILOR_TRY(kind, kind_of_file(path));
    if (kind.device != formats::DeviceFileKind::none) {
      device_files.emplace_back(path, kind.device);
      continue;
    }
    if (!kind.elf)
      return make_error(
          path +
          ": offset 0x0: neither an ELF file (no \\x7fELF magic), a PTX or fatbin file, nor a "
          ".whl; inspect takes wheels, ELF libraries and folders of them, and cubin, PTX and "
          "fatbin files");
    elf_files.push_back(path);
  }

  LibraryOptions lib_options;
  lib_options.verify_payloads = options.verify_payloads;
  std::vector<LibraryReport> raw;
  for (const auto& path : elf_files) {
    // Installed libraries go through the file reader, which returns fatbin pages to the
    // kernel as it walks: a 456 MB libtorch_cuda.so stays near 15 MB of RSS.
    TAILOR_TRY(lib, analyze_library_file(path, lib_options));
    raw.push_back(std::move(lib));
  }
  for (const auto& [path, kind] : device_files) {
    TAILOR_TRY(file, analyze_device_file_at(path, kind, lib_options));
    report.device_files.push_back(std::move(file));
  }
  // Needs are looked up as the loader does, from each library's own folder on disk.
  report.libraries = resolve_installed_libraries(std::move(raw));
  return report;
}

}  // namespace tailor::inspect
