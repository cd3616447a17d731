// The sh form: passes bash -n and shellcheck, and sourced under `env -i` exports exactly
// the plan's environment. Also the catalog loaders and the doctor's checks.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "plan/torch_doctor.h"
#include "plan/torch_plan.h"
#include "plan/torch_plan_render.h"
#include "support/host_reports.h"
#include "util/process.h"
#include "util/strings.h"

namespace tailor::plan {
namespace {

std::string write_script(const TorchPlan& p, const std::string& name) {
  auto dir =
      std::filesystem::temp_directory_path() / ("tailor_plan_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string path = (dir / name).string();
  std::ofstream(path) << render_plan_script(p);
  return path;
}

TorchPlan graviton_t4g_plan() {
  TorchVariant v;
  v.torch = "2.9.1";
  v.cuda = cuda::CudaVersion{12, 6};
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
                      << "if [ \"$1\" = -m ] && [ \"$2\" = venv ]; then mkdir -p \"$3/bin\" && cp "
                         "\"$0\" \"$3/bin/python\"; fi\n";
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
  TorchPlan p = resolve_torch_plan(v, host, o);
  ASSERT_FALSE(p.has_errors()) << render_problems(p);
  const std::string script = (root / "plan.sh").string();
  std::ofstream(script) << render_plan_script(p);
  ASSERT_TRUE(run_command({"bash", "-n", script}).ok());

  const std::string start = (root / "start").string();
  auto r = run_command({"bash", "-c", "cd \"$1\" && bash \"$2\"", "tailor", start, script},
                       std::chrono::seconds(60));
  EXPECT_TRUE(r.ok()) << r.out << r.err;
  std::ifstream in(log);
  std::vector<std::string> calls;
  for (std::string line; std::getline(in, line);) calls.push_back(line);
  const std::string venv_py = start + "/tailor-work/venv/bin/python";
  ASSERT_EQ(calls.size(), 3u) << r.out << r.err;
  EXPECT_EQ(calls[0], start + " " + fake + " -m venv " + start + "/tailor-work/venv");
  EXPECT_EQ(calls[1].rfind(start + "/src " + venv_py + " -m pip install -r requirements.txt", 0),
            0u)
      << calls[1];
  EXPECT_EQ(calls[2], start + "/src " + venv_py + " setup.py bdist_wheel");
  EXPECT_TRUE(fs::exists(start + "/tailor-work/build.log"));
  EXPECT_FALSE(fs::exists("/where/tailor/plan/ran"));
  fs::remove_all(root);
}

TEST(TorchScript, SourcedEnvironmentEqualsThePlan) {
  TorchPlan p = graviton_t4g_plan();
  std::string path = write_script(p, "env.sh");
  auto r = run_command({"env", "-i", "bash", "-c", ". \"$1\" && env -0", "tailor", path},
                       std::chrono::seconds(30));
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

// A plan for another machine (a T4G's aarch64 from this x86_64 host) does not carry this
// host's interpreter, CUDA folder, compiler or job count: the script finds and counts them
// where it runs, and says in one line what is missing there (issue 27).
TorchPlan t4g_planned_on_x86() {
  probe::HostReport host = testing::x86_cuda128_host();
  host.cuda_toolkits[0].root = "/opt/nvidia/cuda-12.8";
  host.cuda_toolkits[0].nvcc = "/opt/nvidia/cuda-12.8/bin/nvcc";
  host.compilers = {{"/opt/gcc-11/bin/g++", probe::CompilerKind::gcc, "11.4.0", 11}};
  host.pythons = {{"/opt/py/bin/python3.10", "3.10.12", std::nullopt, ""}};
  TorchVariant v;
  v.torch = "2.9.1";
  v.cuda = cuda::CudaVersion{12, 8};
  v.python = "3.10";
  v.arch = {"T4G"};
  return resolve_torch_plan(v, host);
}

TEST(TorchScript, AnotherMachineFindsItsOwnTools) {
  TorchPlan p = t4g_planned_on_x86();
  ASSERT_FALSE(p.has_errors()) << render_problems(p);
  ASSERT_EQ(p.platform, "aarch64");
  ASSERT_FALSE(p.for_this_host());
  const std::string script = render_plan_script(p);
  for (const std::string host_path :
       {"/opt/py/bin/python3.10", "/opt/nvidia/cuda-12.8", "/opt/gcc-11"})
    EXPECT_EQ(script.find(host_path), std::string::npos) << host_path << "\n" << script;
  EXPECT_EQ(script.find("export MAX_JOBS=" + std::to_string(p.jobs)), std::string::npos) << script;
  for (const char* want :
       {"PYTHON=\"${PYTHON:-python3.10}\"\n",
        "export CUDA_HOME=\"${CUDA_HOME:-/usr/local/cuda-12.8}\"\n",
        "export CUDACXX=\"${CUDACXX:-$CUDA_HOME/bin/nvcc}\"\n",
        "export CUDAHOSTCXX=\"${CUDAHOSTCXX:-$(command -v g++ || true)}\"\n",
        "export MAX_JOBS=\"${MAX_JOBS:-$(tailor_max_jobs)}\"\n", "  \"$PYTHON\" -m venv "})
    EXPECT_NE(script.find(want), std::string::npos) << want << "\n" << script;
  const std::string path = write_script(p, "t4g_from_x86.sh");
  EXPECT_TRUE(run_command({"bash", "-n", path}).ok());
  if (!find_in_path("shellcheck").empty()) {
    auto r = run_command({"shellcheck", "-s", "bash", path}, std::chrono::seconds(60));
    EXPECT_TRUE(r.ok()) << r.out << r.err;
  }

  // Run it where uname says aarch64, with fake tools that record what the build saw.
  namespace fs = std::filesystem;
  fs::path root = fs::temp_directory_path() / ("tailor_script_host_" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "bin");
  fs::create_directories(root / "cuda" / "bin");
  const std::string log = (root / "calls.log").string();
  auto tool = [&](const fs::path& at, const std::string& body) {
    std::ofstream(at) << "#!/bin/sh\n" << body;
    fs::permissions(at, fs::perms::owner_all);
  };
  tool(root / "bin" / "uname", "echo aarch64\n");
  tool(root / "bin" / "g++", "echo 11\n");
  tool(root / "bin" / "git",
       "[ \"$1\" = clone ] && for a; do last=$a; done && mkdir -p \"$last\"\nexit 0\n");
  tool(root / "cuda" / "bin" / "nvcc", "echo 'Cuda compilation tools, release 12.8, V12.8.93'\n");
  tool(root / "bin" / "python3.10",
       "if [ \"$1\" = -c ]; then echo 3.10; exit 0; fi\n"
       "echo \"$(basename \"$0\") $1 $2 MAX_JOBS=$MAX_JOBS CUDACXX=$CUDACXX "
       "CUDAHOSTCXX=$CUDAHOSTCXX\" >> '" +
           log +
           "'\n"
           "if [ \"$1\" = -m ] && [ \"$2\" = venv ]; then mkdir -p \"$3/bin\" && cp \"$0\" "
           "\"$3/bin/python\"; fi\n");
  auto run = [&](const std::string& env) {
    return run_command(
        {"bash", "-c",
         "cd \"$1\" && env PATH=\"$1/bin:$PATH\" CUDA_HOME=\"$1/cuda\" " + env + " bash \"$2\"",
         "tailor", root.string(), path},
        std::chrono::seconds(60));
  };
  auto ok = run("");
  EXPECT_TRUE(ok.ok()) << ok.out << ok.err;
  std::ifstream in(log);
  std::vector<std::string> calls;
  for (std::string line; std::getline(in, line);) calls.push_back(line);
  ASSERT_EQ(calls.size(), 3u) << ok.out << ok.err;
  EXPECT_EQ(calls[0].rfind("python3.10 -m venv MAX_JOBS=", 0), 0u) << calls[0];
  EXPECT_NE(calls[2].find("CUDACXX=" + (root / "cuda" / "bin" / "nvcc").string()),
            std::string::npos)
      << calls[2];
  EXPECT_NE(calls[2].find("CUDAHOSTCXX=" + (root / "bin" / "g++").string()), std::string::npos)
      << calls[2];
  EXPECT_EQ(calls[2].find("MAX_JOBS= "), std::string::npos) << calls[2];
  EXPECT_EQ(calls[2].find("MAX_JOBS=0 "), std::string::npos) << calls[2];

  auto no_python = run("PYTHON=/nowhere/python3.10");
  EXPECT_EQ(no_python.exit_code, 1);
  EXPECT_EQ(no_python.err,
            "tailor: error: /nowhere/python3.10 not found: install Python 3.10 with its venv "
            "module, or set "
            "PYTHON=/path/to/python3.10\n");
  auto bad_jobs = run("MAX_JOBS=lots");
  EXPECT_EQ(bad_jobs.exit_code, 1);
  EXPECT_EQ(bad_jobs.err,
            "tailor: error: MAX_JOBS='lots' is not a positive whole number: set MAX_JOBS=N\n");
  auto no_cuda = run("CUDA_HOME=/nowhere/cuda");
  EXPECT_EQ(no_cuda.exit_code, 1);
  EXPECT_EQ(no_cuda.err,
            "tailor: error: nvcc not found at /nowhere/cuda/bin/nvcc: install CUDA 12.8 or set "
            "CUDA_HOME to its folder\n");
  fs::remove_all(root);
}

// A plan of this host keeps what this host resolved.
TEST(TorchScript, ThisHostKeepsItsOwnPaths) {
  TorchPlan p = graviton_t4g_plan();
  ASSERT_TRUE(p.for_this_host());
  EXPECT_TRUE(build_host_variables(p).empty());
  const std::string script = render_plan_script(p);
  EXPECT_NE(script.find("export CUDA_HOME=/usr/local/cuda-12.6\n"), std::string::npos) << script;
  EXPECT_NE(script.find("export MAX_JOBS=" + std::to_string(p.jobs) + "\n"), std::string::npos)
      << script;
  EXPECT_NE(script.find("  /usr/bin/python3.10 -m venv "), std::string::npos) << script;
  EXPECT_EQ(script.find("PYTHON="), std::string::npos) << script;
}

TEST(TorchCatalogLoaders, BrokenDataNamesTheField) {
  TorchCatalog c;
  auto r = load_features("[[feature]]\nname = \"x\"\nvars = [\"USE_X\"]\n", c);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "data/pytorch/features.toml: feature[0].default_x86_64: missing (expected a boolean)");
  auto bad = load_cpu_targets("[[target]\n", c);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("data/pytorch/cpu_targets.toml:1"), std::string::npos)
      << bad.error().message;
  const TorchCatalog& cat = torch_catalog();
  EXPECT_EQ(cat.find_cpu_target("AVX2")->name, "x86-64-v3");
  EXPECT_EQ(cat.max_gcc_for({12, 6}), 13);
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
  TorchPlan p = graviton_t4g_plan();
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
  // The advice runs as printed: mkswap and swapon name the file.
  EXPECT_NE(by.at("swap")->fix.find("mkswap /swapfile && sudo swapon /swapfile"), std::string::npos)
      << by.at("swap")->fix;
  EXPECT_FALSE(by.at("python-deps")->ok);
  EXPECT_NE(by.at("python-deps")->detail.find("setuptools<75 (have 80.9.0)"), std::string::npos)
      << by.at("python-deps")->detail;
  EXPECT_NE(by.at("python-deps")->detail.find("numpy<2"), std::string::npos);
  EXPECT_FALSE(by.at("submodules")->ok);
  EXPECT_NE(by.at("submodules")->fix.find("git submodule update --init --recursive"),
            std::string::npos);
  EXPECT_TRUE(by.at("nvcc")->ok);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(render_doctor(r).find("FAIL"), std::string::npos);
}

}  // namespace
}  // namespace tailor::plan
