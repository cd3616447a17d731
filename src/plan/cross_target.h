// Cross builds: an extension built on a host of one architecture for another (`tailor build
// --platform aarch64` on x86_64). The platforms' facts (data/cross/platforms.toml, this
// file's loader) and the target a build is steered to: the folder tailor's cache holds for
// one platform, Python and torch (workflow/cross_prepare fills it).
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace tailor::plan {

/// One platform tailor cross-builds for, as data/cross/platforms.toml describes it.
struct CrossPlatform {
  std::string name;             ///< "aarch64": the --platform value and the wheel's machine
  std::string debian_arch;      ///< "arm64"
  std::string triplet;          ///< "aarch64-linux-gnu"
  std::string cc, cxx;          ///< the cross compilers, by name (found on PATH)
  int elf_machine = 0;          ///< e_machine of the platform's code
  std::string python_platform;  ///< _PYTHON_HOST_PLATFORM: "linux-aarch64"
  std::string sysconfigdata;    ///< the target interpreter's sysconfig data module
  std::vector<std::string> wheel_platforms;  ///< pip --platform values, manylinux ones first
  std::vector<std::string> qemu;             ///< qemu-user's names, preferred first
  std::string install;                       ///< the one command that installs the toolchain
  std::string nvcc_headers_from;             ///< the toolkit target folder nvcc takes headers from
  std::vector<std::string> python_packages;  ///< Debian packages, {py} = major.minor
  std::vector<std::string> runtime_packages;
};

/// The platform named `name`, or nullptr; every platform's name, for an error line.
const CrossPlatform* cross_platform(std::string_view name);
std::vector<std::string> cross_platform_names();

/// A prepared target: what a build for `platform` reads instead of the host's.
struct CrossTarget {
  const CrossPlatform* platform = nullptr;
  std::string root;            ///< the cache folder of this platform, Python and torch
  std::string python_version;  ///< major.minor of the target interpreter (the host's)
  std::string torch_version;   ///< the target torch's version ("2.11.0")
  std::string torch_cuda;      ///< its CUDA release ("13.0")
  std::string sysconfig_dir;   ///< the target's sysconfig data, its paths inside `root`
  std::string include_dir;     ///< the target Python's headers (pyconfig.h of the platform)
  std::string torch_dir;       ///< the target torch's package folder
  std::string cuda_lib_dir;    ///< linker names of the target's CUDA runtime
  std::string toolchain_file;  ///< CMake's, for packages that configure with CMake
  std::string site_dir;        ///< torch and its dependencies, for the import test
  std::string sysroot;         ///< Debian's packages unpacked: the interpreter and its libraries
  std::string python;          ///< the target interpreter inside `sysroot`
};

/// The variables that steer a package's own build to cross-compile for `target`: the cross
/// compilers, the linker for shared objects, the target's sysconfig data and platform tag,
/// the target torch and CUDA runtime for the build driver, CMake's toolchain file, and
/// nvcc's header folder. CC and CXX are the cross compilers (a compiler cache wraps them
/// as it wraps the host's).
std::map<std::string, std::string> cross_environment(const CrossTarget& target);

/// CMake's toolchain file for `target` (its text).
std::string cmake_toolchain_file(const CrossTarget& target, const std::string& nvcc);

}  // namespace tailor::plan
