#include "plan/matrix_nix.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "cuda/renderers.h"
#include "data/data_files.h"
#include "data/toml_document.h"
#include "probe/host_report.h"
#include "util/strings.h"
#include "util/version.h"

namespace tailor::plan {

namespace {

/// A Nix identifier as the data gives it (a function argument, an attribute): written bare.
bool nix_identifier(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char ch) {
    return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-' || ch == '\'';
  });
}

/// Text for a `#` comment: one line, control characters shown as '?'.
std::string comment_text(std::string_view s) {
  std::string out;
  for (char ch : s) out += static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f ? '?' : ch;
  return out;
}

std::string nix_bool(bool b) { return b ? "true" : "false"; }

std::string nix_list(const std::vector<std::string>& items) {
  std::string out = "[";
  for (const auto& i : items) out += " " + nix_string(i);
  return out + " ]";
}

/// "3.13" -> "python313Packages" by the data's pattern; empty when not a version.
std::string python_packages(const NixpkgsFacts& facts, const std::string& version) {
  auto parts = split_any(version, ".");
  if (parts.size() < 2) return "";
  for (const auto& p : {parts[0], parts[1]})
    if (p.empty() || p.size() > 3 || p.find_first_not_of("0123456789") != std::string::npos)
      return "";
  std::string out = facts.python_packages;
  auto put = [&](std::string_view key, const std::string& value) {
    if (auto at = out.find(key); at != std::string::npos) out.replace(at, key.size(), value);
  };
  put("{major}", parts[0]);
  put("{minor}", parts[1]);
  return out;
}

/// The capabilities of a CUDA plan in nixpkgs' spelling: gpuTargets as PyTorch's arch list
/// ("8.6", "9.0+PTX"), the same text the plan gives TORCH_CUDA_ARCH_LIST.
std::vector<std::string> gpu_targets(const TorchPlan& p) {
  std::vector<std::string> out;
  for (auto& t : split_any(cuda::render_torch_arch_list(p.targets), "; "))
    if (!t.empty()) out.push_back(t);
  return out;
}

struct VariantNames {
  std::string python_set;     ///< python313Packages
  std::string system;         ///< x86_64-linux
  std::string blas;           ///< openblas
  std::string cuda_packages;  ///< cudaPackages_12_8; empty for a CPU-only plan
};

Expected<VariantNames> variant_names(const TorchPlan& p, const NixpkgsFacts& facts) {
  if (!valid_variant_name(p.name))
    return make_error(
        fmt::format("variant '{}': not a name a Nix file can carry (1-64 of A-Z a-z 0-9 . _ -)",
                    comment_text(p.name)));
  for (const auto& problem : p.problems)
    if (problem.severity == ProblemSeverity::error)
      return make_error(fmt::format("{}: {}: {}", p.name, problem.field, problem.message));
  if (p.variant.source_dir)
    return make_error(
        p.name +
        ": source: a local source tree cannot go into a Nix package (nixpkgs builds its own "
        "source of torch); remove `source` or use `tailor build torch`");
  VariantNames n;
  n.python_set = python_packages(facts, p.python_version);
  if (n.python_set.empty() || !nix_identifier(n.python_set))
    return make_error(fmt::format("{}: python: '{}' has no nixpkgs package set", p.name,
                                  comment_text(p.python_version)));
  auto sys = facts.systems.find(p.platform);
  if (sys == facts.systems.end())
    return make_error(
        fmt::format("{}: platform: '{}' has no Nix system", p.name, comment_text(p.platform)));
  n.system = sys->second;
  auto blas = facts.blas.find(p.blas);
  if (blas == facts.blas.end())
    return make_error(
        fmt::format("{}: blas: '{}' has no nixpkgs provider", p.name, comment_text(p.blas)));
  n.blas = blas->second;
  if (p.cuda && p.cuda_version) {
    n.cuda_packages = facts.cuda_packages;
    auto put = [&](std::string_view key, const std::string& value) {
      if (auto at = n.cuda_packages.find(key); at != std::string::npos)
        n.cuda_packages.replace(at, key.size(), value);
    };
    put("{major}", std::to_string(p.cuda_version->major));
    put("{minor}", std::to_string(p.cuda_version->minor));
    if (!nix_identifier(n.cuda_packages))
      return make_error(fmt::format("{}: cuda: '{}' has no nixpkgs package set", p.name,
                                    comment_text(p.cuda_text())));
  }
  return n;
}

std::string header(const std::string& what, NixEmit emit) {
  return fmt::format(
      "# {}\n# Written by `tailor matrix --emit {}` from tailor.toml and the plan `tailor plan "
      "torch` makes "
      "for it;\n# edit tailor.toml and emit again instead of editing this file.\n",
      comment_text(what), emit == NixEmit::flake ? "nix" : "flox");
}

std::string extension_expression(const TorchPlan& p, const VariantNames& n,
                                 const std::string& recipe, const std::string& attribute,
                                 NixEmit emit) {
  std::string o = header(fmt::format("{}-{}: nixpkgs' {} built against the torch of {}", p.name,
                                     recipe, attribute, p.name),
                         emit);
  o += fmt::format("{{ {}, callPackage }}:\n", n.python_set);
  o += fmt::format("{}.{}.override {{\n", n.python_set, nix_string(attribute));
  o += fmt::format("  torch = callPackage (./. + {}) {{ }};\n", nix_string("/" + p.name + ".nix"));
  o += "}\n";
  return o;
}

std::string torch_expression(const TorchPlan& p, const VariantNames& n, const NixpkgsFacts& facts,
                             NixEmit emit) {
  std::string what = fmt::format(
      "{}: torch {}, {}, CPU {}, {}", p.name, p.torch_version,
      p.cuda ? "CUDA " + p.cuda_text() + " (" + join(p.targets.names(), " ") + ")" : "CPU-only",
      p.cpu_target.empty() ? "compiler default" : p.cpu_target, p.blas);
  std::string o = header(what, emit);
  o += fmt::format(
      "{{ {}, blas, {}{} }}:\n", n.python_set, n.blas,
      n.cuda_packages.empty() ? "" : fmt::format(", {}, {}", n.cuda_packages, facts.cuda_magma));
  o += "let\n";
  o += fmt::format("  torch = {}.{};\n", n.python_set, nix_string(facts.torch_attribute));
  o += fmt::format("  wanted = {};\n", nix_string(p.torch_version));
  o += "in\n";
  // nixpkgs builds the torch of its own revision: the plan's version is a check, not an override.
  o += "if torch.version != wanted then\n";
  o += fmt::format(
      "  throw ({} + wanted + \"; this nixpkgs has \" + torch.version + \": choose a nixpkgs "
      "revision whose "
      "{}.torch is \" + wanted)\n",
      nix_string(p.name + ": tailor.toml asks for torch "), n.python_set);
  o += "else\n";
  o += "  (torch.override {\n";
  o += fmt::format("    cudaSupport = {};\n", nix_bool(p.cuda));
  if (p.cuda) o += fmt::format("    gpuTargets = {};\n", nix_list(gpu_targets(p)));
  // The plan's CUDA, not nixpkgs' default one; magma with the same (torch is marked broken
  // when the two differ).
  if (!n.cuda_packages.empty()) {
    o += fmt::format("    {} = {};\n", facts.cuda_packages_arg, n.cuda_packages);
    o += fmt::format("    {} = {}.override {{ {} = {}; }};\n", facts.magma_arg, facts.cuda_magma,
                     facts.cuda_packages_arg, n.cuda_packages);
  }
  for (const auto& [feature, arg] : facts.feature_args)
    if (auto f = p.features.find(feature); f != p.features.end())
      o += fmt::format("    {} = {};\n", arg, nix_bool(f->second));
  o += fmt::format("    blas = blas.override {{ blasProvider = {}; }};\n", n.blas);
  o += "  }).overrideAttrs (old: {\n";
  o += "    # The plan's build environment: CPU flags (-march), feature switches, build type.\n";
  const std::set<std::string> host_only(facts.host_only_env.begin(), facts.host_only_env.end());
  for (const auto& [key, value] : p.env)
    if (!host_only.count(key))
      o += fmt::format("    {} = {};\n", nix_string(key), nix_string(value));
  o += fmt::format(
      "    passthru = (old.passthru or {{ }}) // {{ tailorVariant = {}; tailorCpuFlags = {}; }};\n",
      nix_string(p.name), nix_list(p.cpu_flags));
  o += "  })\n";
  return o;
}

}  // namespace

std::string nix_string(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    switch (ch) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '$':
        out += "\\$";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        out += ch;
    }
  }
  return out + "\"";
}

Expected<NixpkgsFacts> parse_nixpkgs_facts(std::string_view text, const std::string& source) {
  return data::expected_from([&] {
    data::TomlDocument doc = data::parse_toml(text, source);
    NixpkgsFacts f;
    auto ident = [](const data::TomlValue& v) {
      std::string s = v.string();
      if (!nix_identifier(s)) v.fail("'" + s + "' is not a Nix identifier");
      return s;
    };
    {
      const auto repository = doc["nixpkgs"]["repository"];
      std::string r = repository.string();
      auto slash = r.find('/');
      auto name_ok = [](std::string_view n) {
        return !n.empty() &&
               n.find_first_not_of(
                   "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") ==
                   std::string_view::npos;
      };
      if (slash == std::string::npos || !name_ok(r.substr(0, slash)) ||
          !name_ok(r.substr(slash + 1)))
        repository.fail("'" + r + "' is not a GitHub owner/repo");
      f.owner = r.substr(0, slash);
      f.repo = r.substr(slash + 1);
    }
    for (const auto& v : doc["revision"].array()) {
      NixpkgsRevision rev;
      rev.rev = v["rev"].string();
      if (rev.rev.size() != 40 ||
          rev.rev.find_first_not_of("0123456789abcdef") != std::string::npos)
        v["rev"].fail("'" + rev.rev + "' is not a 40-digit git revision");
      rev.torch = v["torch"].string();
      if (!parse_version(rev.torch)) v["torch"].fail("'" + rev.torch + "' is not a version");
      for (const auto& m : v["cuda_majors"].array_or_empty()) {
        auto major = m.integer();
        if (major < 1 || major > 99) m.fail("not a CUDA major");
        rev.cuda_majors.push_back(static_cast<int>(major));
      }
      f.revisions.push_back(std::move(rev));
    }
    if (f.revisions.empty()) doc["revision"].fail("at least one nixpkgs revision is needed");
    f.python_packages = doc["nixpkgs"]["python_packages"].string();
    if (f.python_packages.find("{major}") == std::string::npos ||
        f.python_packages.find("{minor}") == std::string::npos)
      doc["nixpkgs"]["python_packages"].fail("must contain {major} and {minor}");
    f.torch_attribute = doc["torch"]["attribute"].string();
    f.cuda_packages_arg = ident(doc["torch"]["cuda_packages_arg"]);
    f.cuda_packages = doc["torch"]["cuda_packages"].string();
    f.magma_arg = ident(doc["torch"]["magma_arg"]);
    f.cuda_magma = ident(doc["torch"]["cuda_magma"]);
    if (f.cuda_packages.find("{major}") == std::string::npos ||
        f.cuda_packages.find("{minor}") == std::string::npos)
      doc["torch"]["cuda_packages"].fail("must contain {major} and {minor}");
    for (const auto& [feature, v] : doc["torch"]["feature_args"].entries())
      f.feature_args[feature] = ident(v);
    f.host_only_env = doc["torch"]["env"]["host_only"].strings();
    for (const auto& [name, v] : doc["blas"].entries()) f.blas[name] = ident(v);
    for (const auto& [platform, v] : doc["platform"].entries()) {
      std::string system = v.string();
      if (system.empty() ||
          system.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_-") != std::string::npos)
        v.fail("'" + system + "' is not a Nix system (a-z 0-9 _ -)");
      f.systems[platform] = system;
    }
    for (const auto& [recipe, v] : doc["extensions"].entries()) f.extensions[recipe] = v.string();
    f.cuda_only = doc["extensions_cuda_only"]["recipes"].strings();
    for (const auto& r : f.cuda_only)
      if (!f.extensions.count(r))
        doc["extensions_cuda_only"]["recipes"].fail("'" + r + "' is not in [extensions]");
    return f;
  });
}

const NixpkgsFacts& nixpkgs_facts() {
  static const NixpkgsFacts facts = [] {
    auto text = data::file("nix/nixpkgs.toml");
    if (!text) throw data::DataError(text.error().message);
    auto f = parse_nixpkgs_facts(*text, "data/nix/nixpkgs.toml");
    if (!f) throw data::DataError(f.error().message);
    return *f;
  }();
  return facts;
}

Expected<std::string> render_nix_torch(const TorchPlan& plan, const NixpkgsFacts& facts) {
  TAILOR_TRY(names, variant_names(plan, facts));
  return torch_expression(plan, names, facts, NixEmit::flox);
}

NixpkgsPin nixpkgs_pin(const std::vector<TorchPlan>& plans, const NixpkgsFacts& facts) {
  NixpkgsPin pin;
  pin.revision = facts.revisions.front();
  auto carrying = [&](const std::string& torch) -> const NixpkgsRevision* {
    for (const auto& r : facts.revisions)
      if (compare_versions(r.torch, torch) == 0) return &r;
    return nullptr;
  };
  for (const auto& p : plans)
    if (const auto* r = carrying(p.torch_version)) {
      pin.revision = *r;
      break;
    }
  const std::string override_hint =
      "nix build --override-input nixpkgs github:" + facts.owner + "/" + facts.repo + "/<rev>";
  for (const auto& p : plans) {
    if (compare_versions(pin.revision.torch, p.torch_version) != 0) {
      const auto* r = carrying(p.torch_version);
      pin.notes.push_back(fmt::format(
          "{}: torch {} is not in the pinned nixpkgs ({}, torch {}): {}; the variant stops at "
          "evaluation until then",
          p.name, p.torch_version, pin.revision.rev.substr(0, 12), pin.revision.torch,
          r ? fmt::format("nixpkgs {} has it: {}", r->rev, override_hint)
            : fmt::format("tailor knows no nixpkgs revision with it: {} of one whose torch is {}",
                          override_hint, p.torch_version)));
    } else if (p.cuda && p.cuda_version && !pin.revision.cuda_majors.empty() &&
               std::find(pin.revision.cuda_majors.begin(), pin.revision.cuda_majors.end(),
                         p.cuda_version->major) == pin.revision.cuda_majors.end()) {
      pin.notes.push_back(
          fmt::format("{}: CUDA {}: the pinned nixpkgs' torch {} builds with CUDA {} only (it is "
                      "marked broken for others): choose a CUDA of those in tailor.toml",
                      p.name, p.cuda_text(), pin.revision.torch,
                      join(
                          [&] {
                            std::vector<std::string> v;
                            for (int m : pin.revision.cuda_majors)
                              v.push_back(std::to_string(m) + ".x");
                            return v;
                          }(),
                          ", ")));
    }
  }
  return pin;
}

std::string nix_next_command(const std::vector<TorchPlan>& plans, NixEmit emit,
                             const std::string& dir, const NixpkgsFacts& facts) {
  if (plans.empty()) return "";
  auto n = variant_names(plans.front(), facts);
  if (!n) return "";
  const std::string quoted = "'" + dir + "'";
  if (emit == NixEmit::flake)
    return fmt::format("nix build {}#{}",
                       dir.find_first_of(" '\"$") == std::string::npos ? dir : quoted,
                       plans.front().name);
  return fmt::format("cd {} && flox build {}.{}",
                     dir.find_first_of(" '\"$") == std::string::npos ? dir : quoted, n->python_set,
                     plans.front().name);
}

std::vector<TorchPlan> nix_variant_plans(const std::vector<TorchVariant>& variants) {
  std::vector<TorchPlan> plans;
  for (const auto& v : variants) {
    // The variant's own platform, no host facts: the files do not depend on where tailor ran.
    probe::HostReport host;
    auto platform = v.platform.value_or("x86_64");
    host.os.arch = platform;
    host.cpu.arch = platform;
    ResolveOptions ropts;
    ropts.work_dir = "/tailor-work/" + v.name;
    ropts.base_dir = "/";
    plans.push_back(resolve_torch_plan(v, host, ropts));
  }
  return plans;
}

namespace {

/// The flake's own files around nix/packages.nix, all naming the pinned nixpkgs revision:
/// flake.nix (the input), default.nix (the same revision's tarball) and flake.lock.
std::vector<NixFile> pinned_flake_files(const NixpkgsPin& pin, const NixpkgsFacts& facts) {
  std::vector<NixFile> files;
  std::string flake =
      header("PyTorch variants from tailor.toml: nix build .#<variant>", NixEmit::flake);
  flake += "{\n  description = \"PyTorch variants planned by tailor\";\n";
  const std::string github =
      fmt::format("github:{}/{}/{}", facts.owner, facts.repo, pin.revision.rev);
  flake += fmt::format(
      "  # nixpkgs {} builds torch {}; flake.lock locks it (Nix adds its narHash on the first "
      "fetch).\n",
      pin.revision.rev.substr(0, 12), pin.revision.torch);
  flake += fmt::format("  inputs.nixpkgs.url = {};\n", nix_string(github));
  flake +=
      "  outputs = { self, nixpkgs }: {\n    packages = import ./nix/packages.nix { inherit "
      "nixpkgs; };\n  };\n}\n";
  files.push_back({"flake.nix", flake});
  std::string legacy = header(
      "Without flakes: nix-build -A <system>.<variant> [--arg nixpkgs <path>]", NixEmit::flake);
  legacy += fmt::format(
      "{{ nixpkgs ? builtins.fetchTarball {} }}:\nimport ./nix/packages.nix {{ inherit nixpkgs; "
      "}}\n",
      nix_string(fmt::format("https://github.com/{}/{}/archive/{}.tar.gz", facts.owner, facts.repo,
                             pin.revision.rev)));
  files.push_back({"default.nix", legacy});
  // The lock Nix would write for the pinned input: a github input with its revision is
  // locked; Nix fills in narHash and lastModified when it first fetches the revision.
  std::string repo = fmt::format(
      "\"owner\": \"{}\",\n        \"repo\": \"{}\",\n        \"rev\": \"{}\",\n"
      "        \"type\": \"github\"",
      facts.owner, facts.repo, pin.revision.rev);
  std::string lock = "{\n  \"nodes\": {\n    \"nixpkgs\": {\n      \"locked\": {\n        " + repo +
                     "\n      },\n      \"original\": {\n        " + repo +
                     "\n      }\n    },\n    \"root\": {\n      \"inputs\": {\n        "
                     "\"nixpkgs\": \"nixpkgs\"\n"
                     "      }\n    }\n  },\n  \"root\": \"root\",\n  \"version\": 7\n}\n";
  files.push_back({"flake.lock", lock});
  return files;
}

}  // namespace

Expected<std::vector<NixFile>> render_nix_files(const std::vector<TorchPlan>& plans, NixEmit emit,
                                                const NixpkgsFacts& facts) {
  std::vector<NixFile> files;
  const std::string pkgs_dir = emit == NixEmit::flake ? "nix/pkgs/" : ".flox/pkgs/";
  // system -> lines of nix/packages.nix
  std::map<std::string, std::string> by_system;
  std::string lets;
  std::set<std::string> systems, names;
  std::vector<std::string> flox_names;
  for (size_t i = 0; i < plans.size(); ++i) {
    const TorchPlan& p = plans[i];
    TAILOR_TRY(n, variant_names(p, facts));
    if (!names.insert(p.name).second) return make_error(p.name + ": two variants have this name");
    systems.insert(n.system);
    const std::string dir = pkgs_dir + n.python_set + "/";
    files.push_back({dir + p.name + ".nix", torch_expression(p, n, facts, emit)});
    flox_names.push_back(n.python_set + "." + p.name);
    // The package set of this variant: nixpkgs' CUDA configuration follows the plan, so
    // everything torch links (NCCL, magma, triton) is built for the same capabilities.
    std::string config = fmt::format("cudaSupport = {};", nix_bool(p.cuda));
    if (p.cuda) {
      std::vector<std::string> caps;
      bool ptx = false;
      for (auto t : gpu_targets(p)) {
        if (auto plus = t.find("+PTX"); plus != std::string::npos) {
          ptx = true;
          t.erase(plus);
        }
        caps.push_back(t);
      }
      config += fmt::format(" cudaCapabilities = {}; cudaForwardCompat = {};", nix_list(caps),
                            nix_bool(ptx));
    }
    // The flake's package set of the variant (overlays): the plan's CUDA for every package,
    // and the variant's torch as the set's own torch, so every package that needs torch
    // (the extensions and whatever they pull in) gets this one, never nixpkgs' default.
    lets += fmt::format(
        "  pkgs{} = variant {} {{ {} }} {} {} (./pkgs + {});\n", i, nix_string(n.system), config,
        n.cuda_packages.empty() ? "null" : nix_string(n.cuda_packages), nix_string(n.python_set),
        nix_string("/" + n.python_set + "/" + p.name + ".nix"));
    std::string& lines = by_system[n.system];
    lines += fmt::format("    {} = pkgs{}.{}.{};\n", nix_string(p.name), i, n.python_set,
                         nix_string(facts.torch_attribute));
    for (const auto& [recipe, attribute] : facts.extensions) {
      // A CPU-only variant gets no package that only builds with CUDA.
      if (!p.cuda && std::find(facts.cuda_only.begin(), facts.cuda_only.end(), recipe) !=
                         facts.cuda_only.end())
        continue;
      std::string ext = p.name + "-" + recipe;
      if (!valid_variant_name(ext)) continue;  // over 64 characters: the torch package alone
      if (emit == NixEmit::flox)
        files.push_back({dir + ext + ".nix", extension_expression(p, n, recipe, attribute, emit)});
      lines += fmt::format("    {} = pkgs{}.{}.{};\n", nix_string(ext), i, n.python_set,
                           nix_string(attribute));
    }
  }
  if (emit == NixEmit::flake) {
    std::string packages = header("Every variant's package set and packages, by Nix system.", emit);
    packages += "{ nixpkgs }:\nlet\n";
    packages +=
        "  variant = system: config: cuda: python: torch: import nixpkgs {\n"
        "    inherit system;\n"
        "    config = { allowUnfree = true; } // config;\n"
        "    overlays = (if cuda == null then [ ] else [ (final: prev: { cudaPackages = "
        "final.${cuda}; }) ]) ++ [\n"
        "      # The variant's torch is the Python package set's torch: made from nixpkgs' own "
        "(pyprev).\n"
        "      (final: prev: {\n"
        "        pythonPackagesExtensions = prev.pythonPackagesExtensions ++ [\n"
        "          (pyfinal: pyprev: { torch = final.callPackage torch { ${python} = pyprev; }; "
        "})\n"
        "        ];\n"
        "      })\n"
        "    ];\n"
        "  };\n";
    packages += lets + "in\n{\n";
    for (const auto& [system, lines] : by_system)
      packages += fmt::format("  {} = {{\n{}  }};\n", nix_string(system), lines);
    packages += "}\n";
    files.push_back({"nix/packages.nix", packages});
    for (auto& f : pinned_flake_files(nixpkgs_pin(plans, facts), facts))
      files.push_back(std::move(f));
  } else {
    std::string manifest =
        "# Written by `tailor matrix --emit flox` from tailor.toml: the environment of the Nix\n"
        "# expression builds in .flox/pkgs/. Build one with `flox build <name>`:\n";
    for (const auto& name : flox_names) manifest += "#   " + comment_text(name) + "\n";
    manifest += "version = 1\n\n[install]\n\n[options]\n";
    // CUDA is unfree in nixpkgs: without the permission no CUDA variant evaluates.
    if (std::any_of(plans.begin(), plans.end(), [](const TorchPlan& p) { return p.cuda; }))
      manifest += "allow.unfree = true\n";
    manifest += "systems = [";
    bool first = true;
    for (const auto& s : systems) {
      manifest +=
          std::string(first ? "" : ", ") + "\"" + s + "\"";  // checked by the loader: [a-z0-9_-]
      first = false;
    }
    manifest += "]\n";
    files.push_back({".flox/env/manifest.toml", manifest});
    files.push_back({".flox/env.json", "{\n  \"name\": \"tailor-torch\",\n  \"version\": 1\n}\n"});
  }
  return files;
}

}  // namespace tailor::plan
