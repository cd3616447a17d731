// The sh form: passes bash -n and shellcheck, and sourced under `env -i` exports exactly
// the plan's environment. Also the catalog loaders and the doctor's checks.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "plan/torch_doctor.h"
#include "plan/torch_plan.h"
#include "plan/torch_plan_render.h"
#include "torch_test_hosts.h"
#include "util/process.h"
#include "util/strings.h"

namespace tailor::plan {
namespace {

std::string write_script(const BuildPlan& p, const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("tailor_plan_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string path = (dir / name).string();
  std::ofstream(path) << render_plan_script(p);
  return path;
}

BuildPlan graviton_t4g_plan() {
  TorchVariant v;
  v.torch = "2.9.1";
  v.cuda = "12.6";
  v.python = "3.10";
  v.arch = {"7.5", "8.0+PTX"};
  v.cpu_target = "neoverse-v1";
  return resolve_torch_plan(v, testing::graviton_t4g_host());
}

TEST(TorchScript, BashSyntaxAndShellcheck) {
  std::string path = write_script(graviton_t4g_plan(), "graviton_t4g.sh");
  EXPECT_TRUE(run_command({"bash", "-n", path}).ok());
  if (find_in_path("shellcheck").empty()) GTEST_SKIP() << "shellcheck not installed";
  auto r = run_command({"shellcheck", "-s", "bash", path}, std::chrono::seconds(60));
  EXPECT_TRUE(r.ok()) << r.out << r.err;
}

// The script reads relative folders against the folder it is started from, and every
// step uses absolute paths there, so the steps that run in the source tree find the
// venv's interpreter. Run for real with a fake interpreter that records each call.
TEST(TorchScript, RelativeWorkFolderRunsFromAnotherFolder) {
  namespace fs = std::filesystem;
  fs::path root = fs::temp_directory_path() / ("tailor_script_run_" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "start" / "src");
  std::ofstream(root / "start" / "src" / "requirements.txt") << "\n";
  const std::string log = (root / "calls.log").string();
  const std::string fake = (root / "fakepy").string();
  std::ofstream(fake) << "#!/bin/sh\n"
                      << "echo \"$(pwd) $0 $*\" >> '" << log << "'\n"
                      << "if [ \"$1\" = -m ] && [ \"$2\" = venv ]; then mkdir -p \"$3/bin\" && cp \"$0\" \"$3/bin/python\"; fi\n";
  fs::permissions(fake, fs::perms::owner_all);

  probe::HostReport host = testing::x86_cuda128_host();
  auto uname = run_command({"uname", "-m"});
  ASSERT_TRUE(uname.ok());
  host.os.arch = std::string(trim(uname.out));
  host.cpu.arch = host.os.arch;
  host.pythons = {{fake, "3.11.7", std::nullopt, ""}};
  TorchVariant v;
  v.torch = "2.9.1";
  v.cpu_only = true;
  v.python = "3.11";
  v.source_dir = "src";  // relative, like --source src
  ResolveOptions o;      // the default work folder "tailor-work", relative
  o.base_dir = "/where/tailor/plan/ran";
  BuildPlan p = resolve_torch_plan(v, host, o);
  ASSERT_FALSE(p.has_errors()) << render_problems(p);
  const std::string script = (root / "plan.sh").string();
  std::ofstream(script) << render_plan_script(p);
  ASSERT_TRUE(run_command({"bash", "-n", script}).ok());

  const std::string start = (root / "start").string();
  auto r = run_command({"bash", "-c", "cd \"$1\" && bash \"$2\"", "tailor", start, script}, std::chrono::seconds(60));
  EXPECT_TRUE(r.ok()) << r.out << r.err;
  std::ifstream in(log);
  std::vector<std::string> calls;
  for (std::string line; std::getline(in, line);) calls.push_back(line);
  const std::string venv_py = start + "/tailor-work/venv/bin/python";
  ASSERT_EQ(calls.size(), 3u) << r.out << r.err;
  EXPECT_EQ(calls[0], start + " " + fake + " -m venv " + start + "/tailor-work/venv");
  EXPECT_EQ(calls[1].rfind(start + "/src " + venv_py + " -m pip install -r requirements.txt", 0), 0u) << calls[1];
  EXPECT_EQ(calls[2], start + "/src " + venv_py + " setup.py bdist_wheel");
  EXPECT_TRUE(fs::exists(start + "/tailor-work/build.log"));
  EXPECT_FALSE(fs::exists("/where/tailor/plan/ran"));
  fs::remove_all(root);
}

TEST(TorchScript, SourcedEnvironmentEqualsThePlan) {
  BuildPlan p = graviton_t4g_plan();
  std::string path = write_script(p, "env.sh");
  auto r = run_command({"env", "-i", "bash", "-c", ". \"$1\" && env -0", "tailor", path}, std::chrono::seconds(30));
  ASSERT_TRUE(r.ok()) << r.err;
  std::map<std::string, std::string> got;
  size_t start = 0;
  while (start < r.out.size()) {
    size_t end = r.out.find('\0', start);
    if (end == std::string::npos) end = r.out.size();
    std::string kv = r.out.substr(start, end - start);
    start = end + 1;
    auto eq = kv.find('=');
    std::string key = kv.substr(0, eq);
    if (key == "PWD" || key == "SHLVL" || key == "_" || key == "OLDPWD") continue;  // bash's own
    got[key] = kv.substr(eq + 1);
  }
  EXPECT_EQ(got, p.env);
}

TEST(TorchCatalogLoaders, BrokenDataNamesTheField) {
  TorchCatalog c;
  auto r = load_features("[[feature]]\nname = \"x\"\nvars = [\"USE_X\"]\n", c);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "data/pytorch/features.toml: feature[0].default_x86_64: missing (expected a boolean)");
  auto bad = load_cpu_targets("[[target]\n", c);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("data/pytorch/cpu_targets.toml:1"), std::string::npos) << bad.error().message;
  const TorchCatalog& cat = torch_catalog();
  EXPECT_EQ(cat.find_cpu_target("AVX2")->name, "x86-64-v3");
  EXPECT_EQ(cat.max_gcc_for("12.6"), 13);
  EXPECT_EQ(cat.distro_for_glibc("2.36")->name, "ubuntu22.04");
  EXPECT_NE(cat.find_release("2.11.0"), nullptr);
  EXPECT_LT(compare_versions("2.9.1", "2.10.0"), 0);
}

TEST(TorchDoctor, RequirementsAndPins) {
  auto r = parse_requirement("packaging>=22,<24");
  EXPECT_EQ(r.name, "packaging");
  EXPECT_EQ(r.specs, (std::vector<std::string>{">=22", "<24"}));
  EXPECT_TRUE(satisfies("23.2", r.specs));
  EXPECT_FALSE(satisfies("24.0", r.specs));
  EXPECT_FALSE(satisfies("75.1.0", {"<75"}));
  EXPECT_TRUE(satisfies("1.26.4", {"<2"}));
  EXPECT_EQ(parse_requirement("typing_extensions>=4.10.0").name, "typing-extensions");
}

TEST(TorchDoctor, ChecksWithFixes) {
  BuildPlan p = graviton_t4g_plan();
  auto host = testing::graviton_t4g_host();
  DoctorFacts facts;
  facts.python_checked = true;
  for (const auto& req : p.requirements) facts.python_packages[parse_requirement(req).name] = "1.0";
  facts.python_packages["setuptools"] = "80.9.0";  // too new for 2.9.x
  facts.python_packages["numpy"] = std::nullopt;
  facts.source_checked = true;
  facts.source_exists = true;
  facts.empty_submodules = {"third_party/cutlass"};
  host.memory.swap_total = 0;
  host.disk.free_bytes = 20 * testing::k_gib;
  DoctorReport r = run_torch_doctor(p, host, facts);
  std::map<std::string, const DoctorCheck*> by;
  for (const auto& c : r.checks) by[c.name] = &c;
  EXPECT_FALSE(by.at("disk")->ok);
  EXPECT_FALSE(by.at("swap")->ok);
  EXPECT_TRUE(by.at("swap")->warning);
  EXPECT_FALSE(by.at("python-deps")->ok);
  EXPECT_NE(by.at("python-deps")->detail.find("setuptools<75 (have 80.9.0)"), std::string::npos) << by.at("python-deps")->detail;
  EXPECT_NE(by.at("python-deps")->detail.find("numpy<2"), std::string::npos);
  EXPECT_FALSE(by.at("submodules")->ok);
  EXPECT_NE(by.at("submodules")->fix.find("git submodule update --init --recursive"), std::string::npos);
  EXPECT_TRUE(by.at("nvcc")->ok);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(render_doctor(r).find("FAIL"), std::string::npos);
}

}  // namespace
}  // namespace tailor::plan
