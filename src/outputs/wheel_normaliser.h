// Rewrites a built wheel deterministically, so the same source built with the same plan
// gives the same bytes: members sorted by name with the .dist-info folder last and RECORD
// last of all, every member at SOURCE_DATE_EPOCH, permissions 0644 (0755 where the member
// was executable: libraries, scripts), deflate at one fixed level, no extra fields or
// comments (formats/zip_writer). RECORD is rebuilt from the bytes written (sha256
// urlsafe-base64, sizes, its own row last with no hash); the old RECORD is checked first,
// so a damaged wheel is refused rather than given a fresh, matching RECORD. Optionally
// adds `<name>.dist-info/tailor-provenance.json` and replaces WHEEL's Tag lines (the
// torch build's retag). Every ELF member's RUNPATH/RPATH keeps only the entries that name
// folders of the installed wheel (search_path_entry_stays; formats/elf_search_path does the
// edit in place, or says why it cannot, and then the wheel is refused). The output is written
// beside its destination and renamed into place.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cuda/cuda_version.h"
#include "formats/wheel.h"
#include "inspect/wheel_provenance.h"
#include "outputs/build_report.h"
#include "plan/extension_recipe.h"
#include "plan/torch_plan.h"
#include "probe/host_report.h"
#include "source/source_identity.h"
#include "util/expected.h"

namespace tailor::outputs {

using inspect::k_provenance_file;

/// A search path entry that stays in a published library: one relative to the library's own
/// folder ($ORIGIN, ${ORIGIN}), so it names a folder of the installed wheel. Every other
/// entry (absolute: the build machine's folders, /root/.pyenv/versions/3.11.7/lib from the
/// building Python's LDSHARED; relative: the working directory of the process) is removed.
bool search_path_entry_stays(std::string_view entry);

/// What the rewrite removed from one library's search path.
struct SearchPathRemoval {
  std::string member;                ///< "fused_ops/_C.so"
  std::string tag;                   ///< "RUNPATH" or "RPATH"
  std::vector<std::string> removed;  ///< the entries dropped
  std::string after;                 ///< what is left ("" when the entry went)
};

/// The torch a wheel that links torch is pinned to (inspect/torch_pin.h): the label goes into
/// the wheel's version (the file name, the .dist-info and .data folders, METADATA's Version),
/// the requirement replaces every torch Requires-Dist of METADATA.
struct TorchPinEdit {
  std::string label;        ///< "cu130torch2.11"
  std::string requirement;  ///< "torch==2.11.0"
};

struct WheelNormaliseOptions {
  int64_t source_date_epoch = 0;  ///< clamped to 1980-01-01 for the zip's DOS times
  std::string provenance_json;    ///< written into the dist-info when not empty
  std::string retag;   ///< "cp311-cp311-manylinux_2_35_x86_64": WHEEL's Tag lines become this one
  std::string output;  ///< empty: replace the input wheel (renamed when torch_pin relabels it)
  std::optional<TorchPinEdit> torch_pin;
};

struct NormalisedWheel {
  std::string path;                             ///< the written wheel
  std::string dist_info;                        ///< "fused_ops-0.1.0.dist-info"
  size_t members = 0;                           ///< RECORD included
  std::vector<SearchPathRemoval> search_paths;  ///< one per library whose search path changed
};

Expected<NormalisedWheel> normalise_wheel(const std::string& wheel,
                                          const WheelNormaliseOptions& options);

/// Whether a library of the wheel (an ELF member outside its .dist-info) needs one of the
/// libraries torch brings (libtorch*.so, libc10*.so: inspect's TorchLibraries), so the wheel
/// is bound to the torch it was built against.
Expected<bool> wheel_links_torch(const std::string& wheel);

using formats::record_field;

/// WHEEL's text with its Tag lines replaced by one `Tag: <tag>` where the first stood;
/// an error when `tag` is not python-abi-platform.
Expected<std::string> retag_wheel_file(const std::string& wheel_text, const std::string& tag);

/// The provenance of an extension build from its report (tool version, package, recipe,
/// targets, toolchain, environment), the identified source and the recipe (whose jobs and
/// nvcc-threads variables are left out of the wheel's copy).
BuildProvenance make_build_provenance(const BuildReport& report,
                                      const source::SourceIdentity& identity,
                                      const source::SourceSpec& spec,
                                      const plan::ExtensionRecipe& recipe);

/// The provenance of a PyTorch build: the plan's version, targets and variables (MAX_JOBS
/// and machine paths left out), the host's nvcc/compiler/python/ninja/cmake versions.
BuildProvenance make_torch_provenance(const plan::TorchPlan& plan, const probe::HostReport& host,
                                      const source::SourceIdentity& identity,
                                      const std::string& tool_version);

/// A git URL without user:password@ (provenance must not carry credentials).
std::string without_credentials(const std::string& url);

}  // namespace tailor::outputs
