#include "cli/torch_variant_flags.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "plan/matrix.h"
#include "probe/probe.h"
#include "util/strings.h"
#include "util/user_file.h"

namespace tailor::cli {

void add_torch_variant_flags(CLI::App& app, TorchVariantFlags& f) {
  app.add_option("--torch", f.torch, "PyTorch release to build (e.g. 2.9.1)");
  app.add_option("--source", f.source, "a local PyTorch source tree instead of a release tag");
  app.add_option("--git", f.git,
                 "clone the release tag from this repository instead of GitHub's (a mirror, "
                 "another remote, file:///PATH)");
  app.add_option("--cuda", f.cuda, "CUDA version (12.6, cu126)");
  app.add_flag("--cpu-only", f.cpu_only, "build without CUDA");
  app.add_option("--python", f.python, "Python version (3.10) or interpreter path");
  app.add_option("--arch", f.arch,
                 "GPU targets in any `tailor arch` spelling (7.5, sm_90, 8.0+PTX, Hopper); repeat "
                 "it for several");
  app.add_option(
      "--gpu", f.gpu,
      "build for these GPUs or instance types: each one's SASS (T4G, A10G, g5g.xlarge); a GPU or "
      "instance that exists on one platform only implies it; repeat it for several");
  app.add_option("--cpu-target", f.cpu_target,
                 "x86-64-v2|v3|v4 (avx2, avx512), armv8.2-a, armv9-a, neoverse-v1|v2");
  app.add_option("--blas", f.blas, "openblas or mkl");
  app.add_option("--with", f.with,
                 "turn a feature on (cudnn, nccl, distributed, mkldnn, fbgemm, kineto, xnnpack, "
                 "qnnpack, flash-attention, mem-eff-attention, magma, tests)");
  app.add_option("--without", f.without, "turn a feature off");
  app.add_flag("--system-libs", f.system_libs,
               "take every vendored library with a switch from the system (USE_SYSTEM_LIBS=ON, "
               "as Debian, nixpkgs and conda-forge build); a tree without a third_party/ folder "
               "takes that library from the system anyway");
  app.add_option("--build-type", f.build_type, "Release, RelWithDebInfo, Debug, MinSizeRel");
  app.add_flag("--keep-debug", f.keep_debug, "keep debug symbols (default: -g0)");
  app.add_option("--compress", f.compress, "fatbin compression: size, speed or none");
  app.add_option("--platform", f.platform,
                 "target platform: x86_64 or aarch64 (default: this host)");
  app.add_option("--manylinux", f.manylinux, "manylinux tag wanted, e.g. 2_28");
  app.add_option("--config", f.config, "a tailor.toml");
  app.add_option("--variant", f.variant, "the variant of --config to use");
  app.add_option("--work-dir", f.work_dir, "where source, venv and build go (default tailor-work)");
  app.add_option("--jobs", f.jobs,
                 "parallel compile jobs, MAX_JOBS (default: from usable memory and cores)");
}

Expected<bool> fill_version_from_source(plan::TorchVariant& v) {
  if (v.source_dir && !v.torch) {
    // PyTorch's version.txt says "2.9.1a0"; the release part selects the rules.
    // Read through the bounded reader: a FIFO or a device named version.txt must not hang.
    auto text =
        read_text_file((std::filesystem::path(*v.source_dir) / "version.txt").string(), 64 * 1024);
    if (!text)
      return make_error(*v.source_dir + ": no readable version.txt (" + text.error().message +
                        "; is this a PyTorch source tree?); name the release with --torch");
    std::string line = text->substr(0, text->find('\n'));
    std::string ver(trim(line));
    auto end = ver.find_first_not_of("0123456789.");
    ver = ver.substr(0, end);
    if (ver.empty())
      return make_error(*v.source_dir + "/version.txt: no version in '" + line + "'");
    v.torch = ver;
  }
  return true;
}

Expected<plan::TorchVariant> variant_from_flags(const TorchVariantFlags& f) {
  if (!f.arch.empty() && !f.gpu.empty()) return make_error("use --arch or --gpu, not both");
  if (f.jobs && *f.jobs < 1)
    return make_error(fmt::format("--jobs {}: must be at least 1", *f.jobs));
  plan::TorchVariant base;
  if (!f.config.empty()) {
    TAILOR_TRY(config, plan::load_tailor_config(f.config));
    if (!f.variant.empty()) {
      TAILOR_TRY(v, plan::find_config_variant(config, f.variant));
      base = v;
    } else {
      base = config.defaults;
    }
  } else if (!f.variant.empty()) {
    return make_error("--variant needs --config tailor.toml");
  }
  plan::TorchVariant top;
  if (!f.torch.empty()) top.torch = f.torch;
  if (!f.source.empty()) top.source_dir = f.source;
  if (!f.git.empty()) top.git_url = f.git;
  if (!f.git.empty() && !f.source.empty())
    return make_error(
        "use --source or --git, not both (--git names where the source is cloned from)");
  if (!f.cuda.empty()) {
    auto c = plan::parse_cuda_choice(f.cuda);
    if (!c) return make_error("--cuda: " + c.error().message);
    if (*c)
      top.cuda = **c;
    else
      top.cpu_only = true;
  }
  if (f.cpu_only) top.cpu_only = true;
  if (!f.python.empty() && f.python.find('/') == std::string::npos) top.python = f.python;
  top.arch = f.arch;
  top.gpu = f.gpu;
  if (!f.cpu_target.empty()) top.cpu_target = f.cpu_target;
  if (!f.blas.empty()) top.blas = f.blas;
  for (const auto& w : f.with) top.features[w] = true;
  for (const auto& w : f.without) top.features[w] = false;
  if (!f.build_type.empty()) top.build_type = f.build_type;
  if (f.keep_debug) top.keep_debug = true;
  if (!f.compress.empty()) top.compress = f.compress;
  if (!f.platform.empty()) top.platform = f.platform;
  if (!f.manylinux.empty()) top.manylinux = f.manylinux;
  if (f.system_libs) top.system_libs = true;
  plan::TorchVariant v = plan::overlay(base, top);
  TAILOR_TRY(filled, fill_version_from_source(v));
  (void)filled;
  return v;
}

plan::ResolveOptions resolve_options_from_flags(const TorchVariantFlags& f) {
  plan::ResolveOptions o;
  o.work_dir = f.work_dir;
  o.jobs = f.jobs;
  return o;
}

probe::HostReport probe_for_torch(const TorchVariantFlags& f, plan::TorchVariant& variant) {
  probe::ProbeOptions opts;
  opts.build_dir = std::filesystem::exists(f.work_dir) ? f.work_dir : ".";
  if (f.python.find('/') != std::string::npos) opts.pythons.push_back(f.python);
  probe::HostReport host = probe::probe_host(opts);
  if (f.python.empty()) {
    // No --python: the python3 first on PATH, as the shell runs it (a pyenv shim picks its
    // version by the folder), goes first, so the plan is for the interpreter `python3` is
    // here, not for the first of PATH's folders that holds a real one (/usr/bin/python3).
    SystemCommandRunner runner;
    CommandSpec where;
    where.argv = {"python3", "-c", "import sys; print(sys.executable)"};
    where.timeout = std::chrono::seconds(60);
    auto r = runner.run(where);
    std::string exe(trim(r.out));
    if (r.ok() && !exe.empty() && exe.front() == '/') {
      auto same = [&](const probe::PythonInstall& p) {
        std::error_code e1, e2;
        return std::filesystem::weakly_canonical(p.path, e1) ==
                   std::filesystem::weakly_canonical(exe, e2) &&
               !e1 && !e2;
      };
      auto it = std::find_if(host.pythons.begin(), host.pythons.end(), same);
      if (it != host.pythons.end()) {
        std::rotate(host.pythons.begin(), it, it + 1);
      } else if (auto probed = probe::probe_python(exe, runner, std::chrono::seconds(180))) {
        host.pythons.insert(host.pythons.begin(), *probed);
      }
    }
  }
  if (f.python.find('/') != std::string::npos) {
    // The probe deduplicates interpreters by realpath and may keep another spelling of
    // this one; ask it directly so the named interpreter is the one used.
    SystemCommandRunner runner;
    if (auto named = probe::probe_python(f.python, runner, std::chrono::seconds(180))) {
      named->path = f.python;
      host.pythons.insert(host.pythons.begin(), *named);
    }
    for (auto it = host.pythons.begin(); it != host.pythons.end(); ++it) {
      if (std::filesystem::weakly_canonical(it->path) ==
          std::filesystem::weakly_canonical(f.python)) {
        auto parts = split_any(it->version, ".");
        if (parts.size() >= 2) variant.python = parts[0] + "." + parts[1];
        // The named interpreter goes first so resolution picks it.
        std::rotate(host.pythons.begin(), it, it + 1);
        break;
      }
    }
  }
  return host;
}

}  // namespace tailor::cli
