// Which CUDA toolkit an extension build uses. Decided here once; the build's preflight,
// its report and the plan's environment (CUDA_HOME, PATH, CUDACXX) all take this choice.
#pragma once
#include <string>

#include "probe/host_report.h"

namespace tailor::plan {

struct ToolkitChoice {
  const probe::CudaToolkit* toolkit = nullptr;  ///< into the host report; null: none found
  std::string note;  ///< set when no toolkit matches torch's CUDA major
};

/// The newest toolkit whose major matches torch's CUDA (torch.utils.cpp_extension refuses
/// another major); without such a toolkit, or without torch, the newest one.
ToolkitChoice choose_toolkit(const probe::HostReport& host, const probe::PythonInstall* python);

/// The host's record of `python` (by path), else the first Python probed; null when none.
const probe::PythonInstall* choose_python(const probe::HostReport& host, const std::string& python);

}  // namespace tailor::plan
