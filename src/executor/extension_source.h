// Where an extension's source comes from (a folder, an sdist, NAME==VERSION from the
// package index, a git URL with a ref, or tailor's bundled example) and how it is brought
// into a work folder. The build always runs on a copy: the user's tree is never patched
// or littered with build/ folders, and the copy's path is stable per source so compiler
// caches hit on a rebuild.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "util/expected.h"
#include "util/process.h"

namespace tailor::executor {

enum class SourceKind { example, directory, sdist, index, git };
std::string_view source_kind_name(SourceKind kind);  // "example", "directory", ...

struct SourceSpec {
  SourceKind kind = SourceKind::directory;
  std::string text;      ///< as given on the command line
  std::string path;      ///< directory / sdist / example folder (absolute)
  std::string name;      ///< index: NAME; otherwise a name guessed from the spec (may be empty)
  std::string version;   ///< index: VERSION
  std::string url, ref;  ///< git
};

/// Classifies a SOURCE argument. `example_dir` is used when `text` is empty (the
/// bundled example found by find_bundled_example). Errors are bad input.
Expected<SourceSpec> classify_source(std::string_view text, const std::string& example_dir);

/// Walks up from `start` to tailor's repository root and returns its examples/fused_ops
/// folder; empty when `start` is not inside tailor's repository.
std::string find_bundled_example(const std::string& start);

/// The distribution name a source tree declares: PKG-INFO, pyproject.toml [project],
/// setup.cfg [metadata], or a literal name= in setup.py; empty when none says.
std::string detect_package_name(const std::string& source_dir);

/// The first CUDA source (.cu, .cuh) of a source tree, relative to it; empty when it has
/// none (a CPU extension: torch-householder 1.0.1's one .cpp). Build, dist and hidden
/// folders are not the package's own; bounded: 20,000 entries looked at.
std::string first_cuda_source(const std::string& source_dir);

/// Parses `git+https://host/x/y.git@ref` / `https://host/x/y@ref` into url and ref.
bool split_git_url(std::string_view text, std::string& url, std::string& ref);

/// A stable work folder for this source under `root`: `<root>/<name>-<hash of spec>`.
std::string work_dir_for(const SourceSpec& spec, const std::string& root);
/// The same folder for every checkout, sdist or index copy of one package:
/// root/<name>, so paths inside compiles (and cache keys) match across them. Builds of
/// two checkouts share it one after the other (the work-folder lock).
std::string stable_work_dir_for(const SourceSpec& spec, const std::string& root);
/// ${XDG_CACHE_HOME:-$HOME/.cache}/tailor/extensions (or /tmp/tailor-extensions).
std::string default_work_root();

/// Brings the source into `<work_dir>/src` (replacing an older copy) and returns that
/// folder: copies a directory (without build/, dist/, *.egg-info), unpacks an sdist,
/// `pip download`s NAME==VERSION as an sdist then unpacks it, or clones git at the ref
/// (with submodules). Commands go through `runner`; a failure quotes their stderr.
Expected<std::string> prepare_source(const SourceSpec& spec, const std::string& work_dir,
                                     const std::string& python, CommandRunner& runner);

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
/// the newest time among its members; a folder or the example: a tree hash and the newest
/// modification time among its files. Both skip VCS metadata and build leftovers (.git,
/// build/, dist/, *.egg-info, __pycache__, *.pyc), so running a package's tests in its
/// own tree does not change them. `epoch_override` (SOURCE_DATE_EPOCH from the caller's
/// environment) wins over the derived time.
Expected<SourceIdentity> identify_source(const SourceSpec& spec, const std::string& prepared_src,
                                         const std::string& work_dir, CommandRunner& runner,
                                         std::optional<int64_t> epoch_override = std::nullopt);

/// The identity of a source tree on disk: a git checkout (a `.git` at its top) by HEAD's
/// commit and commit time, any other folder by its tree hash and newest file time.
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

}  // namespace tailor::executor
