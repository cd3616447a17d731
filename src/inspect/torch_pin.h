// The torch a wheel was built against, as its metadata states it. A C++/CUDA extension is
// bound to the exact torch it was compiled with (its C++ ABI: symbols such as
// torch::Library::_def change between releases), so a wheel that links torch pins it the
// way prebuilt extension wheels in the field do: `Requires-Dist: torch==2.11.0` (the public
// version, as torchvision and xformers pin it; PEP 440's == matches 2.11.0+cu130 too) and a
// local version label naming torch's CUDA and release, `1.2.3+cu130torch2.11` (as
// flash-attn's release wheels are named), so two builds for two torches are two files.
// Pure text functions: the normaliser writes the pin, `inspect` warns when it is missing,
// the wheelhouse and `stack` match a torch against it.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tailor::inspect {

/// The torch a build used, from the build's toolchain text "2.11.0+cu130 (CUDA 13.0)"
/// ("2.11.0+cpu" for a CPU torch): nullopt when the text does not start with a version.
struct TorchBuild {
  std::string version;  ///< "2.11.0+cu130", as torch names itself
  std::string cuda;     ///< "13.0"; "" for a CPU build
};
std::optional<TorchBuild> parse_torch_build(std::string_view toolchain_text);

/// "2.11.0+cu130" -> "2.11.0".
std::string public_version(std::string_view version);

/// The wheel's local version label for that torch: "cu130torch2.11" ("cputorch2.11").
std::string torch_local_label(const TorchBuild& torch);

/// The requirement the wheel states: "torch==2.11.0".
std::string torch_requirement(const TorchBuild& torch);

/// A package version with the label added: "1.2.3" -> "1.2.3+cu130torch2.11"; a version
/// that has a local label of its own keeps it and gets ours as its last segments
/// ("1.2.3+g1a2b" -> "1.2.3+g1a2b.cu130torch2.11"); one that already ends in ours is kept.
std::string version_with_label(std::string_view version, std::string_view label);

/// The distribution name of a PEP 508 requirement, normalised (PEP 503):
/// "Torch (>=2.0) ; python_version>'3'" -> "torch".
std::string requirement_name(std::string_view requirement);

/// The torch version a wheel's Requires-Dist lines pin: the specifier of a torch
/// requirement that is `==X` (a release, "2.11.0", or a prefix, "2.11.*") or `===X`;
/// nullopt when torch is not required or only loosely (">=2.0", none at all).
std::optional<std::string> pinned_torch(const std::vector<std::string>& requires_dist);

/// Whether a torch version ("2.11.0+cu130") satisfies a pin as pinned_torch returns it
/// (PEP 440: "2.11.0" matches any local label of 2.11.0, "2.11.0+cu130" only itself,
/// "2.11.*" every 2.11 release).
bool torch_matches_pin(std::string_view torch_version, std::string_view pin);

/// METADATA with its Version header replaced by `version` and every torch Requires-Dist
/// (whatever its specifier, extras or markers: the libraries need torch whenever the wheel
/// is installed) replaced by one unconditional `Requires-Dist: <requirement>`, where the
/// first stood (else after the last Requires-Dist, else at the end of the headers). The
/// body after the headers is kept byte for byte.
std::string pin_torch_in_metadata(std::string_view metadata, std::string_view version,
                                  std::string_view requirement);

}  // namespace tailor::inspect
