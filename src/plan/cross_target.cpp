#include "plan/cross_target.h"

#include <fmt/format.h>

#include "data/toml_document.h"
#include "util/strings.h"

namespace tailor::plan {
namespace {

std::vector<CrossPlatform> load_platforms() {
  auto doc = data::toml_document("cross/platforms.toml");
  std::vector<CrossPlatform> out;
  for (const auto& [name, t] : doc.root().entries()) {
    CrossPlatform p;
    p.name = name;
    p.debian_arch = t["debian_arch"].string();
    p.triplet = t["triplet"].string();
    p.cc = t["cc"].string();
    p.cxx = t["cxx"].string();
    p.elf_machine = static_cast<int>(t["elf_machine"].integer());
    if (p.elf_machine <= 0 || p.elf_machine > 0xffff) t["elf_machine"].fail("expected 1 to 65535");
    p.python_platform = t["python_platform"].string();
    p.sysconfigdata = t["sysconfigdata"].string();
    auto minors = t["manylinux_glibc_minors"].array();
    if (minors.size() != 2 || minors[0].integer() > minors[1].integer())
      t["manylinux_glibc_minors"].fail("expected [first, last]");
    const std::string machine = p.triplet.substr(0, p.triplet.find('-'));
    for (int64_t m = minors[0].integer(); m <= minors[1].integer(); ++m)
      p.wheel_platforms.push_back(fmt::format("manylinux_2_{}_{}", m, machine));
    for (auto& w : t["wheel_platforms"].strings()) p.wheel_platforms.push_back(std::move(w));
    p.qemu = t["qemu"].strings();
    p.install = t["install"].string();
    p.nvcc_headers_from = t["nvcc_headers_from"].string();
    p.python_packages = t["python_packages"].strings();
    p.runtime_packages = t["runtime_packages"].strings();
    out.push_back(std::move(p));
  }
  return out;
}

const std::vector<CrossPlatform>& platforms() {
  static const std::vector<CrossPlatform> p = load_platforms();
  return p;
}

}  // namespace

const CrossPlatform* cross_platform(std::string_view name) {
  for (const auto& p : platforms())
    if (p.name == name) return &p;
  return nullptr;
}

std::vector<std::string> cross_platform_names() {
  std::vector<std::string> names;
  for (const auto& p : platforms()) names.push_back(p.name);
  return names;
}

std::map<std::string, std::string> cross_environment(const CrossTarget& target) {
  const CrossPlatform& p = *target.platform;
  std::map<std::string, std::string> env;
  env["CC"] = p.cc;
  env["CXX"] = p.cxx;
  // setuptools links a shared object with LDSHARED (the target's sysconfig data names the
  // C compiler; torch's extensions are C++).
  env["LDSHARED"] = p.cxx + " -shared";
  // The wheel's platform tag, and the target interpreter's EXT_SUFFIX, SOABI and include
  // folder from its own sysconfig data, read by the host interpreter that runs the build.
  env["_PYTHON_HOST_PLATFORM"] = p.python_platform;
  env["_PYTHON_SYSCONFIGDATA_NAME"] = p.sysconfigdata;
  env["PYTHONPATH"] = target.sysconfig_dir;
  // The build driver points torch.utils.cpp_extension at the target torch's headers and
  // libraries and at the target's CUDA runtime (driver/tailor_driver/cross.py).
  env["TAILOR_CROSS_TORCH"] = target.torch_dir;
  env["TAILOR_CROSS_CUDA_LIB"] = target.cuda_lib_dir;
  env["TAILOR_CROSS_PLATFORM"] = p.name;
  env["CMAKE_TOOLCHAIN_FILE"] = target.toolchain_file;
  // nvcc compiles the host side with -ccbin (torch passes $CC) and, for a cross compiler,
  // looks for targets/<platform>-linux; the host target's headers are the same text.
  env["NVCC_APPEND_FLAGS"] = "-target-dir " + p.nvcc_headers_from;
  return env;
}

std::string cmake_toolchain_file(const CrossTarget& target, const std::string& nvcc) {
  const CrossPlatform& p = *target.platform;
  const std::string machine = p.triplet.substr(0, p.triplet.find('-'));
  return fmt::format(
      "# tailor: cross build for {0} (written by tailor build --platform {0})\n"
      "set(CMAKE_SYSTEM_NAME Linux)\n"
      "set(CMAKE_SYSTEM_PROCESSOR {1})\n"
      "set(CMAKE_C_COMPILER {2})\n"
      "set(CMAKE_CXX_COMPILER {3})\n"
      "set(CMAKE_CUDA_COMPILER {4})\n"
      "set(CMAKE_CUDA_HOST_COMPILER {3})\n"
      "set(CMAKE_CUDA_FLAGS_INIT \"-target-dir {5}\")\n"
      "set(Python_INCLUDE_DIR {6})\n"
      "set(Python3_INCLUDE_DIR {6})\n"
      "set(Torch_DIR {7}/share/cmake/Torch)\n"
      "list(APPEND CMAKE_PREFIX_PATH {7}/share/cmake)\n"
      "list(APPEND CMAKE_LIBRARY_PATH {8})\n"
      "set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)\n",
      p.name, machine, p.cc, p.cxx, nvcc, p.nvcc_headers_from, target.include_dir, target.torch_dir,
      target.cuda_lib_dir);
}

}  // namespace tailor::plan
