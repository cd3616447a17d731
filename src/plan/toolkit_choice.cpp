#include "plan/toolkit_choice.h"

#include <fmt/format.h>

#include <algorithm>

namespace tailor::plan {

const probe::CudaToolkit* newest_toolkit(const probe::HostReport& host,
                                         const std::vector<cuda::CudaVersion>* among) {
  const probe::CudaToolkit* best = nullptr;
  for (const auto& tk : host.cuda_toolkits) {
    if (among && std::find(among->begin(), among->end(), tk.release) == among->end()) continue;
    if (!best || tk.release > best->release) best = &tk;
  }
  return best;
}

const probe::CudaToolkit* toolkit_of(const probe::HostReport& host, const cuda::CudaVersion& cuda) {
  for (const auto& tk : host.cuda_toolkits)
    if (tk.release == cuda) return &tk;
  return nullptr;
}

ToolkitChoice choose_toolkit(const probe::HostReport& host, const probe::PythonInstall* python) {
  ToolkitChoice choice;
  const probe::CudaToolkit* newest = newest_toolkit(host);
  if (!newest) return choice;
  // torch's CUDA as the probe read it; a CPU build has none.
  const std::optional<cuda::CudaVersion> want =
      python && python->torch ? python->torch->cuda_version : std::nullopt;
  if (want) {
    const probe::CudaToolkit* best = nullptr;
    for (const auto& t : host.cuda_toolkits)
      if (t.release.major == want->major && (!best || t.release > best->release)) best = &t;
    if (best) {
      choice.toolkit = best;
      return choice;
    }
    choice.note = fmt::format("no CUDA {}.x toolkit found for torch's CUDA {}; using CUDA {}",
                              want->major, want->to_string(), newest->version);
  }
  choice.toolkit = newest;
  return choice;
}

const probe::PythonInstall* choose_python(const probe::HostReport& host,
                                          const std::string& python) {
  for (const auto& p : host.pythons)
    if (p.path == python) return &p;
  return host.pythons.empty() ? nullptr : &host.pythons.front();
}

}  // namespace tailor::plan
