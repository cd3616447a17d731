#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <fstream>

#include "support/fake_host.h"
#include "probe/probe.h"

namespace tailor::probe {
namespace {

const char* k_torch_line =
    "TAILOR_PROBE {\"version\": \"3.11.7\", \"executable\": \"/root/.pyenv/versions/3.11.7/bin/python3\", "
    "\"torch\": {\"version\": \"2.11.0+cu130\", \"cuda\": \"13.0\", \"path\": \"/x/torch\", "
    "\"arch_list\": [\"sm_75\", \"sm_80\", \"sm_90\", \"sm_100\", \"sm_120\"], \"cxx11_abi\": true}}\n";

TEST(PythonProbeOutput, ParsesTorch) {
  auto py = parse_python_probe(std::string("some site hook chatter\n") + k_torch_line);
  ASSERT_TRUE(py) << py.error().message;
  EXPECT_EQ(py->version, "3.11.7");
  ASSERT_TRUE(py->torch);
  EXPECT_EQ(py->torch->version, "2.11.0+cu130");
  EXPECT_EQ(py->torch->cuda_version, "13.0");
  EXPECT_EQ(py->torch->arch_list.size(), 5u);
  EXPECT_EQ(py->torch->arch_list[2], "sm_90");
  EXPECT_EQ(py->torch->cxx11_abi, true);
}

TEST(PythonProbeOutput, CpuTorchHasNoCudaVersion) {
  auto py = parse_python_probe(
      "TAILOR_PROBE {\"version\": \"3.12.1\", \"torch\": {\"version\": \"2.11.0+cpu\", \"cuda\": null, "
      "\"arch_list\": [], \"cxx11_abi\": null}}");
  ASSERT_TRUE(py);
  ASSERT_TRUE(py->torch);
  EXPECT_EQ(py->torch->cuda_version, "");
  EXPECT_FALSE(py->torch->cxx11_abi);
}

TEST(PythonProbeOutput, NoTorch) {
  auto py = parse_python_probe(
      "TAILOR_PROBE {\"version\": \"3.10.0\", \"torch_error\": \"ModuleNotFoundError: No module named 'torch'\"}");
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
  f.executables = {"/home/u/.pyenv/shims/python3", "/usr/bin/python3.11", "/home/u/.pyenv/versions/3.12.1/bin/python3", "/opt/py/bin/python3"};
  f.links["/usr/bin/python3"] = "/usr/bin/python3.11";
  f.links["/venv/bin/python3"] = "/usr/bin/python3.11";
  f.links["/venv/bin/python"] = "/usr/bin/python3.11";
  f.links["/usr/bin/python3.11-config"] = "/usr/bin/python3.11-config";
  f.files["/venv/pyvenv.cfg"] = "home = /usr/bin\n";
  test::FakeCommandRunner runner;
  for (const char* p : {"/venv/bin/python3", "/usr/bin/python3", "/home/u/.pyenv/versions/3.12.1/bin/python3",
                        "/opt/py/bin/python3"})
    runner.answer(p, "TAILOR_PROBE {\"version\": \"3.11.2\"}\n");
  std::vector<std::string> notes;
  auto pys = probe_pythons(f, runner, {"/opt/py/bin/python3", "/missing/python"}, notes);
  std::vector<std::string> paths;
  for (const auto& p : pys) paths.push_back(p.path);
  EXPECT_EQ(paths, (std::vector<std::string>{"/opt/py/bin/python3", "/venv/bin/python3", "/usr/bin/python3",
                                             "/home/u/.pyenv/versions/3.12.1/bin/python3"}));
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("/missing/python"), std::string::npos);
}

}  // namespace
}  // namespace tailor::probe
