// `tailor build --wheelhouse DIR|file:///DIR|http(s)://HOST/PATH|s3://BUCKET/PREFIX`: a wheel
// already published for this build's inputs, found, fetched and verified instead of compiling. The
// inputs are the package, the source digest, the targets, and the torch, CUDA (nvcc) and Python
// (major.minor: the ABI) the provenance records. The index is input like any other: its names are
// checked, its link must be the wheel's own place in the wheelhouse (no ../ out of it, no other
// host), its files are read with a size bound, and the fetched bytes must have the sha256 the index
// gives.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/expected.h"
#include "wheelhouse/wheelhouse_entry.h"
#include "wheelhouse/wheelhouse_store.h"

namespace tailor::wheelhouse {

struct BuildInputs {
  std::string package;
  std::string digest;                ///< the source's sha256 or commit, as the provenance has it
  std::vector<std::string> targets;  ///< "sm_90"
  std::string torch;                 ///< "2.11.0+cu130 (CUDA 13.0)", as the provenance has it
  std::string nvcc;                  ///< "13.0.88"
  std::string python;                ///< "3.12.3": compared as major.minor
  std::string recipe;                ///< the recipe the build resolved ("generic" for none)
  std::string profile;               ///< --profile, "" none: it changes the compiled kernels
};

/// Why the published wheel `entry` was not built from `inputs` ("targets sm_80 vs sm_90"),
/// or "" when it was. A foreign wheel never matches.
std::string input_mismatch(const WheelEntry& entry, const BuildInputs& inputs);
/// The same for a build `tailor stack` would run: the CUDA compiler is not compared (the
/// building machine's, which a stack does not know); everything else as input_mismatch. For
/// both, torch matches when it satisfies the wheel's pin (torch==2.11.0 takes 2.11.0+cu130 and
/// 2.11.0) and has the CUDA release the wheel's torch had.
std::string stack_input_mismatch(const WheelEntry& entry, const BuildInputs& inputs);

struct IndexLink {
  std::string file, url, sha256;
};

/// The files of a project's PEP 691 page (`where` names it). A link that is not relative to
/// the page, names a scheme or host, or has no sha256 is an error.
Expected<std::vector<IndexLink>> parse_project_index(std::string_view json,
                                                     const std::string& where);

struct FetchedWheel {
  std::string path;    ///< the copy in `dest_dir`
  std::string sha256;  ///< checked against the index
  std::string origin;  ///< "DIR/files/sm90/<wheel>"
};

/// The wheel of the wheelhouse `store` (wheelhouse_store.h: open_store) whose provenance
/// matches `inputs`, copied into `dest_dir` and checked against its index's sha256; nullopt when
/// none matches (`why_not` then says what came closest). Errors: a bad index, a sha256
/// mismatch.
Expected<std::optional<FetchedWheel>> fetch_matching_wheel(const WheelhouseStore& store,
                                                           const BuildInputs& inputs,
                                                           const std::string& dest_dir,
                                                           std::string& why_not);

}  // namespace tailor::wheelhouse
