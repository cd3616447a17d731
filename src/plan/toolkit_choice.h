// Which CUDA toolkit a build uses, decided here once for both kinds of build. An extension
// build: the build's preflight, its report and the plan's environment (CUDA_HOME, PATH,
// CUDACXX) all take choose_toolkit's choice. A torch build (plan/torch_plan.cpp): the CUDA
// version asked for, else the newest installed one the release supports, and its toolkit.
#pragma once
#include <string>
#include <vector>

#include "cuda/cuda_version.h"
#include "probe/host_report.h"

namespace tailor::plan {

struct ToolkitChoice {
  const probe::CudaToolkit* toolkit = nullptr;  ///< into the host report; null: none found
  std::string note;                             ///< set when no toolkit matches torch's CUDA major
};

/// The newest toolkit whose major matches torch's CUDA (torch.utils.cpp_extension refuses
/// another major); without such a toolkit, or without torch, the newest one.
ToolkitChoice choose_toolkit(const probe::HostReport& host, const probe::PythonInstall* python);

/// The newest installed toolkit (by CUDA version; the first found among equals), only among
/// those whose CUDA version is in `among` when given (a torch release's CUDA versions);
/// null when none is.
const probe::CudaToolkit* newest_toolkit(const probe::HostReport& host,
                                         const std::vector<cuda::CudaVersion>* among = nullptr);

/// The installed toolkit of exactly this CUDA version (the first found); null when none is.
const probe::CudaToolkit* toolkit_of(const probe::HostReport& host, const cuda::CudaVersion& cuda);

/// The host's record of `python` (by path), else the first Python probed; null when none.
const probe::PythonInstall* choose_python(const probe::HostReport& host, const std::string& python);

}  // namespace tailor::plan
