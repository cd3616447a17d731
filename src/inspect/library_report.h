// The per-library analysis of `tailor inspect`: what one ELF shared library carries
// (CUDA targets with entry counts, bytes and compression) and what it expects from the
// system (version needs, DT_NEEDED, RUNPATH, C++ ABI, x86 ISA level). Data only; the
// renderers live with the `inspect` command.
#pragma once
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cuda/fatbin_code.h"
#include "formats/elf.h"
#include "util/byte_reader.h"
#include "util/expected.h"

namespace tailor::inspect {

/// The entries of one code (a target, or LTO IR: cuda/fatbin_code.h) in a library.
struct TargetStats {
  std::string name;  // code.name(), for display: sm_90a, compute_80, lto_50
  uint64_t entries = 0, stored_bytes = 0, uncompressed_bytes = 0;
  std::set<std::string> compression;  // "none", "lz4", "zstd", "unknown"
  /// What the entries hold, from their headers: compare and group by this, never by name.
  cuda::FatbinCode code;
};

/// Fatbin containers that the library keeps in one of its own sections (cuFFT's .data and
/// .ldata, cuBLASLt's .cask_resource, cuSPARSE's .rodata) and loads itself: found by
/// formats::for_each_embedded_fatbin, counted in the library's targets like .nv_fatbin.
struct EmbeddedFatbins {
  std::string section;  // ".ldata"
  uint64_t containers = 0;
  uint64_t bytes = 0;                // the containers' headers and entries
  std::vector<TargetStats> targets;  // canonical order
};

struct LibraryReport {
  std::string path;
  std::string machine;  // x86_64, aarch64
  uint64_t file_size = 0;
  bool has_device_code = false;
  // Bytes of the .nv_fatbin + __nv_relfatbin sections, plus the embedded containers.
  uint64_t device_code_bytes = 0;
  std::vector<TargetStats>
      targets;  // by code (cuda::FatbinCode's order: CC, then sm before compute; LTO IR last)
  std::vector<EmbeddedFatbins> embedded;  // per section holding any, in file order
  std::vector<std::string> needed, runpath, rpath;
  std::string soname;
  std::vector<formats::ElfVersionNeed> version_needs;
  // From .dynstr: "__cxx11" in mangled names -> true; C++ names with std::string only in
  // the old ABI -> false; no C++ symbols at all -> nullopt.
  std::optional<bool> cxx11_abi;
  std::optional<std::string> x86_isa_level;  // "x86-64-v3", from the ISA note
  bool payloads_verified = false;            // set when LibraryOptions::verify_payloads ran

  /// Target names in canonical order.
  std::vector<std::string> target_names() const;
  /// Sums over `embedded`.
  uint64_t embedded_containers() const;
  uint64_t embedded_bytes() const;
};

struct LibraryOptions {
  bool verify_payloads = false;  // decompress every entry and check its declared size
  uint64_t max_entry_bytes = uint64_t{1} << 30;  // cap for one decompressed payload
};

/// Analyzes one ELF library given as bytes (in memory or mapped). Errors name the path
/// and the offset.
Expected<LibraryReport> analyze_library(Bytes file, std::string path,
                                        const LibraryOptions& options = {});

/// The same for a library on disk: maps it and hands back the pages of each fatbin
/// container once read, and of each stretch the embedded-fatbin scan has passed, which
/// keeps peak RSS of a 456 MB libtorch_cuda.so near 10 MB instead of 200 MB. Use this for
/// installed libraries and extracted files.
Expected<LibraryReport> analyze_library_file(const std::string& path,
                                             const LibraryOptions& options = {});

}  // namespace tailor::inspect
