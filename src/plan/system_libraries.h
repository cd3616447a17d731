// The system-libraries variant of a PyTorch build (how Debian, nixpkgs and conda-forge
// build it): the libraries PyTorch vendors under third_party/ that a build takes from the
// system instead, the switch that says so, and the packages that install them. The one
// loader of data/pytorch/system_libraries.toml.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace tailor::plan {

struct SystemLibrary {
  std::string name;    ///< "cpuinfo"
  std::string folder;  ///< "third_party/cpuinfo", the vendored copy
  /// "USE_SYSTEM_CPUINFO" set to `value`; empty: upstream's CMake has no switch (only a
  /// tree patched to find the system's copy builds without the folder).
  std::string switch_var, value = "ON";
  std::string feature;                     ///< only needed with this feature on; empty: always
  bool cuda = false;                       ///< only needed by a CUDA build
  std::vector<std::string> debian;         ///< the Debian/Ubuntu packages that install it
  std::vector<std::string> files;          ///< all present: installed
  std::map<std::string, std::string> env;  ///< more variables with the system's copy
  /// No system copy (debian empty): the variables a tree without the folder builds with.
  std::map<std::string, std::string> without;
  std::string since;  ///< first release with the switch; empty: all
};

const std::vector<SystemLibrary>& system_libraries();
/// The [[blas]] rows (folder empty): the BLAS a plan names, taken from the system.
const std::vector<SystemLibrary>& blas_libraries();

/// A library a plan takes from the system, and why ("--system-libs", "third_party/cpuinfo
/// is missing").
struct SystemLibraryUse {
  std::string name, folder, switch_var, value;
  std::vector<std::string> debian, files;
  std::string reason;
};

/// The vendored folders of `source_dir` that are missing or empty, for a tree that looks
/// like PyTorch's (it has cmake/Dependencies.cmake; anything else, a test fixture or a
/// folder that is not there, gives none). Reads the tree, writes nothing.
std::vector<std::string> missing_vendored_folders(const std::string& source_dir);

/// The libraries of `uses` whose files are not all on this machine (`exists` says whether a
/// path is there), and the one command that installs their packages.
struct MissingSystemLibraries {
  std::vector<SystemLibraryUse> missing;
  std::string install_command;  ///< "sudo apt-get install -y libcpuinfo-dev ..."; empty: none
};
MissingSystemLibraries missing_system_libraries(
    const std::vector<SystemLibraryUse>& uses,
    const std::function<bool(const std::string&)>& exists);

}  // namespace tailor::plan
