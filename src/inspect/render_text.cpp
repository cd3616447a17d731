#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "inspect/render.h"
#include "util/strings.h"

namespace tailor::inspect {

namespace {

std::string join_set(const std::set<std::string>& s) { return join(std::vector<std::string>(s.begin(), s.end()), ","); }

template <typename Row>
void target_table(std::string& out, const std::vector<Row>& rows, uint64_t whole, const char* indent) {
  size_t width = 6;
  for (const auto& t : rows) width = std::max(width, t.name.size());
  for (const auto& t : rows) {
    double share = whole ? double(t.stored_bytes) / double(whole) : 0.0;
    out += fmt::format("{}{:<{}}  {} {:>4.0f}%  {:>10}  {:>5} entries  {}\n", indent, t.name, width, share_bar(share),
                       share * 100.0, human_bytes(t.stored_bytes), t.entries, join_set(t.compression));
  }
}

std::string needed_line(const NeededLibrary& n) {
  std::string at = n.resolved.empty() ? "" : fmt::format(", found at {} through {}", n.resolved, n.via);
  switch (n.kind) {
    case NeededKind::bundled:
      if (n.via.empty()) return fmt::format("{} (bundled)", n.soname);
      return fmt::format("{} (bundled: {} through {})", n.soname, n.resolved, n.via);
    case NeededKind::cuda_runtime:
      if (n.wheels.empty() && n.systems.empty())
        return fmt::format("{} ({}: no known provider of this version{})", n.soname, n.what, at);
      return fmt::format("{} ({}: wheel {} or package {}{})", n.soname, n.what,
                         n.wheels.empty() ? "none" : join(n.wheels, "|"), join(n.systems, "|"), at);
    case NeededKind::torch: return fmt::format("{} (provided by torch{})", n.soname, at);
    case NeededKind::found: return fmt::format("{} (found at {} through {})", n.soname, n.resolved, n.via);
    case NeededKind::not_found: return fmt::format("{} (not found: {})", n.soname, n.note);
    case NeededKind::system: return fmt::format("{} (SYSTEM: not in the wheel, not on the manylinux whitelist)", n.soname);
    default: return fmt::format("{} ({}{})", n.soname, needed_kind_key(n.kind), at);
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
  return parts.empty() ? "none" : join(parts, " ");
}

void library_text(std::string& out, const InspectedLibrary& lib, bool full, const char* indent) {
  std::string head = fmt::format("{}{}  ({}, {}", indent, lib.path, lib.machine, human_bytes(lib.file_size));
  if (lib.member_compressed_bytes) head += fmt::format(", {} in the wheel", human_bytes(lib.member_compressed_bytes));
  head += ")";
  if (!lib.has_device_code) {
    out += head + "  no CUDA device code";
    if (!full) {
      out += fmt::format("; {}\n", lib.manylinux.tag);
      return;
    }
    out += "\n";
  } else {
    out += head + fmt::format("  device code {} in {} targets\n", human_bytes(lib.device_code_bytes), lib.targets.size());
    std::string sub = std::string(indent) + "    ";
    target_table(out, lib.targets, lib.device_code_bytes, sub.c_str());
  }
  out += fmt::format("{}  needs      {} -> {}\n", indent, newest_needs(lib), lib.manylinux.tag);
  std::vector<std::string> needed;
  for (const auto& n : lib.needed_libraries) needed.push_back(needed_line(n));
  if (!needed.empty()) out += fmt::format("{}  needed     {}\n", indent, join(needed, ", "));
  if (!lib.runpath.empty()) out += fmt::format("{}  runpath    {}\n", indent, join(lib.runpath, ":"));
  if (!lib.rpath.empty()) out += fmt::format("{}  rpath      {}\n", indent, join(lib.rpath, ":"));
  for (const auto& w : lib.loader_warnings) out += fmt::format("{}  WARNING    {}\n", indent, w);
  std::string abi = !lib.cxx11_abi ? "no C++ symbols" : *lib.cxx11_abi ? "cxx11 (new)" : "pre-cxx11 (old)";
  out += fmt::format("{}  c++ abi    {}", indent, abi);
  if (lib.x86_isa_level) out += fmt::format("; x86 ISA {}", *lib.x86_isa_level);
  out += "\n";
}

void wheel_text(std::string& out, const WheelReport& w, const TextOptions& options) {
  out += fmt::format("{}  ({}, {} members, {} installed)\n", w.path, human_bytes(w.file_size), w.members,
                     human_bytes(w.installed_bytes));
  out += fmt::format("  name       {} {}", w.name, w.version);
  if (!w.local_label.empty()) out += fmt::format("  (local label +{})", w.local_label);
  if (!w.metadata_version.empty() && w.metadata_version != w.version)
    out += fmt::format("  METADATA says {} {}", w.metadata_name, w.metadata_version);
  out += "\n";
  out += fmt::format("  tags       {}  {}\n", join(w.tags_from_name, " "),
                     w.tags_consistent ? "(WHEEL agrees)"
                                       : fmt::format("(WHEEL says {})", join(w.tags_from_wheel_file, " ")));
  if (!w.record.present) {
    out += "  RECORD     MISSING\n";
  } else if (w.record.passed()) {
    out += fmt::format("  RECORD     ok: {} members match their hashes and sizes\n", w.record.ok);
  } else {
    out += fmt::format("  RECORD     FAILED: {} ok, {} mismatched, {} unlisted, {} missing\n", w.record.ok,
                       w.record.mismatches.size(), w.record.unlisted.size(), w.record.missing.size());
    for (const auto& m : w.record.mismatches) out += fmt::format("    mismatch  {}: {}\n", m.path, m.what);
    for (const auto& u : w.record.unlisted) out += fmt::format("    unlisted  {}\n", u);
    for (const auto& m : w.record.missing) out += fmt::format("    missing   {}\n", m);
  }
  if (!w.manylinux_needed.empty())
    out += fmt::format("  manylinux  needs {}, claims {}: {}\n", w.manylinux_needed, w.manylinux_claimed,
                       w.claim_ok ? "ok" : "WRONG: " + w.claim_problem);
  size_t with_code = std::count_if(w.libraries.begin(), w.libraries.end(), [](auto& l) { return l.has_device_code; });
  out += fmt::format("  libraries  {} ELF, {} with CUDA device code\n", w.libraries.size(), with_code);
  if (!w.targets.empty()) {
    out += "  targets    (all libraries; share of the installed bytes)\n";
    target_table(out, w.targets, w.installed_bytes, "    ");
  }
  for (const auto& lib : w.libraries) library_text(out, lib, options.all_libraries || lib.has_device_code, "  ");
}

}  // namespace

std::string share_bar(double share, int width) {
  share = std::clamp(share, 0.0, 1.0);
  int full = static_cast<int>(std::lround(share * width));
  if (full == 0 && share > 0) full = 1;  // a non-zero share is visible
  std::string bar;
  for (int i = 0; i < width; ++i) bar += i < full ? "\u2588" : "\u2591";
  return bar;
}

std::string render_text(const InspectReport& report, const Verdicts* verdicts, const TextOptions& options) {
  std::string out;
  for (const auto& w : report.wheels) {
    wheel_text(out, w, options);
    out += "\n";
  }
  for (const auto& lib : report.libraries) {
    library_text(out, lib, true, "");
    out += "\n";
  }
  if (verdicts) {
    for (const auto& p : verdicts->problems) out += fmt::format("verdict FAIL: {}\n", p);
    for (const auto& v : verdicts->items) {
      const char* status = v.pass ? "PASS" : "FAIL";
      switch (v.check) {
        case VerdictCheck::gpu:
          if (v.mode == "none")
            out += fmt::format("verdict {}: gpu {}: {} has no kernel image for it\n", status, v.device, v.library);
          else {
            std::string how = v.mode == "native" ? "native SASS" : v.mode == "compatible_sass" ? "compatible SASS" : "PTX JIT";
            if (v.covering.empty()) {
              out += fmt::format("verdict {}: gpu {}: {} runs through {} ({})\n", status, v.device, v.library, how, v.via);
            } else {
              std::vector<std::string> parts;
              for (const auto& c : v.covering)
                parts.push_back(fmt::format("{} ({} {})", c.target, c.entries, c.entries == 1 ? "entry" : "entries"));
              std::string list = parts.back();
              if (parts.size() > 1) {
                parts.pop_back();
                list = join(parts, ", ") + " and " + list;
              }
              out += fmt::format("verdict {}: gpu {}: {} runs through {} {}\n", status, v.device, v.library, how, list);
            }
          }
          break;
        case VerdictCheck::require:
          out += v.pass ? fmt::format("verdict PASS: require: {} has every required target\n", v.library)
                        : fmt::format("verdict FAIL: require: {} lacks {}\n", v.library, join(v.missing, " "));
          break;
        case VerdictCheck::exact:
          if (v.pass) out += fmt::format("verdict PASS: exact: {} has exactly the spec\n", v.library);
          else {
            out += fmt::format("verdict FAIL: exact: {}", v.library);
            if (!v.missing.empty()) out += " lacks " + join(v.missing, " ");
            if (!v.extra.empty()) out += (v.missing.empty() ? " has extra " : "; has extra ") + join(v.extra, " ");
            out += "\n";
          }
          break;
      }
    }
  }
  return out;
}

}  // namespace tailor::inspect
