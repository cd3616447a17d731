// The identity of a build's input: a prepared source (extension_source.h) or a tree on
// disk, named by a digest, with the SOURCE_DATE_EPOCH derived from it.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "source/extension_source.h"
#include "util/expected.h"
#include "util/process.h"

namespace tailor::source {

/// What a build's input is, for provenance and reproducible builds: a digest that names
/// the input and the SOURCE_DATE_EPOCH derived from it (the time every wheel member gets,
/// exported to the build so compilers and setuptools use it too).
struct SourceIdentity {
  std::string digest_kind;  ///< "sdist-sha256", "git-commit" or "tree-sha256"
  std::string digest;       ///< lowercase hex
  int64_t source_date_epoch = 0;
  std::string epoch_from;  ///< how the epoch was found, in words
};

/// SOURCE_DATE_EPOCH as the environment gives it: nullopt when unset or empty, an error
/// (bad input) when it is not a whole number of seconds.
Expected<std::optional<int64_t>> source_date_epoch_from_env(const char* value);

/// The identity of a prepared source (`prepared_src` from prepare_source). git: HEAD's
/// commit and its commit time; sdist (and an index download): the archive's sha256 and
/// the newest time among its members (the archive's content); a folder or the example: a
/// tree hash, and HEAD's commit time when the folder is a clean git checkout, else
/// 1980-01-01: never its files' modification times, which are a checkout's or a copy's. Both skip
/// VCS metadata and build leftovers (.git, build/, dist/, *.egg-info, __pycache__, *.pyc), so
/// running a package's tests in its own tree does not change them. `epoch_override`
/// (SOURCE_DATE_EPOCH from the caller's environment) wins over the derived time.
Expected<SourceIdentity> identify_source(const SourceSpec& spec, const std::string& prepared_src,
                                         const std::string& work_dir, CommandRunner& runner,
                                         std::optional<int64_t> epoch_override = std::nullopt);

/// The identity of a source tree on disk: a git checkout (a `.git` at its top) by HEAD's
/// commit and commit time, any other folder by its tree hash and 1980-01-01.
Expected<SourceIdentity> identify_tree(const std::string& dir, CommandRunner& runner,
                                       std::optional<int64_t> epoch_override = std::nullopt);

/// The tree hash of a folder: SHA-256 over the sorted list of its files (path, whether
/// executable, SHA-256 of the content) and symbolic links (path, target), skipping what
/// identify_source skips. Also gives the newest modification time among those entries.
struct TreeDigest {
  std::string sha256;
  int64_t newest_mtime = 0;
  uint64_t files = 0;
};
Expected<TreeDigest> digest_tree(const std::string& dir);

}  // namespace tailor::source
