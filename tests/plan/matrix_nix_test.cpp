#include "plan/matrix_nix.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "data/data_files.h"
#include "plan/matrix.h"

namespace tailor::plan {
namespace {

/// Reads a Nix string literal back by Nix's rules; npos-safe. Returns the text and where it ended.
std::string unquote_nix(const std::string& lit) {
  EXPECT_TRUE(lit.size() >= 2 && lit.front() == '"' && lit.back() == '"') << lit;
  std::string out;
  for (size_t i = 1; i + 1 < lit.size(); ++i) {
    char ch = lit[i];
    if (ch == '"') ADD_FAILURE() << "unescaped quote in " << lit;
    if (ch == '$' && lit[i + 1] == '{') ADD_FAILURE() << "interpolation in " << lit;
    if (ch == '\n') ADD_FAILURE() << "raw newline in " << lit;
    if (ch == '\\') {
      char next = lit[++i];
      out += next == 'n' ? '\n' : next == 'r' ? '\r' : next == 't' ? '\t' : next;
    } else {
      out += ch;
    }
  }
  return out;
}

TEST(MatrixNix, StringsRoundTripAndNeverInterpolate) {
  for (std::string hostile :
       {std::string("plain"), std::string("a\"b"), std::string("${builtins.abort \"x\"}"),
        std::string("back\\slash"), std::string("line\nbreak\r\t"), std::string("$${x}"),
        std::string("\\${y}"), std::string("end\\")}) {
    std::string lit = nix_string(hostile);
    EXPECT_EQ(unquote_nix(lit), hostile) << lit;
  }
  EXPECT_EQ(nix_string("a${b}\"c\\"), "\"a\\${b}\\\"c\\\\\"");
}

TorchPlan cuda_plan() {
  auto config = parse_tailor_config(R"(
[defaults]
torch = "2.9.1"
cuda = "12.8"
python = "3.13"
platform = "x86_64"
blas = "openblas"
[variant.pytorch-sm86-sm90ptx]
arch = ["8.6", "9.0+PTX"]
cpu_target = "avx512"
)",
                                    "t.toml");
  EXPECT_TRUE(config) << config.error().message;
  auto variants = config_variants(*config);
  EXPECT_TRUE(variants) << variants.error().message;
  return nix_variant_plans(*variants).at(0);
}

TEST(MatrixNix, TorchExpressionCarriesThePlan) {
  TorchPlan p = cuda_plan();
  auto text = render_nix_torch(p);
  ASSERT_TRUE(text) << text.error().message;
  EXPECT_NE(
      text->find("{ python313Packages, blas, openblas, cudaPackages_12_8, magma-cuda-static }:"),
      std::string::npos)
      << *text;
  // The plan's CUDA 12.8, for torch and its magma alike.
  EXPECT_NE(text->find("cudaPackages = cudaPackages_12_8;"), std::string::npos) << *text;
  EXPECT_NE(
      text->find(
          "effectiveMagma = magma-cuda-static.override { cudaPackages = cudaPackages_12_8; };"),
      std::string::npos)
      << *text;
  EXPECT_NE(text->find("cudaSupport = true;"), std::string::npos);
  EXPECT_NE(text->find("gpuTargets = [ \"8.6\" \"9.0+PTX\" ];"), std::string::npos) << *text;
  EXPECT_NE(text->find("blasProvider = openblas;"), std::string::npos);
  EXPECT_NE(text->find("wanted = \"2.9.1\";"), std::string::npos);
  EXPECT_NE(text->find("\"CFLAGS\" = " + nix_string(p.env.at("CFLAGS")) + ";"), std::string::npos);
  EXPECT_NE(text->find("-march=x86-64-v4"), std::string::npos);
  EXPECT_NE(
      text->find("mklDnnSupport = " + std::string(p.features.at("mkldnn") ? "true" : "false")),
      std::string::npos);
  // Host facts stay out: nixpkgs brings its toolkit and its job count.
  EXPECT_EQ(text->find("CUDA_HOME"), std::string::npos);
  EXPECT_EQ(text->find("MAX_JOBS"), std::string::npos);
  EXPECT_EQ(text->find("TORCH_CUDA_ARCH_LIST"), std::string::npos);
}

TEST(MatrixNix, HostileValuesAreQuoted) {
  TorchPlan p = cuda_plan();
  auto clean = render_nix_torch(p);
  ASSERT_TRUE(clean);
  const std::string evil = "x\"; ${builtins.abort \"pwned\"} \\\n# ";
  p.env["CFLAGS"] = evil;
  p.env["EVIL\"${KEY}"] = evil;
  p.cpu_flags.push_back(evil);
  p.torch_version = "2.9.1\"${v}";
  auto text = render_nix_torch(p);
  ASSERT_TRUE(text) << text.error().message;
  // A value's newline is `\n` in its string: the hostile values add one line, the new env key.
  EXPECT_EQ(std::count(text->begin(), text->end(), '\n'),
            std::count(clean->begin(), clean->end(), '\n') + 1);
  // Outside `#` comments every `${` is escaped and every line is code tailor wrote.
  size_t line_start = 0;
  for (size_t end; line_start < text->size(); line_start = end + 1) {
    end = text->find('\n', line_start);
    if (end == std::string::npos) end = text->size();
    std::string line = text->substr(line_start, end - line_start);
    if (line.find_first_not_of(' ') != std::string::npos &&
        line[line.find_first_not_of(' ')] == '#')
      continue;
    for (size_t at = line.find("${"); at != std::string::npos; at = line.find("${", at + 1))
      EXPECT_TRUE(at > 0 && line[at - 1] == '\\') << line;
  }
  EXPECT_NE(text->find(nix_string(evil)), std::string::npos);
  EXPECT_NE(text->find(nix_string("EVIL\"${KEY}") + " = "), std::string::npos);
  // The header comment shows the version on one line.
  EXPECT_EQ(text->find("\n${v}"), std::string::npos);
}

TEST(MatrixNix, RefusesWhatCannotBeANixPackage) {
  TorchPlan p = cuda_plan();
  p.name = "bad\"name";
  EXPECT_FALSE(render_nix_torch(p));
  p = cuda_plan();
  p.variant.source_dir = "/src/pytorch";
  auto r = render_nix_torch(p);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("source"), std::string::npos);
  p = cuda_plan();
  p.problems.push_back({ProblemSeverity::error, ProblemKind::input, "arch", "bad arch", ""});
  r = render_nix_torch(p);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("arch: bad arch"), std::string::npos);
}

TEST(MatrixNix, FlakeAndFloxLayouts) {
  std::vector<TorchPlan> plans{cuda_plan()};
  auto flake = render_nix_files(plans, NixEmit::flake);
  ASSERT_TRUE(flake) << flake.error().message;
  auto find = [](const std::vector<NixFile>& files, const std::string& path) -> const NixFile* {
    for (const auto& f : files)
      if (f.path == path) return &f;
    return nullptr;
  };
  ASSERT_TRUE(find(*flake, "flake.nix"));
  ASSERT_TRUE(find(*flake, "default.nix"));
  const NixFile* packages = find(*flake, "nix/packages.nix");
  ASSERT_TRUE(packages);
  EXPECT_NE(
      packages->text.find(
          "cudaCapabilities = [ \"8.6\" \"9.0\" ]; cudaForwardCompat = true; } "
          "\"cudaPackages_12_8\" "
          "\"python313Packages\" (./pkgs + \"/python313Packages/pytorch-sm86-sm90ptx.nix\");"),
      std::string::npos)
      << packages->text;
  EXPECT_NE(packages->text.find("(final: prev: { cudaPackages = final.${cuda}; })"),
            std::string::npos)
      << packages->text;
  // The variant's torch is its package set's torch; the extensions come from that set.
  EXPECT_NE(packages->text.find(
                "(pyfinal: pyprev: { torch = final.callPackage torch { ${python} = pyprev; }; })"),
            std::string::npos)
      << packages->text;
  EXPECT_NE(packages->text.find("\"pytorch-sm86-sm90ptx\" = pkgs0.python313Packages.\"torch\";"),
            std::string::npos)
      << packages->text;
  EXPECT_NE(
      packages->text.find(
          "\"pytorch-sm86-sm90ptx-torch-scatter\" = pkgs0.python313Packages.\"torch-scatter\";"),
      std::string::npos)
      << packages->text;
  ASSERT_TRUE(find(*flake, "nix/pkgs/python313Packages/pytorch-sm86-sm90ptx.nix"));
  EXPECT_FALSE(find(*flake, "nix/pkgs/python313Packages/pytorch-sm86-sm90ptx-torch-scatter.nix"))
      << "the set's own";

  auto flox = render_nix_files(plans, NixEmit::flox);
  ASSERT_TRUE(flox) << flox.error().message;
  const NixFile* manifest = find(*flox, ".flox/env/manifest.toml");
  ASSERT_TRUE(manifest);
  EXPECT_NE(manifest->text.find("systems = [\"x86_64-linux\"]"), std::string::npos)
      << manifest->text;
  EXPECT_NE(manifest->text.find("[options]\nallow.unfree = true\n"), std::string::npos)
      << manifest->text;
  EXPECT_EQ(nix_next_command(plans, NixEmit::flake, "out"), "nix build out#pytorch-sm86-sm90ptx");
  EXPECT_EQ(nix_next_command(plans, NixEmit::flox, "my dir"),
            "cd 'my dir' && flox build python313Packages.pytorch-sm86-sm90ptx");
  EXPECT_NE(manifest->text.find("python313Packages.pytorch-sm86-sm90ptx"), std::string::npos);
  EXPECT_TRUE(find(*flox, ".flox/pkgs/python313Packages/pytorch-sm86-sm90ptx.nix"));
  EXPECT_FALSE(find(*flox, "flake.nix"));
  // Flox builds each file on its own: an extension is nixpkgs' own, given the variant's torch.
  const NixFile* ext =
      find(*flox, ".flox/pkgs/python313Packages/pytorch-sm86-sm90ptx-torch-scatter.nix");
  ASSERT_TRUE(ext);
  EXPECT_NE(ext->text.find("python313Packages.\"torch-scatter\".override"), std::string::npos)
      << ext->text;

  // A CUDA variant gets the CUDA-only extensions; a CPU-only one does not.
  EXPECT_NE(packages->text.find("\"pytorch-sm86-sm90ptx-flash-attn\""), std::string::npos);
  EXPECT_TRUE(find(*flox, ".flox/pkgs/python313Packages/pytorch-sm86-sm90ptx-flash-attn.nix"));
  std::vector<TorchPlan> cpu{plans[0]};
  cpu[0].cuda = false;
  cpu[0].name = "pytorch-cpu-avx512";
  auto cpu_files = render_nix_files(cpu, NixEmit::flake);
  ASSERT_TRUE(cpu_files) << cpu_files.error().message;
  const std::string cpu_packages = find(*cpu_files, "nix/packages.nix")->text;
  EXPECT_NE(cpu_packages.find("\"pytorch-cpu-avx512-torch-scatter\""), std::string::npos)
      << cpu_packages;
  EXPECT_NE(cpu_packages.find("cudaSupport = false; } null \"python313Packages\""),
            std::string::npos)
      << cpu_packages;
  const NixFile* cpu_torch = find(*cpu_files, "nix/pkgs/python313Packages/pytorch-cpu-avx512.nix");
  ASSERT_TRUE(cpu_torch);
  EXPECT_EQ(cpu_torch->text.find("cudaPackages"), std::string::npos) << cpu_torch->text;
  auto cpu_flox = render_nix_files(cpu, NixEmit::flox);
  ASSERT_TRUE(cpu_flox);
  EXPECT_EQ(find(*cpu_flox, ".flox/env/manifest.toml")->text.find("unfree"), std::string::npos)
      << "no CUDA, nothing unfree";
  for (const std::string r : {"flash-attn", "causal-conv1d", "mamba-ssm"}) {
    EXPECT_EQ(cpu_packages.find("\"pytorch-cpu-avx512-" + r + "\""), std::string::npos) << r;
    EXPECT_FALSE(find(*cpu_flox, ".flox/pkgs/python313Packages/pytorch-cpu-avx512-" + r + ".nix"))
        << r;
  }

  plans.push_back(plans[0]);
  EXPECT_FALSE(render_nix_files(plans, NixEmit::flake));  // two variants, one name
}

TEST(MatrixNix, FactsLoad) {
  const NixpkgsFacts& f = nixpkgs_facts();
  EXPECT_EQ(f.systems.at("aarch64"), "aarch64-linux");
  EXPECT_EQ(f.feature_args.at("mkldnn"), "mklDnnSupport");
  EXPECT_TRUE(f.extensions.count("torch-scatter"));
  EXPECT_FALSE(
      parse_nixpkgs_facts("[nixpkgs]\nrepository = \"x\"\npython_packages = \"py\"\n", "t"));
}

TEST(MatrixNix, PinsTheRevisionCarryingThePlannedTorch) {
  auto facts = parse_nixpkgs_facts(*data::file("nix/nixpkgs.toml"), "nixpkgs.toml");
  ASSERT_TRUE(facts) << facts.error().message;
  facts->revisions = {{std::string(40, 'a'), "2.9.1", {11, 12}},
                      {std::string(40, 'b'), "2.8.0", {}}};
  TorchPlan p = cuda_plan();  // torch 2.9.1, CUDA 12.8
  NixpkgsPin pin = nixpkgs_pin({p}, *facts);
  EXPECT_EQ(pin.revision.rev, std::string(40, 'a'));
  EXPECT_TRUE(pin.notes.empty());

  p.torch_version = "2.8.0";
  pin = nixpkgs_pin({p}, *facts);
  EXPECT_EQ(pin.revision.rev, std::string(40, 'b'));
  EXPECT_TRUE(pin.notes.empty());

  // No revision has it: the newest, and a note naming the torch and the way out.
  p.torch_version = "2.7.1";
  pin = nixpkgs_pin({p}, *facts);
  EXPECT_EQ(pin.revision.rev, std::string(40, 'a'));
  ASSERT_EQ(pin.notes.size(), 1u);
  EXPECT_NE(pin.notes[0].find("torch 2.7.1 is not in the pinned nixpkgs"), std::string::npos)
      << pin.notes[0];
  EXPECT_NE(pin.notes[0].find("--override-input nixpkgs github:NixOS/nixpkgs/"), std::string::npos)
      << pin.notes[0];

  // A CUDA major the pinned torch refuses.
  p.torch_version = "2.9.1";
  p.cuda_version = cuda::CudaVersion{13, 0};
  pin = nixpkgs_pin({p}, *facts);
  ASSERT_EQ(pin.notes.size(), 1u);
  EXPECT_NE(pin.notes[0].find("CUDA 13.0"), std::string::npos) << pin.notes[0];
  EXPECT_NE(pin.notes[0].find("11.x, 12.x"), std::string::npos) << pin.notes[0];

  // The files: the flake's input and the lock name the same revision; default.nix too.
  auto files = render_nix_files({cuda_plan()}, NixEmit::flake, *facts);
  ASSERT_TRUE(files) << files.error().message;
  auto text = [&](const std::string& path) {
    for (const auto& f : *files)
      if (f.path == path) return f.text;
    ADD_FAILURE() << path << " not emitted";
    return std::string();
  };
  EXPECT_NE(text("flake.nix")
                .find("inputs.nixpkgs.url = \"github:NixOS/nixpkgs/" + std::string(40, 'a') + "\""),
            std::string::npos);
  EXPECT_NE(text("flake.lock").find("\"rev\": \"" + std::string(40, 'a') + "\""),
            std::string::npos);
  EXPECT_NE(text("default.nix").find("archive/" + std::string(40, 'a') + ".tar.gz"),
            std::string::npos);

  // A revision that is not 40 hex digits, or none at all, is a data error.
  std::string bad(*data::file("nix/nixpkgs.toml"));
  auto at = bad.find("rev = \"");
  EXPECT_FALSE(parse_nixpkgs_facts(
      bad.substr(0, at) + "rev = \"nixos-unstable\"" + bad.substr(bad.find('\n', at)), "t"));
}

}  // namespace
}  // namespace tailor::plan
