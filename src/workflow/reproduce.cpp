#include "workflow/reproduce.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_map>

#include "formats/zip.h"
#include "inspect/wheel_provenance.h"
#include "outputs/wheel_normaliser.h"
#include "source/extension_source.h"
#include "util/mapped_file.h"
#include "util/sha256.h"
#include "util/strings.h"

namespace tailor::workflow {

namespace fs = std::filesystem;

Expected<std::string> rebuild_source(const WheelProvenance& p, const std::string& given) {
  if (!given.empty()) return given;
  if (p.source_kind == "index" || p.source_kind == "git") {
    if (p.source_name.empty())
      return make_error(fmt::format("the provenance names no {} source", p.source_kind));
    return p.source_name;
  }
  if (p.source_kind == "example") return std::string();
  if (p.source_kind == "sdist")
    return make_error(
        fmt::format("the wheel was built from the sdist {}: give its path, "
                    "`tailor build --verify-reproducible WHEEL path/to/{}`",
                    p.source_name.empty() ? "(unnamed)" : p.source_name,
                    p.source_name.empty() ? "SDIST" : p.source_name));
  if (p.source_kind == "directory")
    return make_error(
        "the wheel was built from a source folder: give it, "
        "`tailor build --verify-reproducible WHEEL path/to/folder`");
  return make_error(
      fmt::format("the provenance's source kind '{}' is not one tailor rebuilds", p.source_kind));
}

std::vector<std::string> toolchain_differences(const std::map<std::string, std::string>& original,
                                               const std::map<std::string, std::string>& rebuilt) {
  std::vector<std::string> out;
  std::set<std::string> names;
  for (const auto& [k, v] : original) names.insert(k);
  for (const auto& [k, v] : rebuilt) names.insert(k);
  for (const auto& n : names) {
    auto a = original.find(n), b = rebuilt.find(n);
    std::string va = a == original.end() ? "none" : a->second,
                vb = b == rebuilt.end() ? "none" : b->second;
    if (va != vb) out.push_back(fmt::format("{} {} in the wheel, {} here", n, va, vb));
  }
  return out;
}

std::string_view difference_cause_name(DifferenceCause cause) {
  switch (cause) {
    case DifferenceCause::presence:
      return "presence";
    case DifferenceCause::content:
      return "content";
    case DifferenceCause::time_fields:
      return "time fields";
    case DifferenceCause::provenance_keys:
      return "provenance keys";
  }
  return "content";
}

namespace {

// A zip member's DOS time fields as "1980-01-01 00:00:00".
std::string dos_time_text(const formats::ZipEntry& e) {
  return fmt::format("{:04}-{:02}-{:02} {:02}:{:02}:{:02}", (e.dos_date >> 9) + 1980,
                     (e.dos_date >> 5) & 15, e.dos_date & 31, e.dos_time >> 11,
                     (e.dos_time >> 5) & 63, (e.dos_time & 31) * 2);
}

// The top-level keys (toolchain's and environment's one level down) whose values differ
// between two provenance files: "source_date_epoch (315532800 vs 1764399000)".
std::string provenance_key_differences(Bytes a, Bytes b) {
  auto ja = nlohmann::json::parse(as_chars(a), nullptr, false);
  auto jb = nlohmann::json::parse(as_chars(b), nullptr, false);
  if (!ja.is_object() || !jb.is_object()) return "not JSON";
  std::vector<std::string> out;
  auto short_text = [](const nlohmann::json* v) {
    std::string t = v ? v->dump() : "none";
    return t.size() > 60 ? t.substr(0, 57) + "..." : t;
  };
  std::function<void(const nlohmann::json&, const nlohmann::json&, const std::string&, int)> walk =
      [&](const nlohmann::json& x, const nlohmann::json& y, const std::string& prefix, int depth) {
        std::set<std::string> keys;
        for (auto it = x.begin(); it != x.end(); ++it) keys.insert(it.key());
        for (auto it = y.begin(); it != y.end(); ++it) keys.insert(it.key());
        for (const auto& k : keys) {
          const nlohmann::json* vx = x.contains(k) ? &x.at(k) : nullptr;
          const nlohmann::json* vy = y.contains(k) ? &y.at(k) : nullptr;
          if (vx && vy && *vx == *vy) continue;
          if (vx && vy && vx->is_object() && vy->is_object() && depth == 0)
            walk(*vx, *vy, prefix + k + ".", 1);
          else
            out.push_back(
                fmt::format("{}{} ({} vs {})", prefix, k, short_text(vx), short_text(vy)));
        }
      };
  walk(ja, jb, "", 0);
  return out.empty() ? "the same keys, other formatting" : join(out, ", ");
}

}  // namespace

Expected<std::vector<MemberDifference>> compare_wheel_members(const std::string& a,
                                                              const std::string& b, size_t limit,
                                                              size_t& total) {
  TAILOR_TRY(ma, MappedFile::open(a));
  TAILOR_TRY(mb, MappedFile::open(b));
  auto za = formats::parse_zip(ma.bytes());
  if (!za) return make_error(fmt::format("{}: {}", a, za.error().message));
  auto zb = formats::parse_zip(mb.bytes());
  if (!zb) return make_error(fmt::format("{}: {}", b, zb.error().message));
  std::unordered_map<std::string, const formats::ZipEntry*> in_b;
  for (const auto& e : zb->entries) in_b[e.name] = &e;
  std::vector<MemberDifference> out;
  total = 0;
  auto add = [&](std::string name, std::string what, DifferenceCause cause) {
    ++total;
    if (out.size() < limit) out.push_back({std::move(name), std::move(what), cause});
  };
  std::set<std::string> seen;
  std::vector<std::byte> buffer_a, buffer_b;
  for (const auto& e : za->entries) {
    seen.insert(e.name);
    auto it = in_b.find(e.name);
    if (it == in_b.end()) {
      add(e.name, "only in the wheel", DifferenceCause::presence);
      continue;
    }
    const formats::ZipEntry& f = *it->second;
    const bool same_bytes = e.uncompressed_size == f.uncompressed_size && e.crc32 == f.crc32;
    if (!same_bytes && e.name.ends_with(std::string(".dist-info/") + inspect::k_provenance_file)) {
      auto ta = formats::extract_member(ma.bytes(), e, buffer_a);
      auto tb = formats::extract_member(mb.bytes(), f, buffer_b);
      if (ta && tb) {
        add(e.name, "provenance keys: " + provenance_key_differences(*ta, *tb),
            DifferenceCause::provenance_keys);
        continue;
      }
    }
    if (!same_bytes) {
      add(e.name,
          e.uncompressed_size != f.uncompressed_size
              ? fmt::format("content: {} vs {} bytes", e.uncompressed_size, f.uncompressed_size)
              : std::string("content: same size, other bytes"),
          DifferenceCause::content);
    } else if (e.dos_time != f.dos_time || e.dos_date != f.dos_date) {
      add(e.name,
          fmt::format("time fields: {} vs {} (the same bytes)", dos_time_text(e), dos_time_text(f)),
          DifferenceCause::time_fields);
    }
  }
  for (const auto& e : zb->entries)
    if (!seen.count(e.name)) add(e.name, "only in the rebuild", DifferenceCause::presence);
  return out;
}

ReproduceResult verify_reproducible(const std::string& wheel, ExtensionBuildOptions build) {
  ReproduceResult r;
  auto stop = [&](std::string message, bool bad_input) {
    r.verdict = ReproduceVerdict::not_rebuilt;
    r.message = std::move(message);
    r.bad_input = bad_input;
    return r;
  };
  auto provenance = inspect::read_wheel_provenance(wheel);
  if (!provenance) return stop(provenance.error().message, true);
  auto digest = Sha256::of_file(wheel);
  if (!digest) return stop(digest.error().message, true);
  r.original_sha256 = Sha256::hex(*digest);
  auto source = rebuild_source(*provenance, build.source);
  if (!source) return stop(source.error().message, true);
  build.source = *source;
  r.source = source->empty() ? "the bundled example" : *source;
  if (!build.arch.empty() || !build.gpu.empty())
    return stop("--verify-reproducible takes the targets from the wheel: no --arch or --gpu", true);
  build.arch = {join(provenance->targets, ",")};
  // The recipe is not passed: the same source resolves to the same one, and --package with
  // the recipe's name would record another package name (causal-conv1d for the sdist's
  // causal_conv1d) in the rebuilt provenance. Checked after the rebuild instead.
  if (build.profile.empty()) build.profile = provenance->profile;
  build.split_units = provenance->split_units;
  build.tests = ExtensionBuildOptions::Tests::never;
  build.print_env = false;
  // A fresh output folder: the rebuilt wheel must not meet the original or an older one.
  const std::string root = build.work_root.empty() ? source::default_work_root() : build.work_root;
  const fs::path out =
      fs::path(root) / "reproduce" / fmt::format("{}-{}", provenance->package, ::getpid());
  std::error_code ec;
  fs::remove_all(out, ec);
  fs::create_directories(out, ec);
  if (ec) return stop(fmt::format("{}: {}", out.string(), ec.message()), false);
  build.out_dir = out.string();
  r.build = build_extension(build);
  if (r.build.status != BuildStatus::ok)
    return stop(
        r.build.message.empty() ? "the rebuild failed" : "the rebuild failed: " + r.build.message,
        false);
  r.rebuilt_wheel = r.build.report.wheel_path;
  auto rebuilt = inspect::read_wheel_provenance(r.rebuilt_wheel);
  if (!rebuilt) return stop(rebuilt.error().message, false);
  r.toolchain_differences = toolchain_differences(provenance->toolchain, rebuilt->toolchain);
  if (rebuilt->recipe != provenance->recipe)
    return stop(fmt::format("the rebuild used the recipe {}, the wheel says {}: pass --package {}",
                            rebuilt->recipe, provenance->recipe, provenance->recipe),
                false);
  if (rebuilt->digest != provenance->digest)
    return stop(
        fmt::format(
            "the source is not the one the wheel was built from: {} {} in the wheel, {} here",
            provenance->digest_kind, provenance->digest.substr(0, 16),
            rebuilt->digest.substr(0, 16)),
        false);
  auto again = Sha256::of_file(r.rebuilt_wheel);
  if (!again) return stop(again.error().message, false);
  r.rebuilt_sha256 = Sha256::hex(*again);
  if (r.rebuilt_sha256 == r.original_sha256) {
    r.verdict = ReproduceVerdict::identical;
    fs::remove_all(out, ec);  // nothing to look at: the same bytes
    r.rebuilt_wheel.clear();
    return r;
  }
  r.verdict = ReproduceVerdict::differs;
  auto members = compare_wheel_members(wheel, r.rebuilt_wheel, SIZE_MAX, r.members_differing);
  if (members) {
    std::map<DifferenceCause, size_t> counts;
    for (const auto& m : *members) ++counts[m.cause];
    for (const auto& [cause, n] : counts)
      r.causes.push_back(fmt::format("{}: {}", difference_cause_name(cause), n));
    constexpr size_t k_listed = 20;
    if (members->size() > k_listed) members->resize(k_listed);
    r.members = std::move(*members);
  }
  return r;
}

}  // namespace tailor::workflow
