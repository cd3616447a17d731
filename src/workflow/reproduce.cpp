#include "workflow/reproduce.h"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <unordered_map>

#include "executor/extension_source.h"
#include "executor/wheel_normaliser.h"
#include "formats/zip.h"
#include "inspect/wheel_provenance.h"
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
  auto add = [&](std::string name, std::string what) {
    ++total;
    if (out.size() < limit) out.push_back({std::move(name), std::move(what)});
  };
  std::set<std::string> seen;
  for (const auto& e : za->entries) {
    seen.insert(e.name);
    auto it = in_b.find(e.name);
    if (it == in_b.end()) {
      add(e.name, "only in the wheel");
    } else if (e.uncompressed_size != it->second->uncompressed_size) {
      add(e.name,
          fmt::format("{} vs {} bytes", e.uncompressed_size, it->second->uncompressed_size));
    } else if (e.crc32 != it->second->crc32) {
      add(e.name, "same size, other bytes");
    }
  }
  for (const auto& e : zb->entries)
    if (!seen.count(e.name)) add(e.name, "only in the rebuild");
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
  const std::string root =
      build.work_root.empty() ? executor::default_work_root() : build.work_root;
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
  auto members = compare_wheel_members(wheel, r.rebuilt_wheel, 20, r.members_differing);
  if (members) r.members = std::move(*members);
  return r;
}

}  // namespace tailor::workflow
