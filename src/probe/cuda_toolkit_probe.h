// Which host compilers a CUDA toolkit's nvcc takes: the one rule, read from the limits the
// probe found in its include/crt/host_config.h. The probe's list of accepted compilers, an
// extension build's preflight and a torch plan's choice of g++ all ask it.
#pragma once
#include <optional>

#include "probe/host_report.h"

namespace tailor::probe {

/// The newest major of `kind` that `toolkit`'s nvcc takes (host_config.h's `__GNUC__` or
/// `__clang_major__` check); nullopt when it states none for that kind.
std::optional<int> host_compiler_max_major(const CudaToolkit& toolkit, CompilerKind kind);

/// Whether `toolkit`'s nvcc takes `compiler` as its host compiler: its major at most the
/// toolkit's limit for its kind. nullopt when that is unknown: no limit for the kind (no
/// host_config.h read, a compiler neither GCC nor clang) or no major read from the compiler.
std::optional<bool> toolkit_accepts_compiler(const CudaToolkit& toolkit, const Compiler& compiler);

}  // namespace tailor::probe
