#include "plan/torch_variant.h"

#include <toml++/toml.h>

#include "util/strings.h"

namespace tailor::plan {

TorchVariant overlay(const TorchVariant& base, const TorchVariant& top) {
  TorchVariant v = base;
  if (!top.name.empty()) v.name = top.name;
  auto take = [](auto& dst, const auto& src) {
    if (src) dst = src;
  };
  take(v.torch, top.torch);
  take(v.source_dir, top.source_dir);
  take(v.git_url, top.git_url);
  take(v.cuda, top.cuda);
  take(v.cpu_only, top.cpu_only);
  take(v.python, top.python);
  if (!top.arch.empty() || !top.gpu.empty()) {
    v.arch = top.arch;
    v.gpu = top.gpu;
  }
  take(v.cpu_target, top.cpu_target);
  take(v.blas, top.blas);
  for (const auto& [k, on] : top.features) v.features[k] = on;
  take(v.build_type, top.build_type);
  take(v.keep_debug, top.keep_debug);
  take(v.compress, top.compress);
  take(v.platform, top.platform);
  take(v.manylinux, top.manylinux);
  take(v.system_libs, top.system_libs);
  // An explicit CUDA version and an explicit CPU-only contradict; the later layer wins.
  if (top.cuda && !top.cpu_only) v.cpu_only.reset();
  if (top.cpu_only && *top.cpu_only && !top.cuda) v.cuda.reset();
  return v;
}

Expected<std::optional<cuda::CudaVersion>> parse_cuda_choice(std::string_view text) {
  std::string t = to_lower(trim(text));
  if (t == "none" || t == "cpu" || t == "cpu-only") return std::optional<cuda::CudaVersion>{};
  auto v = cuda::parse_cuda_version(t);
  if (!v)
    return make_error("CUDA version '" + std::string(text) + "' is not like 12.6, cu126 or none");
  return std::optional<cuda::CudaVersion>(*v);
}

Expected<TorchVariant> variant_from_toml(const toml::table& table, std::string_view where) {
  TorchVariant v;
  std::string w(where);
  auto str = [&](std::string_view key, const toml::node& node) -> Expected<std::string> {
    if (auto s = node.value<std::string>()) return *s;
    // Versions are often written unquoted (python = 3.10 is a float in TOML: refuse it
    // with a hint rather than read 3.1).
    return make_error(w + "." + std::string(key) + ": must be a quoted string (e.g. \"3.10\")");
  };
  auto strs = [&](std::string_view key,
                  const toml::node& node) -> Expected<std::vector<std::string>> {
    std::vector<std::string> out;
    if (auto s = node.value<std::string>()) return std::vector<std::string>{*s};
    const toml::array* a = node.as_array();
    if (!a)
      return make_error(w + "." + std::string(key) + ": must be a string or a list of strings");
    for (const auto& e : *a) {
      auto s = e.value<std::string>();
      if (!s) return make_error(w + "." + std::string(key) + ": must be a list of strings");
      out.push_back(*s);
    }
    return out;
  };
  for (const auto& [key_node, node] : table) {
    std::string key(key_node.str());
    if (key == "torch") {
      TAILOR_TRY(s, str(key, node));
      v.torch = s;
    } else if (key == "source") {
      TAILOR_TRY(s, str(key, node));
      v.source_dir = s;
    } else if (key == "git") {
      TAILOR_TRY(s, str(key, node));
      v.git_url = s;
    } else if (key == "cuda") {
      TAILOR_TRY(s, str(key, node));
      auto c = parse_cuda_choice(s);
      if (!c) return make_error(w + ".cuda: " + c.error().message);
      if (*c)
        v.cuda = **c;
      else
        v.cpu_only = true;
    } else if (key == "cpu_only") {
      auto b = node.value<bool>();
      if (!b) return make_error(w + ".cpu_only: must be true or false");
      v.cpu_only = *b;
    } else if (key == "python") {
      TAILOR_TRY(s, str(key, node));
      v.python = s;
    } else if (key == "arch" || key == "gpu") {
      TAILOR_TRY(list, strs(key, node));
      v.arch = list;
    } else if (key == "cpu_target" || key == "cpu") {
      TAILOR_TRY(s, str(key, node));
      v.cpu_target = s;
    } else if (key == "blas") {
      TAILOR_TRY(s, str(key, node));
      v.blas = s;
    } else if (key == "with" || key == "without") {
      TAILOR_TRY(list, strs(key, node));
      for (const auto& f : list) v.features[f] = key == "with";
    } else if (key == "build_type") {
      TAILOR_TRY(s, str(key, node));
      v.build_type = s;
    } else if (key == "keep_debug") {
      auto b = node.value<bool>();
      if (!b) return make_error(w + ".keep_debug: must be true or false");
      v.keep_debug = *b;
    } else if (key == "compress") {
      TAILOR_TRY(s, str(key, node));
      v.compress = s;
    } else if (key == "platform") {
      TAILOR_TRY(s, str(key, node));
      v.platform = s;
    } else if (key == "system_libs") {
      auto b = node.value<bool>();
      if (!b) return make_error(w + ".system_libs: must be true or false");
      v.system_libs = *b;
    } else if (key == "manylinux") {
      TAILOR_TRY(s, str(key, node));
      v.manylinux = s;
    } else {
      return make_error(
          w + ": unknown key '" + key +
          "' (known: torch, source, git, cuda, cpu_only, python, arch, cpu_target, blas, "
          "with, without, build_type, keep_debug, compress, platform, manylinux, system_libs)");
    }
  }
  // "gpu = cpu" in a matrix row means a CPU-only variant.
  if (v.arch.size() == 1 && (to_lower(v.arch[0]) == "cpu" || to_lower(v.arch[0]) == "none")) {
    v.arch.clear();
    v.cpu_only = true;
  }
  return v;
}

}  // namespace tailor::plan
