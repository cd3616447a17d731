#include "plan/toolkit_choice.h"

#include <algorithm>
#include <fmt/format.h>

#include "util/version.h"

namespace tailor::plan {

ToolkitChoice choose_toolkit(const probe::HostReport& host, const probe::PythonInstall* python) {
  ToolkitChoice choice;
  if (host.cuda_toolkits.empty()) return choice;
  auto newest = std::max_element(host.cuda_toolkits.begin(), host.cuda_toolkits.end(),
                                 [](const auto& a, const auto& b) {
                                   return std::pair(a.major, a.minor) < std::pair(b.major, b.minor);
                                 });
  if (python && python->torch && !python->torch->cuda_version.empty()) {
    const std::string& want = python->torch->cuda_version;
    int major = version_major(want).value_or(0);
    const probe::CudaToolkit* best = nullptr;
    for (const auto& t : host.cuda_toolkits)
      if (t.major == major && (!best || t.minor > best->minor)) best = &t;
    if (best) {
      choice.toolkit = best;
      return choice;
    }
    choice.note = fmt::format("no CUDA {}.x toolkit found for torch's CUDA {}; using CUDA {}", major, want,
                              newest->version);
  }
  choice.toolkit = &*newest;
  return choice;
}

const probe::PythonInstall* choose_python(const probe::HostReport& host, const std::string& python) {
  for (const auto& p : host.pythons)
    if (p.path == python) return &p;
  return host.pythons.empty() ? nullptr : &host.pythons.front();
}

}  // namespace tailor::plan
