#include "workflow/torch_build.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

#include "builder/step_list.h"
#include "plan/torch_catalog.h"
#include "plan/torch_plan_render.h"
#include "util/interrupt.h"
#include "util/strings.h"
#include "workflow/torch_steps.h"

namespace tailor::workflow {

std::vector<std::string> runtime_packages_for(const std::vector<std::string>& needed,
                                              const std::optional<cuda::CudaVersion>& cuda) {
  std::vector<std::string> out;
  const plan::TorchCatalog* cat = &plan::torch_catalog();
  std::string M = cuda ? std::to_string(cuda->major) : "",
              m = cuda ? std::to_string(cuda->minor) : "";
  for (const auto& so : needed)
    for (const auto& lib : cat->runtime_libraries) {
      if (so.rfind(lib.soname, 0) != 0) continue;
      if (lib.apt.find("{M}") != std::string::npos && !cuda) continue;
      std::string pkg = lib.apt;
      for (auto [key, value] : {std::pair<std::string, std::string>{"{M}", M}, {"{m}", m}})
        for (size_t pos; (pos = pkg.find(key)) != std::string::npos;)
          pkg.replace(pos, key.size(), value);
      if (std::find(out.begin(), out.end(), pkg) == out.end()) out.push_back(pkg);
    }
  return out;
}

std::string render_runtime_dockerfile(const plan::TorchPlan& p, const std::string& wheel,
                                      const std::vector<std::string>& packages) {
  const plan::TorchCatalog* cat = &plan::torch_catalog();
  const plan::DistroImage* d = plan::builder_distro(p, *cat);
  if (!d) return "";
  std::string repo_arch =
      cat->repo_arch.count(p.platform) ? cat->repo_arch.at(p.platform) : p.platform;
  std::string py = "python" + p.python_version;
  std::string o;
  o += fmt::format("# Runtime image for {} (written by `tailor build torch`).\n", wheel);
  o += fmt::format(
      "# Base {} (glibc {}), the build's own glibc. System packages: exactly the libraries the\n",
      d->name, d->glibc);
  o += "# wheel's libraries list as DT_NEEDED that are not inside it.\n";
  o += fmt::format("FROM {}\n", d->package_manager == "apt" ? d->runtime_image : d->cpu_image);
  if (d->package_manager == "apt") {
    o += "ARG DEBIAN_FRONTEND=noninteractive\n";
    o += fmt::format(
        "RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates wget {0} "
        "{0}-venv",
        py);
    if (p.python_version != d->default_python) o += " software-properties-common";
    o += " && \\\n";
    if (!packages.empty() && p.cuda) {
      o += fmt::format(
          "    wget -q "
          "https://developer.download.nvidia.com/compute/cuda/repos/{}/{}/"
          "cuda-keyring_1.1-1_all.deb && \\\n",
          d->nvidia_repo, repo_arch);
      o += "    dpkg -i cuda-keyring_1.1-1_all.deb && rm cuda-keyring_1.1-1_all.deb && apt-get "
           "update && \\\n";
    }
    if (!packages.empty())
      o += fmt::format("    apt-get install -y --no-install-recommends {} && \\\n",
                       join(packages, " "));
    o += "    rm -rf /var/lib/apt/lists/* && ldconfig\n";
  } else {
    o += fmt::format("RUN dnf install -y {} {}", py, join(packages, " "));
    o += " && dnf clean all\n";
  }
  if (p.cuda) o += "ENV LD_LIBRARY_PATH=/usr/local/cuda/lib64\n";
  o += fmt::format("COPY {} /tmp/\n", wheel);
  o += fmt::format("RUN {} -m venv /opt/venv && /opt/venv/bin/pip install /tmp/{} && rm /tmp/{}\n",
                   py, wheel, wheel);
  o += "ENV PATH=/opt/venv/bin:$PATH\n";
  o += "CMD [\"python\", \"-c\", \"import torch; print(torch.__version__, "
       "torch.cuda.is_available(), torch.cuda.get_arch_list())\"]\n";
  return o;
}

TorchBuildResult build_torch(const TorchBuildOptions& o, TorchBuildContext& ctx,
                             TorchBuildState& s) {
  TorchStepResult stopped = builder::run_step_list(
      torch_build_steps(), [&](const TorchStep& step) { return step.run(o, ctx, s); },
      [](const TorchStep&) {}, StepStop{BuildStatus::build_failed, "interrupted"});
  if (!stopped) return std::move(s.result);
  // A step a signal cut short failed because of it: the CLI says "interrupted", and no
  // error line of the step's own comes before that.
  const int code = builder::exit_code_of(stopped->status);
  if (code != 0 && interrupt_signal() != 0)
    stopped->message = "interrupted";
  else if (code != 0)
    std::fprintf(ctx.err, "tailor: error: %s\n", stopped->message.c_str());
  s.result.exit_code = code;
  s.result.message = std::move(stopped->message);
  return std::move(s.result);
}

TorchBuildResult build_torch(const plan::TorchVariant& variant, const probe::HostReport& host,
                             const plan::ResolveOptions& resolve,
                             const TorchBuildOptions& options) {
  SystemCommandRunner runner;
  TorchBuildContext ctx = TorchBuildContext::system(runner);
  TorchBuildState s;
  s.variant = variant;
  s.host = host;
  s.resolve = resolve;
  return build_torch(options, ctx, s);
}

}  // namespace tailor::workflow
