#include "builder/reproducible_env.h"

#include "data/toml_document.h"

namespace tailor::builder {

namespace {

/// data/build/reproducible.toml: nvcc's fixed random seed and the first nvcc that takes it.
struct NvccRandomSeed {
  std::string flags;
  cuda::CudaVersion min_nvcc;
};

const NvccRandomSeed& nvcc_random_seed() {
  static const NvccRandomSeed seed = [] {
    auto doc = data::toml_document("build/reproducible.toml");
    NvccRandomSeed s;
    s.flags = doc.at_path("nvcc_random_seed.flags").string();
    auto min = cuda::parse_cuda_version(doc.at_path("nvcc_random_seed.min_nvcc").string());
    if (!min) doc.at_path("nvcc_random_seed.min_nvcc").fail("expected a CUDA version such as 12.9");
    s.min_nvcc = *min;
    return s;
  }();
  return seed;
}

}  // namespace

std::string nvcc_reproducible_flags(std::optional<cuda::CudaVersion> nvcc) {
  const auto& seed = nvcc_random_seed();
  if (!nvcc || *nvcc < seed.min_nvcc) return {};
  return seed.flags;
}

void add_reproducible_build_env(std::map<std::string, std::string>& env,
                                const std::map<std::string, std::string>& caller_env,
                                int64_t source_date_epoch, const std::string& source_dir,
                                bool nvcc_objtemp, std::optional<cuda::CudaVersion> nvcc) {
  // Appended to the plan's value, else to the caller's own (the build inherits it).
  auto append = [&](const std::string& name, const std::string& flags) {
    auto it = env.find(name);
    auto inherited = caller_env.find(name);
    std::string v = it != env.end()                 ? it->second
                    : inherited != caller_env.end() ? inherited->second
                                                    : "";
    if (v.find(flags) == std::string::npos) v += (v.empty() ? "" : " ") + flags;
    env[name] = v;
  };
  env["SOURCE_DATE_EPOCH"] = std::to_string(source_date_epoch);
  if (nvcc_objtemp) append("NVCC_APPEND_FLAGS", "-objtemp");
  if (auto seed = nvcc_reproducible_flags(nvcc); !seed.empty()) append("NVCC_APPEND_FLAGS", seed);
  // Flags are split at spaces: a folder with one cannot be mapped.
  if (source_dir.find_first_of(" \t\n'\"") != std::string::npos) return;
  const std::string prefix_map = "-ffile-prefix-map=" + source_dir + "=.";
  append("NVCC_APPEND_FLAGS", "-Xcompiler=" + prefix_map);
  append("CFLAGS", prefix_map);
  append("CXXFLAGS", prefix_map);
}

}  // namespace tailor::builder
