// The command that installs a published wheel as it was built: from the wheelhouse's index of
// its target set, with the torch it pins from PyTorch's index of that torch's CUDA, the rest
// from the default index (data/wheelhouse/install.toml says why in that order).
#pragma once
#include <string>

#include "wheelhouse/wheelhouse_entry.h"

namespace tailor::wheelhouse {

/// "pip install --index-url https://pypi.org/simple --extra-index-url
/// file:///srv/house/sm90/simple --extra-index-url https://download.pytorch.org/whl/cu130
/// 'fused-ops==0.1.0+cu130torch2.11'": `wheelhouse_url` is where the wheelhouse is read
/// (file:///srv/house, https://host/bucket/prefix); `torch_pin` the torch version the wheel's
/// METADATA pins ("" when it pins none: no PyTorch index); the CUDA of that torch comes from
/// the provenance's toolchain ("2.11.0+cu130 (CUDA 13.0)"; none: PyTorch's CPU index).
std::string install_command(const WheelEntry& entry, const std::string& wheelhouse_url,
                            const std::string& torch_pin);

}  // namespace tailor::wheelhouse
