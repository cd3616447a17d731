// Where an extension's source comes from (a folder, an sdist, NAME==VERSION from the
// package index, a git URL with a ref, or tailor's bundled example) and how it is brought
// into a work folder. The build always runs on a copy: the user's tree is never patched
// or littered with build/ folders, and the copy's path is stable per source so compiler
// caches hit on a rebuild.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/expected.h"
#include "util/process.h"

namespace tailor::source {

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

/// Where the package's Python compiles its C++/CUDA code when it is imported (a JIT
/// package): "encoding/lib/__init__.py:3", the first line of a .py file under `source_dir`
/// that takes `load` or `load_inline` from torch.utils.cpp_extension; "" when none does.
/// Looks at most at 20,000 entries and reads .py files of at most 1 MiB.
std::string jit_compile_site(const std::string& source_dir);

/// Whether a file name is an sdist's: .tar.gz, .tgz, .zip, .tar.bz2 or .tar.xz.
bool is_sdist_name(std::string_view file_name);

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
/// (with submodules), then refuses it when a link leaves the tree (check_source_links).
/// Commands go through `runner`; a failure quotes their stderr, on one line.
Expected<std::string> prepare_source(const SourceSpec& spec, const std::string& work_dir,
                                     const std::string& python, CommandRunner& runner);

/// Refuses a source tree holding a link whose target leaves it (absolute, or out through
/// `..`, as written or as resolved in the tree): the error names the member and its target.
/// Links inside the tree are kept. prepare_source checks every source it brings in.
/// Top-level names for which `skip_top` is true are not looked into (a folder copy's own
/// build/ from tailor's earlier run).
Expected<void> check_source_links(const std::string& root,
                                  const std::function<bool(const std::string&)>& skip_top = {});

/// Runs one command of a source's preparation or identity (tar, pip, git) and returns its
/// stdout; a failure quotes the command, how it ended and the last lines of its stderr.
/// The folder an sdist unpacks to, as prepare_source will name it (its single top-level
/// folder, read from the archive's listing; "" when it has several or none): for
/// --print-env, which shows the build without unpacking anything.
Expected<std::string> sdist_top_folder(const std::string& sdist, CommandRunner& runner);

Expected<std::string> run_source_command(CommandRunner& runner, std::vector<std::string> argv,
                                         std::optional<std::string> cwd,
                                         std::chrono::seconds timeout);

}  // namespace tailor::source
