// A build matrix as Nix: a flake (`tailor matrix --emit nix`) or a Flox environment's Nix
// expression builds (`--emit flox`), one package per variant overriding nixpkgs' own
// python3XPackages.torch with what the variant's plan decided (CUDA, gpuTargets, CPU flags,
// BLAS, USE_* switches, the torch version as a check), and the same variants of the
// extension packages nixpkgs has, built against the variant's torch. nixpkgs' names are in
// data/nix/nixpkgs.toml, read by nixpkgs_facts() only. Pure: returns the files' contents.
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "plan/matrix.h"
#include "plan/torch_plan.h"
#include "util/expected.h"

namespace tailor::plan {

/// A nixpkgs revision and the torch it builds (data/nix/nixpkgs.toml [[revision]]).
struct NixpkgsRevision {
  std::string rev;               ///< 40 hex digits
  std::string torch;             ///< "2.9.1"
  std::vector<int> cuda_majors;  ///< the CUDA majors its torch accepts; empty: not read
};

struct NixpkgsFacts {
  std::string owner, repo;                          ///< "NixOS", "nixpkgs": the input's repository
  std::vector<NixpkgsRevision> revisions;           ///< newest first
  std::string python_packages;                      ///< "python{major}{minor}Packages"
  std::string torch_attribute;                      ///< "torch"
  std::string cuda_packages_arg;                    ///< torch's argument: "cudaPackages"
  std::string cuda_packages;                        ///< "cudaPackages_{major}_{minor}"
  std::string magma_arg;                            ///< torch's argument: "effectiveMagma"
  std::string cuda_magma;                           ///< "magma-cuda-static"
  std::map<std::string, std::string> feature_args;  ///< plan feature -> torch argument
  std::vector<std::string> host_only_env;           ///< plan env keys not emitted
  std::map<std::string, std::string> blas;          ///< plan BLAS -> nixpkgs attribute
  std::map<std::string, std::string> systems;       ///< plan platform -> Nix system
  std::map<std::string, std::string> extensions;    ///< recipe -> python attribute
  std::vector<std::string> cuda_only;               ///< recipes with no CPU-only build
};

Expected<NixpkgsFacts> parse_nixpkgs_facts(std::string_view text, const std::string& source);
/// data/nix/nixpkgs.toml, parsed once.
const NixpkgsFacts& nixpkgs_facts();

/// One emitted file: its path relative to the output folder, and its text.
struct NixFile {
  std::string path;
  std::string text;
};

enum class NixEmit { flake, flox };

/// A Nix string literal of `s`: `"` `\` `$` and control characters escaped (`\"`, `\\`,
/// `\$`, `\n`, `\r`, `\t`), so no value can end the string or start `${...}`.
std::string nix_string(std::string_view s);

/// The Nix expression of one variant's torch: a function of nixpkgs' arguments
/// ({ python313Packages, blas, openblas }, and cudaPackages_12_8 for a CUDA 12.8 plan) for
/// callPackage, as Flox calls .flox/pkgs files.
/// An error when the plan has input errors or a value nixpkgs has no name for.
Expected<std::string> render_nix_torch(const TorchPlan& plan,
                                       const NixpkgsFacts& facts = nixpkgs_facts());

/// The nixpkgs revision the emitted files pin, and what the user should know about it.
struct NixpkgsPin {
  NixpkgsRevision revision;
  std::vector<std::string> notes;  ///< variants whose torch or CUDA that revision lacks
};

/// The revision whose torch is the variants' (the first variant's when they differ; the
/// newest known when none has it), with a note for each variant it cannot build as planned
/// (another torch, a CUDA major its torch refuses) naming the way out (--override-input).
NixpkgsPin nixpkgs_pin(const std::vector<TorchPlan>& plans,
                       const NixpkgsFacts& facts = nixpkgs_facts());

/// Every file of the emission for plans resolved from the variants (one per variant).
/// flake: flake.nix (nixpkgs pinned to nixpkgs_pin's revision), flake.lock (that revision
/// locked), default.nix (`nixpkgs ?` the same revision's tarball), nix/packages.nix and
/// nix/pkgs/<pythonPackages>/<name>.nix; flox: .flox/env/manifest.toml, .flox/env.json and
/// .flox/pkgs/<pythonPackages>/<name>.nix (Flox names them pythonXYPackages.<name>).
Expected<std::vector<NixFile>> render_nix_files(const std::vector<TorchPlan>& plans, NixEmit emit,
                                                const NixpkgsFacts& facts = nixpkgs_facts());

/// What to run next in the emitted folder `dir`: `nix build <dir>#<first variant>` (flake) or
/// `cd <dir> && flox build <pythonXYPackages>.<first variant>` (flox); empty without plans.
std::string nix_next_command(const std::vector<TorchPlan>& plans, NixEmit emit,
                             const std::string& dir, const NixpkgsFacts& facts = nixpkgs_facts());

/// The plans of the config's variants as `matrix --emit nix|flox` makes them: described for
/// the variant's own platform, independent of the machine tailor runs on.
std::vector<TorchPlan> nix_variant_plans(const std::vector<TorchVariant>& variants);

}  // namespace tailor::plan
