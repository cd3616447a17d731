#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "inspect/render.h"
#include "util/strings.h"
#include "util/terminal_style.h"
#include "util/text_escape.h"

namespace tailor::inspect {

namespace {

// Every string taken from the input goes through t() (control sequences and invalid UTF-8
// become \xNN text: util/text_escape.h). Long lists are cut at k_max_listed items with an
// explicit "(N more ...)"; --json carries them all.
constexpr size_t k_max_listed = 64;

std::string t(std::string_view s) { return terminal_safe(s); }

// The first k_max_listed items, escaped and joined, then "(N more <what>)".
std::string join_capped(const std::vector<std::string>& items, std::string_view sep,
                        std::string_view what) {
  std::vector<std::string> shown;
  for (size_t i = 0; i < items.size() && i < k_max_listed; ++i) shown.push_back(t(items[i]));
  std::string out = join(shown, sep);
  if (items.size() > k_max_listed)
    out += fmt::format("{}({} more {})", sep, items.size() - k_max_listed, what);
  return out;
}

// The compression column, labelled by its own words: "zstd-compressed", "uncompressed",
// "lz4-compressed, uncompressed".
std::string compression_words(const std::set<std::string>& s) {
  std::vector<std::string> words;
  for (const auto& c : s) words.push_back(c == "none" ? "uncompressed" : c + "-compressed");
  return join(words, ", ");
}

template <typename Row>
void target_table(std::string& out, const std::vector<Row>& rows, uint64_t whole,
                  const char* indent) {
  size_t width = 6;
  for (const auto& row : rows) width = std::max(width, row.name.size());
  for (const auto& row : rows) {
    double share = whole ? double(row.stored_bytes) / double(whole) : 0.0;
    out += fmt::format("{}{:<{}}  {} {:>4.0f}%  {:>10}  {:>5} entries  {}\n", indent, row.name,
                       width, share_bar(share), share * 100.0, human_bytes(row.stored_bytes),
                       row.entries, compression_words(row.compression));
  }
}

// Containers outside .nv_fatbin, which the library loads itself: where they are, then per
// section the entries per target ("embedded fatbins: 21652 containers, 241.2 MiB in .data").
void embedded_text(std::string& out, const InspectedLibrary& lib, const std::string& indent) {
  if (lib.embedded.empty()) return;
  std::vector<std::string> sections;
  for (const auto& e : lib.embedded) sections.push_back(e.section);
  auto containers = [](uint64_t n) {
    return fmt::format("{} {}", n, n == 1 ? "container" : "containers");
  };
  out += fmt::format("{}embedded fatbins: {}, {} in {}\n", indent,
                     containers(lib.embedded_containers()), human_bytes(lib.embedded_bytes()),
                     join_capped(sections, ", ", "sections"));
  for (size_t i = 0; i < lib.embedded.size() && i < k_max_listed; ++i) {
    const auto& e = lib.embedded[i];
    std::vector<std::string> per_target;
    for (const auto& ts : e.targets)
      per_target.push_back(fmt::format("{} {}", ts.name, ts.entries));
    out +=
        fmt::format("{}  {}: {}, {}; entries {}\n", indent, t(e.section), containers(e.containers),
                    human_bytes(e.bytes), join_capped(per_target, ", ", "targets"));
  }
  if (lib.embedded.size() > k_max_listed)
    out += fmt::format("{}  ({} more sections; --json lists them all)\n", indent,
                       lib.embedded.size() - k_max_listed);
}

std::string needed_line(const NeededLibrary& n) {
  std::string at =
      n.resolved.empty() ? "" : fmt::format(", found at {} through {}", t(n.resolved), t(n.via));
  switch (n.kind) {
    case NeededKind::bundled:
      if (n.via.empty()) return fmt::format("{} (bundled)", t(n.soname));
      return fmt::format("{} (bundled: {} through {})", t(n.soname), t(n.resolved), t(n.via));
    case NeededKind::cuda_runtime:
      if (n.wheels.empty() && n.systems.empty())
        return fmt::format("{} ({}: no known provider of this version{})", t(n.soname), n.what, at);
      return fmt::format("{} ({}: wheel {} or package {}{})", t(n.soname), n.what,
                         n.wheels.empty() ? "none" : join(n.wheels, "|"), join(n.systems, "|"), at);
    case NeededKind::torch:
      return fmt::format("{} (provided by torch{})", t(n.soname), at);
    case NeededKind::found:
      return fmt::format("{} (found at {} through {})", t(n.soname), t(n.resolved), t(n.via));
    case NeededKind::not_found:
      return fmt::format("{} (not found: {})", t(n.soname), t(n.note));
    case NeededKind::system:
      return fmt::format("{} (SYSTEM: not in the wheel, not on the manylinux whitelist)",
                         t(n.soname));
    default:
      return fmt::format("{} ({}{})", t(n.soname), needed_kind_key(n.kind), at);
  }
}

// The newest version needed per prefix: "GLIBC_2.34 GLIBCXX_3.4.30 CXXABI_1.3.13".
std::string newest_needs(const InspectedLibrary& lib) {
  std::map<std::string, std::string> newest;
  for (const auto& need : lib.version_needs)
    for (const auto& v : need.versions) {
      auto us = v.find('_');
      if (us == std::string::npos) continue;
      std::string prefix = v.substr(0, us), number = v.substr(us + 1);
      if (number.empty() || !std::isdigit(static_cast<unsigned char>(number[0]))) continue;
      auto& cur = newest[prefix];
      if (cur.empty() || compare_versions(number, cur) > 0) cur = number;
    }
  std::vector<std::string> parts;
  for (auto& [p, v] : newest) parts.push_back(p + "_" + v);
  return parts.empty() ? "none" : join_capped(parts, " ", "version prefixes");
}

void library_text(std::string& out, const InspectedLibrary& lib, bool full, const char* indent) {
  std::string head =
      fmt::format("{}{}  ({}, {}", indent, t(lib.path), lib.machine, human_bytes(lib.file_size));
  if (lib.member_compressed_bytes)
    head += fmt::format(", {} in the wheel", human_bytes(lib.member_compressed_bytes));
  head += ")";
  if (!lib.has_device_code) {
    out += head + "  no CUDA device code";
    if (!full) {
      out += fmt::format("; {}\n", lib.manylinux.tag);
      return;
    }
    out += "\n";
  } else {
    out += head + fmt::format("  device code {} in {} targets\n",
                              human_bytes(lib.device_code_bytes), lib.targets.size());
    std::string sub = std::string(indent) + "    ";
    target_table(out, lib.targets, lib.device_code_bytes, sub.c_str());
    embedded_text(out, lib, sub);
  }
  out += fmt::format("{}  needs      {} -> {}\n", indent, newest_needs(lib), lib.manylinux.tag);
  std::vector<std::string> needed;
  for (size_t i = 0; i < lib.needed_libraries.size() && i < k_max_listed; ++i)
    needed.push_back(needed_line(lib.needed_libraries[i]));
  if (lib.needed_libraries.size() > k_max_listed)
    needed.push_back(
        fmt::format("({} more needed libraries)", lib.needed_libraries.size() - k_max_listed));
  if (!needed.empty()) out += fmt::format("{}  needed     {}\n", indent, join(needed, ", "));
  if (!lib.runpath.empty())
    out += fmt::format("{}  runpath    {}\n", indent, join_capped(lib.runpath, ":", "entries"));
  if (!lib.rpath.empty())
    out += fmt::format("{}  rpath      {}\n", indent, join_capped(lib.rpath, ":", "entries"));
  for (const auto& w : lib.loader_warnings) out += fmt::format("{}  WARNING    {}\n", indent, t(w));
  for (const auto& w : lib.runtime_warnings)
    out += fmt::format("{}  WARNING    {}\n", indent, t(w));
  std::string abi = !lib.cxx11_abi   ? "no C++ symbols"
                    : *lib.cxx11_abi ? "cxx11 (new)"
                                     : "pre-cxx11 (old)";
  out += fmt::format("{}  c++ abi    {}", indent, abi);
  if (lib.x86_isa_level) out += fmt::format("; x86 ISA {}", *lib.x86_isa_level);
  out += "\n";
}

// Device code files, one line per folder and target (a wheel of 16,000 cubins is a few
// lines); with --all, a line per file after them (up to k_max_listed).
void device_files_text(std::string& out, const std::vector<DeviceFile>& files, bool full,
                       const char* indent) {
  if (files.empty()) return;
  auto folders = device_folders(files);
  uint64_t cubins = 0, ptx = 0, fatbins = 0;
  for (const auto& f : folders) {
    cubins += f.cubins;
    ptx += f.ptx;
    fatbins += f.fatbins;
  }
  out += fmt::format(
      "{}device code files  {} ({} cubin, {} PTX, {} fatbin; not host libraries: the package "
      "loads them itself), per folder and target:\n",
      indent, files.size(), cubins, ptx, fatbins);
  size_t folder_width = 6, target_width = 6;
  for (const auto& f : folders) {
    folder_width = std::max(folder_width, t(device_folder_label(f)).size());
    for (const auto& target : f.targets) target_width = std::max(target_width, target.name.size());
  }
  folder_width = std::min<size_t>(folder_width, 72);
  size_t shown = 0;
  for (const auto& f : folders)
    for (const auto& target : f.targets) {
      if (++shown > k_max_listed) continue;
      out += fmt::format("{}  {:<{}}  {:<{}}  {:>6} {}  {:>6} entries  {:>10}  {}\n", indent,
                         t(device_folder_label(f)), folder_width, target.name, target_width,
                         target.files, target.files == 1 ? "file " : "files", target.entries,
                         human_bytes(target.stored_bytes), compression_words(target.compression));
    }
  if (shown > k_max_listed)
    out += fmt::format("{}  ({} more folder and target lines; --json lists every file)\n", indent,
                       shown - k_max_listed);
  if (!full) return;
  for (size_t i = 0; i < files.size() && i < k_max_listed; ++i) {
    const auto& f = files[i];
    std::vector<std::string> targets;
    for (const auto& target : f.targets)
      targets.push_back(target.entries == 1
                            ? target.name
                            : fmt::format("{} ({} entries)", target.name, target.entries));
    out += fmt::format("{}  {}  ({}, {}; manylinux: not a host library)  {}\n", indent, t(f.path),
                       formats::device_file_kind_name(f.kind), human_bytes(f.file_size),
                       join(targets, " "));
  }
  if (files.size() > k_max_listed)
    out += fmt::format("{}  ({} more device code files; --json lists them all)\n", indent,
                       files.size() - k_max_listed);
}

void wheel_text(std::string& out, const WheelReport& w, const TextOptions& options) {
  out += fmt::format("{}  ({}, {} members, {} installed)\n", t(w.path), human_bytes(w.file_size),
                     w.members, human_bytes(w.installed_bytes));
  out += fmt::format("  name       {} {}", t(w.name), t(w.version));
  if (!w.local_label.empty()) out += fmt::format("  (local label +{})", t(w.local_label));
  if (!w.metadata_version.empty() && w.metadata_version != w.version)
    out += fmt::format("  METADATA says {} {}", t(w.metadata_name), t(w.metadata_version));
  out += "\n";
  out += fmt::format(
      "  tags       {}  {}\n", join_capped(w.tags_from_name, " ", "tags"),
      w.tags_consistent
          ? "(WHEEL agrees)"
          : fmt::format("(WHEEL says {})", join_capped(w.tags_from_wheel_file, " ", "tags")));
  if (!w.record.present) {
    out += "  RECORD     MISSING\n";
  } else if (w.record.passed()) {
    out += fmt::format("  RECORD     ok: {} members match their hashes and sizes\n", w.record.ok);
  } else {
    out += fmt::format("  RECORD     FAILED: {} ok, {} mismatched, {} unlisted, {} missing\n",
                       w.record.ok, w.record.mismatches.size(), w.record.unlisted.size(),
                       w.record.missing.size());
    auto lines = [&](size_t count, const char* what, auto&& line) {
      for (size_t i = 0; i < count && i < k_max_listed; ++i) out += line(i);
      if (count > k_max_listed)
        out += fmt::format("    ({} more {} members; --json lists them all)\n",
                           count - k_max_listed, what);
    };
    const auto& rec = w.record;
    lines(rec.mismatches.size(), "mismatched", [&](size_t i) {
      return fmt::format("    mismatch  {}: {}\n", t(rec.mismatches[i].path),
                         t(rec.mismatches[i].what));
    });
    lines(rec.unlisted.size(), "unlisted",
          [&](size_t i) { return fmt::format("    unlisted  {}\n", t(rec.unlisted[i])); });
    lines(rec.missing.size(), "missing",
          [&](size_t i) { return fmt::format("    missing   {}\n", t(rec.missing[i])); });
  }
  if (!w.manylinux_needed.empty()) {
    std::string verdict = "ok";
    if (!w.claim_ok && w.claim_ok_without_other_gpu) {
      // Wrong only for another GPU platform's backend: said, and only a warning.
      std::vector<std::string> platforms;
      for (const auto& lib : w.other_gpu_libraries)
        if (std::find(platforms.begin(), platforms.end(), lib.platform) == platforms.end())
          platforms.push_back(lib.platform);
      verdict = fmt::format(
          "WRONG for the {} libraries only (a warning: the CUDA and CPU libraries fit it): {}",
          join(platforms, " and "), t(w.claim_problem));
    } else if (!w.claim_ok) {
      verdict = "WRONG: " + t(w.claim_problem);
      // Libraries of another GPU platform broke it too: what breaks it for the others.
      if (!w.other_gpu_libraries.empty() && w.claim_problem_without_other_gpu != w.claim_problem)
        verdict +=
            "; for the CUDA and CPU libraries alone: " + t(w.claim_problem_without_other_gpu);
    }
    out += fmt::format("  manylinux  needs {}, claims {}: {}\n", w.manylinux_needed,
                       t(w.manylinux_claimed), verdict);
  }
  size_t with_code = std::count_if(w.libraries.begin(), w.libraries.end(),
                                   [](auto& l) { return l.has_device_code; });
  out +=
      fmt::format("  libraries  {} ELF, {} with CUDA device code\n", w.libraries.size(), with_code);
  if (!w.targets.empty()) {
    out += w.device_files.empty()
               ? "  targets    (all libraries; share of the installed bytes)\n"
               : "  targets    (all libraries and device code files; share of the installed "
                 "bytes)\n";
    target_table(out, w.targets, w.installed_bytes, "    ");
  }
  for (const auto& lib : w.libraries)
    library_text(out, lib, options.all_libraries || lib.has_device_code, "  ");
  device_files_text(out, w.device_files, options.all_libraries, "  ");
}

}  // namespace

std::string share_bar(double share, int width) {
  // Whole cells, then eighths of a cell (U+2589..U+258F): 0.4% is a sliver, not a block.
  static const char* const k_eighths[] = {"",       "\u258F", "\u258E", "\u258D",
                                          "\u258C", "\u258B", "\u258A", "\u2589"};
  share = std::clamp(share, 0.0, 1.0);
  const long eighths_total = std::lround(share * width * 8);
  int full = static_cast<int>(eighths_total / 8);
  int eighths = static_cast<int>(eighths_total % 8);
  if (full == 0 && eighths == 0 && share > 0) eighths = 1;  // a non-zero share is visible
  std::string bar;
  for (int i = 0; i < width; ++i) {
    if (i < full)
      bar += "\u2588";
    else if (i == full && eighths > 0)
      bar += k_eighths[eighths];
    else
      bar += "\u2591";
  }
  return bar;
}

std::string render_text(const InspectReport& report, const Verdicts* verdicts,
                        const TextOptions& options) {
  std::string out;
  for (const auto& w : report.wheels) {
    wheel_text(out, w, options);
    out += "\n";
  }
  for (const auto& lib : report.libraries) {
    library_text(out, lib, true, "");
    out += "\n";
  }
  if (!report.device_files.empty()) {
    device_files_text(out, report.device_files, true, "");
    out += "\n";
  }
  for (const auto& skipped : report.skipped) out += fmt::format("skipped: {}\n", t(skipped));
  if (verdicts) {
    for (const auto& p : verdicts->problems)
      out += fmt::format("verdict {}: {}\n", paint("FAIL", Paint::red), t(p));
    for (const auto& v : verdicts->items) {
      const std::string status = v.pass ? paint("PASS", Paint::green) : paint("FAIL", Paint::red);
      switch (v.check) {
        case VerdictCheck::gpu:
          if (!v.reason.empty())
            out += fmt::format("verdict {}: gpu {}: {}: {}\n", status, v.device_label(),
                               t(v.library), t(v.reason));
          else if (v.mode == "none")
            out += fmt::format("verdict {}: gpu {}: {} has no kernel image for it\n", status,
                               v.device_label(), t(v.library));
          else {
            std::string how = v.mode == "native"            ? "native SASS"
                              : v.mode == "compatible_sass" ? "compatible SASS"
                                                            : "PTX JIT";
            if (v.covering.empty()) {
              out += fmt::format("verdict {}: gpu {}: {} runs through {} ({})\n", status,
                                 v.device_label(), t(v.library), how, v.via);
            } else {
              std::vector<std::string> parts;
              for (const auto& c : v.covering)
                parts.push_back(fmt::format("{} ({} {})", c.target, c.entries,
                                            c.entries == 1 ? "entry" : "entries"));
              std::string list = parts.back();
              if (parts.size() > 1) {
                parts.pop_back();
                list = join(parts, ", ") + " and " + list;
              }
              out += fmt::format("verdict {}: gpu {}: {} runs through {} {}\n", status,
                                 v.device_label(), t(v.library), how, list);
            }
          }
          break;
        case VerdictCheck::require:
          out += v.pass ? fmt::format("verdict {}: require: {} has every required target\n", status,
                                      t(v.library))
                        : fmt::format("verdict {}: require: {} lacks {}\n", status, t(v.library),
                                      join(v.missing, " "));
          break;
        case VerdictCheck::exact:
          if (v.pass)
            out +=
                fmt::format("verdict {}: exact: {} has exactly the spec\n", status, t(v.library));
          else {
            out += fmt::format("verdict {}: exact: {}", status, t(v.library));
            if (!v.missing.empty()) out += " lacks " + join(v.missing, " ");
            if (!v.extra.empty())
              out += (v.missing.empty() ? " has extra " : "; has extra ") + join(v.extra, " ");
            out += "\n";
          }
          break;
      }
    }
  }
  return out;
}

}  // namespace tailor::inspect
