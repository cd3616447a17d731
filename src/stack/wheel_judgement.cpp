// stack's decisions over what pip resolved: torch's row from its wheel's CUDA build and the
// official arch lists, an NVIDIA runtime wheel's, and any other wheel's from its inspection
// (device code against the target's GPUs, CUDA majors, the C++ ABI against torch's).
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "cuda/arch_spec.h"
#include "cuda/compatibility.h"
#include "cuda/cuda_version.h"
#include "cuda/torch_wheels.h"
#include "formats/wheel.h"
#include "inspect/cuda_providers.h"
#include "inspect/verdicts.h"
#include "stack/stack_context.h"
#include "util/strings.h"
#include "util/version.h"

namespace fs = std::filesystem;

namespace tailor::stack {

namespace {

/// torch's CUDA as the data's and pip's text spell it ("13.0"), or "none".
std::string cuda_text(const std::optional<cuda::CudaVersion>& cuda) {
  return cuda ? cuda->to_string() : "none";
}

std::string targets_text(const std::vector<std::string>& targets) {
  return targets.empty() ? "no device code" : join(targets, " ");
}

std::string needs_text(const cuda::ComputeCapability& cc) {
  return fmt::format("sm_{} (or an older sm_{}x) or PTX <= {}", cc.number(), cc.major, cc.str());
}

/// The CUDA majors a library's CUDA runtime needs name ("12" for libcudart.so.12).
std::set<std::string> cuda_majors_of(const inspect::InspectedLibrary& lib) {
  std::set<std::string> out;
  for (const auto& n : lib.needed_libraries) {
    if (n.kind != inspect::NeededKind::cuda_runtime) continue;
    auto match = inspect::CudaProviders::get().match(n.soname);
    if (match)
      for (const auto* p : match->providers) out.insert(p->cuda);
  }
  return out;
}

/// The commands that say what a torch wheel runs on: download it for the target, inspect
/// it with the target's GPUs ("pip download ... URL && tailor inspect FILE --gpu 8.6").
std::string torch_deciding_command(const Target& target, const ResolvedDist& d) {
  auto name = formats::parse_wheel_filename(d.filename);
  std::string platform = name && !name->platform_tags.empty() ? name->platform_tags.front()
                                                              : "linux_" + target.platform;
  std::string gpu = target.gpu_text;
  if (gpu.empty()) {
    std::vector<std::string> ccs;
    for (const auto& cc : target.gpus) ccs.push_back(cc.str());
    gpu = join(ccs, ",");
  }
  return fmt::format(
      "pip download --no-deps --only-binary=:all: --platform {} --python-version {} -d . {} && "
      "tailor inspect {} --gpu {}",
      shell_quote(platform), shell_quote(target.python),
      shell_quote(d.url.empty() ? "torch==" + d.version : d.url), shell_quote(d.filename),
      shell_quote(gpu));
}

}  // namespace

void decide_runtime(Context& c, Row& row, const ResolvedDist& d) {
  row.kind = Kind::cuda_runtime;
  std::string major = cuda_runtime_major(d.key, d.version);
  row.reason = major.empty() ? "NVIDIA CUDA library" : fmt::format("NVIDIA CUDA {} library", major);
  const auto& torch_cuda = c.result.torch.cuda;
  if (!major.empty() && torch_cuda && std::to_string(torch_cuda->major) != major)
    c.result.notes.push_back(fmt::format("{} {} is a CUDA {} library next to torch's CUDA {}",
                                         d.name, d.version, major, torch_cuda->to_string()));
}

/// The reason a wheel cannot be used on the target (empty when it can), from its inspection.
/// A wheel may carry one library per CUDA major and load the one for torch's CUDA at run
/// time (bitsandbytes): libraries built for another CUDA major are set aside, and the rest
/// must run on every target GPU.
std::string judge_wheel(Context& c, Row& row, const inspect::WheelReport& wheel) {
  row.targets = wheel.target_names();
  bool device = !row.targets.empty();
  row.kind = device ? Kind::cuda : (wheel.libraries.empty() ? Kind::pure : Kind::native);
  const std::string torch_cuda =
      c.result.torch.cuda ? std::to_string(c.result.torch.cuda->major) : "";
  inspect::WheelReport usable = wheel;
  usable.libraries.clear();
  std::set<std::string> other_majors;
  size_t cuda_linked = 0;
  for (const auto& lib : wheel.libraries) {
    auto majors = cuda_majors_of(lib);
    if (!majors.empty()) ++cuda_linked;
    if (!torch_cuda.empty() && !majors.empty() && !majors.count(torch_cuda)) {
      other_majors.insert(majors.begin(), majors.end());
      continue;
    }
    usable.libraries.push_back(lib);
  }
  std::vector<std::string> problems;
  if (cuda_linked > 0 && !other_majors.empty() &&
      std::none_of(usable.libraries.begin(), usable.libraries.end(),
                   [](const auto& l) { return !l.targets.empty() || !cuda_majors_of(l).empty(); }))
    problems.push_back(
        fmt::format("its libraries are for CUDA {}; torch uses CUDA {}",
                    join(std::vector<std::string>(other_majors.begin(), other_majors.end()), ", "),
                    cuda_text(c.result.torch.cuda)));
  // Does every (usable) library with device code, and every folder of device code files,
  // run on every target GPU?
  std::set<cuda::FatbinCode> usable_codes;  // canonical order (cuda::FatbinCode's)
  for (const auto& l : usable.libraries)
    for (const auto& t : l.targets) usable_codes.insert(t.code);
  // Cubins, PTX and fatbin files the package loads itself count like library code.
  for (const auto& f : usable.device_files)
    for (const auto& t : f.targets) usable_codes.insert(t.code);
  if (device && problems.empty() && !usable_codes.empty()) {
    inspect::InspectReport report;
    report.wheels.push_back(usable);
    inspect::VerdictTargets gpus;
    gpus.devices = c.target.gpus;
    auto verdicts = inspect::evaluate(report, gpus);
    row.covers = "yes";
    if (verdicts) {
      for (const auto& v : verdicts->items) {
        if (v.pass) continue;
        row.covers = "no";
        std::string lib = v.library.substr(
            v.library.find('!') == std::string::npos ? 0 : v.library.find('!') + 1);
        std::vector<std::string> has;
        for (const auto& l : usable.libraries)
          if (l.path == lib || wheel.path + "!" + l.path == v.library)
            for (const auto& t : l.targets) has.push_back(t.name);
        for (const auto& f : inspect::device_folders(usable.device_files))
          if (inspect::device_folder_label(f) == lib)
            for (const auto& t : f.targets) has.push_back(t.name);
        // A library by its file name; a folder of device code files by its path ("pkg/cubins/").
        const std::string who = lib.ends_with('/') ? lib : fs::path(lib).filename().string();
        problems.push_back(fmt::format("{} has {}; {} needs {}", who, targets_text(has),
                                       v.device.str(), needs_text(v.device)));
        break;
      }
    }
  } else if (device && !problems.empty()) {
    row.covers = "no";
  }
  // The C++ ABI of a library that links torch must be torch's.
  for (const auto& lib : usable.libraries) {
    bool links_torch = std::any_of(
        lib.needed_libraries.begin(), lib.needed_libraries.end(),
        [](const inspect::NeededLibrary& n) { return n.kind == inspect::NeededKind::torch; });
    if (links_torch && lib.cxx11_abi && c.result.torch.cxx11_abi &&
        *lib.cxx11_abi != *c.result.torch.cxx11_abi) {
      problems.push_back(fmt::format("{} uses the {} C++ ABI; torch {} uses the {}",
                                     fs::path(lib.path).filename().string(),
                                     *lib.cxx11_abi ? "C++11" : "old", c.result.torch.version,
                                     *c.result.torch.cxx11_abi ? "C++11" : "old"));
      break;
    }
  }
  if (!problems.empty()) return join(problems, "; ");
  if (device) {
    std::vector<std::string> usable_targets;
    for (const auto& code : usable_codes) usable_targets.push_back(code.name());
    row.reason = fmt::format("has {}; runs on {}", join(usable_targets, " "), c.target.gpu_label());
    if (!other_majors.empty())
      row.reason += fmt::format(
          " (with CUDA {}; also carries builds for CUDA {})", cuda_text(c.result.torch.cuda),
          join(std::vector<std::string>(other_majors.begin(), other_majors.end()), ", "));
  } else {
    row.reason = row.kind == Kind::native ? "native code, no CUDA device code" : "pure Python";
  }
  return "";
}

/// The `tailor build torch` that builds the stack's own torch (version, Python, platform,
/// CUDA, GPUs), runnable as printed; `tailor plan` with the same flags shows it first.
std::string torch_build_command(const Target& target, const std::string& version,
                                const std::optional<cuda::CudaVersion>& cuda) {
  std::string gpus;
  if (!target.gpu_text.empty())
    gpus = " --gpu " + shell_quote(target.gpu_text);
  else
    for (const auto& cc : target.gpus) gpus += " --gpu " + shell_quote(cc.str());
  // The release, not the wheel's local label: "2.11.0+cu130" is 2.11.0 for CUDA 13.0, and
  // --cuda carries the CUDA.
  const std::string release = version.substr(0, version.find('+'));
  return fmt::format("tailor build torch --torch {} --python {} --platform {}{}{}",
                     shell_quote(release), shell_quote(target.python), shell_quote(target.platform),
                     cuda ? " --cuda " + shell_quote(cuda->to_string()) : "", gpus);
}

TorchCudaStated torch_cuda_from_metadata(const ResolvedDist& torch,
                                         const std::vector<ResolvedDist>& all) {
  std::map<std::string, const ResolvedDist*> resolved;
  for (const auto& o : all) resolved[o.key] = &o;
  TorchCudaStated out;
  // Only what pip resolved for the target counts: the requirement's markers held there.
  for (const auto& r : torch.requires_dist) {
    auto it = resolved.find(requirement_name(r));
    if (it == resolved.end()) continue;
    const ResolvedDist& dep = *it->second;
    // The CUDA runtime, or NVIDIA's toolkit metapackage, carries the CUDA release itself.
    if (dep.key.starts_with("nvidia-cuda-runtime") || dep.key == "cuda-toolkit")
      if (auto v = cuda::parse_cuda_version(dep.version)) {
        out.release = cuda::CudaVersion{v->major, v->minor};
        out.from = dep.key + " " + dep.version;
        return out;
      }
    // Another NVIDIA library names its CUDA major only ("nvidia-cudnn-cu13").
    auto cu = dep.key.rfind("-cu");
    if (!out.major_only && dep.key.starts_with("nvidia-") && cu != std::string::npos)
      if (auto major = parse_whole_number<int>(dep.key.substr(cu + 3))) {
        out.major_only = *major;
        out.from = dep.key + " " + dep.version;
      }
  }
  return out;
}

namespace {
std::string stated_by(const ResolvedDist& torch, const std::vector<ResolvedDist>& all) {
  return torch_cuda_from_metadata(torch, all).from;
}
}  // namespace

void decide_torch(const Target& target, const std::optional<cuda::CudaVersion>& asked_cuda,
                  const ResolvedDist& d, const std::vector<ResolvedDist>& all, Row& row,
                  TorchChoice& choice) {
  row.kind = Kind::torch;
  auto name = formats::parse_wheel_filename(d.filename);
  // The wheel's label ("cu130"), else what its METADATA requires (torch_cuda_from_metadata).
  std::optional<cuda::CudaVersion> release;
  if (name)
    if (auto v = cuda::parse_cuda_version(name->local_label)) release = *v;
  std::optional<int> major_only;
  if (!release) {
    auto stated = torch_cuda_from_metadata(d, all);
    release = stated.release;
    major_only = stated.major_only;
  }
  if (!release && major_only) {
    choice.version = d.version;
    choice.source = "resolved";
    row.covers = "?";
    row.outcome = Outcome::unknown;
    row.reason = fmt::format(
        "a CUDA {} build (its METADATA requires {}), of a CUDA release it does not state: whether "
        "it runs on {} is unknown: decide it with `{}`, or install it and run tailor stack with "
        "--torch PYTHON",
        *major_only, stated_by(d, all), target.gpu_label(), torch_deciding_command(target, d));
    return;
  }
  const std::string cuda = release ? release->to_string() : "";
  choice.version = d.version;
  choice.cuda = release;
  choice.source = "resolved";
  choice.cxx11_abi = compare_versions(d.version, facts().torch_cxx11_abi_since) >= 0
                         ? std::optional<bool>(true)
                         : std::nullopt;
  if (cuda.empty()) {
    row.covers = "no";
    row.outcome = Outcome::build;
    row.buildable = "yes";
    row.recipe = "tailor build torch";
    row.reason = fmt::format(
        "torch {} for {} from this index is a CPU-only build; `{}` builds one for {}", d.version,
        target.platform, torch_build_command(target, d.version, asked_cuda), target.gpu_label());
    return;
  }
  if (asked_cuda && *asked_cuda != *release) {
    row.covers = "-";
    row.outcome = Outcome::unsupported;
    row.reason = fmt::format(
        "torch {} is a CUDA {} build; --cuda {} asked for another (no such torch on these indexes)",
        d.version, cuda, asked_cuda->to_string());
    return;
  }
  std::string list;
  for (const auto& w : cuda::official_torch_arch_lists())
    if (w.cuda == *release && w.platform == target.platform) list = w.torch_cuda_arch_list;
  choice.arch_list = list;
  if (list.empty()) {
    // Nothing says what it carries: unknown, never prebuilt, with what decides it.
    row.covers = "?";
    row.outcome = Outcome::unknown;
    row.reason = fmt::format(
        "CUDA {} build; its arch list for {} is not in tailor's data, so whether it runs on {} is "
        "unknown: "
        "decide it with `{}`, or install it and run tailor stack with --torch PYTHON",
        cuda, target.platform, target.gpu_label(), torch_deciding_command(target, d));
    return;
  }
  auto set = cuda::parse_arch_spec(list);
  std::vector<std::string> missing;
  if (set)
    for (const auto& cc : target.gpus)
      if (cuda::coverage_on(*set, cc).mode == cuda::RunMode::none) missing.push_back(cc.str());
  for (const auto& t : set ? set->targets : std::vector<cuda::CudaTarget>{})
    row.targets.push_back(t.name());
  if (missing.empty()) {
    row.covers = "yes";
    row.reason = fmt::format("CUDA {} build for {}: {}", cuda, target.platform, list);
    return;
  }
  row.covers = "no";
  row.outcome = Outcome::build;
  row.buildable = "yes";
  row.recipe = "tailor build torch";
  row.reason = fmt::format(
      "official CUDA {} wheels for {} carry {}; {} is not among them: `{}` builds one", cuda,
      target.platform, list, join(missing, ", "), torch_build_command(target, d.version, release));
}

}  // namespace tailor::stack
