#include "cuda/target_request.h"

#include <fmt/format.h>

#include <algorithm>

#include "util/strings.h"

namespace tailor::cuda {

namespace {

bool mentions_native(const std::vector<std::string>& specs) {
  return std::any_of(specs.begin(), specs.end(), [](const std::string& s) {
    return to_lower(s).find("native") != std::string::npos;
  });
}

/// "--arch (e.g. --arch 8.6) or --gpu (e.g. --gpu A10G)": the flags a command has.
std::string name_one_with(const TargetRequest& r) {
  std::vector<std::string> ways;
  if (!r.arch_flag.empty())
    ways.push_back(fmt::format("{} (e.g. {} 8.6)", r.arch_flag, r.arch_flag));
  if (!r.gpu_flag.empty()) ways.push_back(fmt::format("{} (e.g. {} A10G)", r.gpu_flag, r.gpu_flag));
  return "name one with " + join(ways, " or ");
}

/// "--arch or --gpu"
std::string the_flags(const TargetRequest& r) {
  if (r.arch_flag.empty() || r.gpu_flag.empty())
    return r.arch_flag.empty() ? r.gpu_flag : r.arch_flag;
  return r.arch_flag + " or " + r.gpu_flag;
}

}  // namespace

Expected<ResolvedTargets> resolve_target_request(const TargetRequest& request,
                                                 const ArchSpecContext& context) {
  const bool has_arch = !request.arch.empty(), has_gpu = !request.gpu.empty();
  if (has_arch && has_gpu)
    // Two ways of naming the targets; their union would build what neither said.
    return make_error(fmt::format("use {} or {}, not both", request.arch_flag, request.gpu_flag));
  ResolvedTargets out;
  if (!has_arch && !has_gpu) {
    if (!request.detect) return make_error("no GPU target given; " + name_one_with(request));
    const std::vector<DetectedGpu> gpus = request.detect();
    if (gpus.empty())
      return make_error("no GPU found and no target given; " + name_one_with(request));
    out.source = TargetSource::detected;
    std::vector<std::string> described;
    for (const auto& g : gpus) {
      if (!g.cc)
        return make_error(
            fmt::format("GPU {} ({}) reports no compute capability; name the target with {}",
                        g.index, g.name, the_flags(request)));
      out.targets.add(sass(*g.cc));
      out.named.push_back(g.name);
      described.push_back(fmt::format("GPU {}: {} ({})", g.index, g.name, g.cc->str()));
    }
    out.devices = out.targets.capabilities();
    out.described = "detected " + join(described, ", ");
    return out;
  }

  const std::vector<std::string>& specs = has_arch ? request.arch : request.gpu;
  const std::string& flag = has_arch ? request.arch_flag : request.gpu_flag;
  auto fail = [&](const std::string& message) -> Error {
    return make_error(request.prefix_errors && !flag.empty() ? flag + ": " + message : message);
  };
  ArchSpecContext ctx = context;
  if (ctx.native_devices.empty() && request.detect && mentions_native(specs))
    for (const auto& g : request.detect())
      if (g.cc && std::find(ctx.native_devices.begin(), ctx.native_devices.end(), *g.cc) ==
                      ctx.native_devices.end())
        ctx.native_devices.push_back(*g.cc);
  out.source = has_arch ? TargetSource::arch : TargetSource::gpu;
  std::vector<std::string> described;
  for (const auto& spec : specs) {
    if (has_arch) {
      auto set = parse_arch_spec(spec, ctx);
      if (!set) return fail(set.error().message);
      out.targets.add(*set);
    } else {
      // A GPU runs its own SASS: --gpu never adds PTX, whatever the spelling says.
      auto ccs = parse_gpu_spec(spec, ctx);
      if (!ccs) return fail(ccs.error().message);
      if (ccs->empty()) return fail(fmt::format("no GPU in '{}'", spec));
      for (const auto& cc : *ccs) out.targets.add(sass(cc));
    }
    described.push_back(flag.empty() ? spec : flag + " " + spec);
  }
  // parse_arch_spec refuses a spec that names nothing; this guards the union.
  if (out.targets.empty()) return fail(fmt::format("no CUDA target in '{}'", join(specs, " ")));
  out.devices = out.targets.capabilities();
  out.named = specs;
  out.described = join(described, " ");
  return out;
}

}  // namespace tailor::cuda
