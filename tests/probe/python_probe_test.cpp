#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "probe/probe.h"
#include "support/fake_host.h"
#include "support/fixtures.h"

namespace tailor::probe {
namespace {

const char* k_torch_line =
    "TAILOR_PROBE {\"version\": \"3.11.7\", \"executable\": "
    "\"/root/.pyenv/versions/3.11.7/bin/python3\", "
    "\"torch\": {\"version\": \"2.11.0+cu130\", \"cuda\": \"13.0\", \"path\": \"/x/torch\", "
    "\"arch_list\": [\"sm_75\", \"sm_80\", \"sm_90\", \"sm_100\", \"sm_120\"], \"cxx11_abi\": "
    "true}}\n";

TEST(PythonProbeOutput, ParsesTorch) {
  auto py = parse_python_probe(std::string("some site hook chatter\n") + k_torch_line);
  ASSERT_TRUE(py) << py.error().message;
  EXPECT_EQ(py->version, "3.11.7");
  ASSERT_TRUE(py->torch);
  EXPECT_EQ(py->torch->version, "2.11.0+cu130");
  EXPECT_EQ(py->torch->cuda_version, (cuda::CudaVersion{13, 0}));
  EXPECT_EQ(py->torch->arch_list.size(), 5u);
  EXPECT_EQ(py->torch->arch_list[2], "sm_90");
  EXPECT_EQ(py->torch->cxx11_abi, true);
}

TEST(PythonProbeOutput, CpuTorchHasNoCudaVersion) {
  auto py = parse_python_probe(
      "TAILOR_PROBE {\"version\": \"3.12.1\", \"torch\": {\"version\": \"2.11.0+cpu\", \"cuda\": "
      "null, "
      "\"arch_list\": [], \"cxx11_abi\": null}}");
  ASSERT_TRUE(py);
  ASSERT_TRUE(py->torch);
  EXPECT_EQ(py->torch->cuda_version, std::nullopt);
  EXPECT_FALSE(py->torch->cxx11_abi);
}

TEST(PythonProbeOutput, ATorchCudaThatIsNoCudaVersionIsOneError) {
  auto py = parse_python_probe(
      "TAILOR_PROBE {\"version\": \"3.12.1\", \"torch\": {\"version\": \"2.11.0\", \"cuda\": "
      "\"thirteen\"}}");
  ASSERT_FALSE(py);
  EXPECT_EQ(
      py.error().message,
      "python probe: torch's CUDA: not a CUDA version: 'thirteen' (expected e.g. 12.8 or cu128)");
}

TEST(PythonProbeOutput, NoTorch) {
  auto py = parse_python_probe(
      "TAILOR_PROBE {\"version\": \"3.10.0\", \"torch_error\": \"ModuleNotFoundError: No module "
      "named 'torch'\"}");
  ASSERT_TRUE(py);
  EXPECT_FALSE(py->torch);
  EXPECT_NE(py->torch_error.find("No module named"), std::string::npos);
}

TEST(PythonProbeOutput, Malformed) {
  EXPECT_FALSE(parse_python_probe(""));
  EXPECT_FALSE(parse_python_probe("TAILOR_PROBE {not json"));
  EXPECT_FALSE(parse_python_probe("TAILOR_PROBE [1,2]"));
  EXPECT_FALSE(parse_python_probe("TAILOR_PROBE {\"torch\": {}}"));
}

TEST(ProbePython, MissingInterpreterIsNullopt) {
  test::FakeCommandRunner runner;
  EXPECT_FALSE(probe_python("/nonexistent/python3", runner));
}

TEST(ProbePython, TimeoutIsReportedNotFatal) {
  test::FakeCommandRunner runner;
  runner.time_out("/usr/bin/python3");
  auto py = probe_python("/usr/bin/python3", runner);
  ASSERT_TRUE(py);
  EXPECT_FALSE(py->torch);
  EXPECT_NE(py->torch_error.find("timed out"), std::string::npos);
}

// The real runner kills an interpreter that hangs (a stuck import), and the probe
// reports it instead of waiting.
TEST(ProbePython, RealHangingInterpreterTimesOut) {
  std::string script = std::string(TAILOR_BINARY_DIR) + "/probe_test_hanging_python";
  {
    std::ofstream out(script);
    out << "#!/bin/sh\nsleep 30\n";
  }
  ASSERT_EQ(::chmod(script.c_str(), 0755), 0);
  SystemCommandRunner runner;
  auto start = std::chrono::steady_clock::now();
  auto py = probe_python(script, runner, std::chrono::seconds(1));
  auto took = std::chrono::steady_clock::now() - start;
  std::remove(script.c_str());
  ASSERT_TRUE(py);
  EXPECT_NE(py->torch_error.find("timed out after 1 s"), std::string::npos) << py->torch_error;
  EXPECT_LT(took, std::chrono::seconds(20));
}

TEST(ProbePython, Python2SaysWhy) {
  test::FakeCommandRunner runner;
  CommandResult r;
  r.started = true;
  r.exit_code = 1;
  r.err = "  File \"<string>\", line 12\nSyntaxError: invalid syntax\n";
  runner.by_program["/usr/bin/python2"] = r;
  auto py = probe_python("/usr/bin/python2", runner);
  ASSERT_TRUE(py);
  EXPECT_NE(py->torch_error.find("SyntaxError"), std::string::npos);
}

TEST(ProbePythons, DeduplicatesByRealpathKeepsVenvsAndProbesExtras) {
  test::FakeHostFiles f;
  f.env["PATH"] = "/home/u/.pyenv/shims:/venv/bin:/usr/bin";
  f.env["HOME"] = "/home/u";
  f.executables = {"/home/u/.pyenv/shims/python3", "/usr/bin/python3.11",
                   "/home/u/.pyenv/versions/3.12.1/bin/python3", "/opt/py/bin/python3"};
  f.links["/usr/bin/python3"] = "/usr/bin/python3.11";
  f.links["/venv/bin/python3"] = "/usr/bin/python3.11";
  f.links["/venv/bin/python"] = "/usr/bin/python3.11";
  f.links["/usr/bin/python3.11-config"] = "/usr/bin/python3.11-config";
  f.files["/venv/pyvenv.cfg"] = "home = /usr/bin\n";
  test::FakeCommandRunner runner;
  for (const char* p : {"/venv/bin/python3", "/usr/bin/python3",
                        "/home/u/.pyenv/versions/3.12.1/bin/python3", "/opt/py/bin/python3"})
    runner.answer(p, "TAILOR_PROBE {\"version\": \"3.11.2\"}\n");
  std::vector<std::string> notes;
  auto pys = probe_pythons(f, runner, {"/opt/py/bin/python3", "/missing/python"}, notes);
  std::vector<std::string> paths;
  for (const auto& p : pys) paths.push_back(p.path);
  EXPECT_EQ(paths, (std::vector<std::string>{"/opt/py/bin/python3", "/venv/bin/python3",
                                             "/usr/bin/python3",
                                             "/home/u/.pyenv/versions/3.12.1/bin/python3"}));
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("/missing/python"), std::string::npos);
}

// The cached probe: the stamp script runs every time; the full probe (the torch import)
// only when the stamp differs from the cached entry's.
struct CachedProbe {
  test::FakeCommandRunner runner;
  std::string stamp =
      "TAILOR_STAMP {\"torch\": \"/x/torch\", \"files\": [[\"version.py\", 7, 100, 1]]}\n";
  int full_probes = 0;
  CachedProbe() {
    runner.handler = [this](const CommandSpec& spec) -> std::optional<CommandResult> {
      CommandResult r;
      r.started = true;
      r.exit_code = 0;
      if (spec.argv.size() == 3 && spec.argv[2].find("TAILOR_STAMP") != std::string::npos) {
        r.out = stamp;
      } else {
        ++full_probes;
        r.out = k_torch_line;
      }
      return r;
    };
  }
};

TEST(ProbePythonCached, SecondProbeWithTheSameStampSkipsTheTorchImport) {
  auto dir = tailor::test::scratch_dir("probe_cache_same").string();
  CachedProbe f;
  bool cached = true;
  auto first =
      probe_python_cached("/usr/bin/python3", f.runner, std::chrono::seconds(30), dir, &cached);
  ASSERT_TRUE(first && first->torch);
  EXPECT_FALSE(cached);
  EXPECT_EQ(f.full_probes, 1);
  auto second =
      probe_python_cached("/usr/bin/python3", f.runner, std::chrono::seconds(30), dir, &cached);
  ASSERT_TRUE(second && second->torch);
  EXPECT_TRUE(cached);
  EXPECT_EQ(f.full_probes, 1);
  EXPECT_EQ(second->path, "/usr/bin/python3");
  EXPECT_EQ(second->version, "3.11.7");
  EXPECT_EQ(second->torch->version, "2.11.0+cu130");
  EXPECT_EQ(second->torch->cuda_version, (cuda::CudaVersion{13, 0}));
  EXPECT_EQ(second->torch->arch_list, first->torch->arch_list);
  EXPECT_EQ(second->torch->cxx11_abi, std::optional<bool>(true));
  EXPECT_EQ(second->torch->path, "/x/torch");
}

TEST(ProbePythonCached, AChangedTorchFileProbesAgain) {
  auto dir = tailor::test::scratch_dir("probe_cache_changed").string();
  CachedProbe f;
  bool cached = true;
  ASSERT_TRUE(
      probe_python_cached("/usr/bin/python3", f.runner, std::chrono::seconds(30), dir, &cached));
  f.stamp =
      "TAILOR_STAMP {\"torch\": \"/x/torch\", \"files\": [[\"version.py\", 8, 100, 2]]}\n";  // reinstalled
  ASSERT_TRUE(
      probe_python_cached("/usr/bin/python3", f.runner, std::chrono::seconds(30), dir, &cached));
  EXPECT_FALSE(cached);
  EXPECT_EQ(f.full_probes, 2);
  // Another interpreter name has its own entry.
  ASSERT_TRUE(probe_python_cached("/opt/venv/bin/python", f.runner, std::chrono::seconds(30), dir,
                                  &cached));
  EXPECT_FALSE(cached);
  EXPECT_EQ(f.full_probes, 3);
}

TEST(ProbePythonCached, NoTorchOrABrokenStampIsNeverCached) {
  auto dir = tailor::test::scratch_dir("probe_cache_none").string();
  CachedProbe f;
  bool cached = true;
  f.stamp = "TAILOR_STAMP {\"version\": \"3.11.7\"}\n";  // find_spec found no torch
  probe_python_cached("/usr/bin/python3", f.runner, std::chrono::seconds(30), dir, &cached);
  probe_python_cached("/usr/bin/python3", f.runner, std::chrono::seconds(30), dir, &cached);
  EXPECT_FALSE(cached);
  EXPECT_EQ(f.full_probes, 2);
  f.stamp = "Traceback (most recent call last):\n";  // the stamp script failed
  probe_python_cached("/usr/bin/python3", f.runner, std::chrono::seconds(30), dir, &cached);
  EXPECT_FALSE(cached);
  EXPECT_EQ(f.full_probes, 3);
}

TEST(ProbePythonCached, ACorruptEntryIsProbedOver) {
  auto dir = tailor::test::scratch_dir("probe_cache_corrupt").string();
  CachedProbe f;
  bool cached = true;
  ASSERT_TRUE(
      probe_python_cached("/usr/bin/python3", f.runner, std::chrono::seconds(30), dir, &cached));
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    std::ofstream(e.path()) << "{\"stamp\": 3, \"probe\": [";
  }
  auto py =
      probe_python_cached("/usr/bin/python3", f.runner, std::chrono::seconds(30), dir, &cached);
  ASSERT_TRUE(py && py->torch);
  EXPECT_FALSE(cached);
  EXPECT_EQ(f.full_probes, 2);
}

// --print-env writes no file: a probe that may not write reads the cache but adds nothing.
TEST(ProbePythonCached, MayNotWriteLeavesNoEntry) {
  auto dir = tailor::test::scratch_dir("probe_cache_readonly").string();
  CachedProbe f;
  bool cached = true;
  ASSERT_TRUE(probe_python_cached("/usr/bin/python3", f.runner, std::chrono::seconds(30), dir,
                                  &cached, false));
  EXPECT_FALSE(cached);
  EXPECT_FALSE(std::filesystem::exists(dir) && !std::filesystem::is_empty(dir));
  ASSERT_TRUE(probe_python_cached("/usr/bin/python3", f.runner, std::chrono::seconds(30), dir,
                                  &cached, true));
  ASSERT_TRUE(probe_python_cached("/usr/bin/python3", f.runner, std::chrono::seconds(30), dir,
                                  &cached, false));
  EXPECT_TRUE(cached);  // an existing entry is still read
  EXPECT_EQ(f.full_probes, 2);
}

// The real interpreter, when it has a torch: the cached answer equals the full probe's.
TEST(ProbePythonCached, RealInterpreterGivesTheSameAnswerFromTheCache) {
  SystemCommandRunner runner;
  auto dir = tailor::test::scratch_dir("probe_cache_real").string();
  bool cached = true;
  auto full = probe_python_cached("python3", runner, std::chrono::seconds(120), dir, &cached);
  if (!full || !full->torch) GTEST_SKIP() << "python3 with torch is not installed here";
  EXPECT_FALSE(cached);
  auto again = probe_python_cached("python3", runner, std::chrono::seconds(120), dir, &cached);
  ASSERT_TRUE(again && again->torch);
  EXPECT_TRUE(cached);
  EXPECT_EQ(again->version, full->version);
  EXPECT_EQ(again->torch->version, full->torch->version);
  EXPECT_EQ(again->torch->cuda_version, full->torch->cuda_version);
  EXPECT_EQ(again->torch->arch_list, full->torch->arch_list);
  EXPECT_EQ(again->torch->cxx11_abi, full->torch->cxx11_abi);
  EXPECT_EQ(again->torch->path, full->torch->path);
}

}  // namespace
}  // namespace tailor::probe
