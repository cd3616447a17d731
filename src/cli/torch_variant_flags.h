// The variant flags shared by `tailor plan`, `tailor doctor`, `tailor build torch` and
// `tailor matrix`: parsed into a plain struct, turned into a TorchVariant (layered on a
// tailor.toml variant when --config/--variant are given), and the host probed once.
#pragma once
#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "plan/torch_plan.h"
#include "plan/torch_variant.h"
#include "probe/host_report.h"
#include "util/expected.h"

namespace tailor::cli {

struct TorchVariantFlags {
  std::string torch, source, git, cuda, python, cpu_target, blas, build_type, compress, platform,
      manylinux;
  std::string config, variant, work_dir = "tailor-work";
  bool cpu_only = false, keep_debug = false, system_libs = false;
  std::vector<std::string> arch, gpu, with, without;
  std::optional<int> jobs;  ///< --jobs: MAX_JOBS of the build (>= 1), instead of tailor's estimate
};

void add_torch_variant_flags(CLI::App& app, TorchVariantFlags& flags);
/// Config variant (if any) overlaid with the flags given; the torch version of a
/// --source tree is read from its version.txt when --torch is not given. Errors for
/// flags that exclude each other (--arch with --gpu) and for --jobs below 1.
Expected<plan::TorchVariant> variant_from_flags(const TorchVariantFlags& flags);
/// Work folder and --jobs of the flags (resolution makes the work folder absolute).
plan::ResolveOptions resolve_options_from_flags(const TorchVariantFlags& flags);
/// With a source tree and no torch version: the release from its version.txt ("2.9.1a0").
Expected<bool> fill_version_from_source(plan::TorchVariant& variant);
/// Probes this host for planning (Pythons named by path in --python are probed too).
probe::HostReport probe_for_torch(const TorchVariantFlags& flags, plan::TorchVariant& variant);

}  // namespace tailor::cli
