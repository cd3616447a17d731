// tailor stack's pure parts: the facts, pip's tags, report and error text, the lock's round
// trip and its refusals, the install script, and how a verification is judged.
#include "stack/stack.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace tailor::stack {
namespace {

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

TEST(StackFacts, PytorchIndexUrlFromData) {
  EXPECT_EQ(pytorch_index_url(cuda::CudaVersion{13, 0}), "https://download.pytorch.org/whl/cu130");
  EXPECT_EQ(pytorch_index_url(cuda::CudaVersion{12, 6}), "https://download.pytorch.org/whl/cu126");
  EXPECT_EQ(pytorch_index_url(std::nullopt), "https://download.pytorch.org/whl/cpu");
}

TEST(StackFacts, CudaFlagIsReadOnce) {
  EXPECT_EQ(*parse_cuda_flag("13.0"), (cuda::CudaVersion{13, 0}));
  EXPECT_EQ(*parse_cuda_flag("cu126"), (cuda::CudaVersion{12, 6}));
  EXPECT_EQ(*parse_cuda_flag(""), std::nullopt);
  auto bad = parse_cuda_flag("13");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "--cuda 13: expected MAJOR.MINOR, e.g. 13.0");
  EXPECT_FALSE(parse_cuda_flag("13.0; rm -rf /"));
}

TEST(StackFacts, CudaRuntimePackages) {
  EXPECT_TRUE(is_cuda_runtime_package("nvidia-cublas"));
  EXPECT_TRUE(is_cuda_runtime_package("nvidia-cudnn-cu12"));
  EXPECT_TRUE(is_cuda_runtime_package("cuda-bindings"));
  EXPECT_FALSE(is_cuda_runtime_package("nvidia-dali-cuda120"));  // its own device code
  EXPECT_FALSE(is_cuda_runtime_package("numpy"));
  EXPECT_EQ(cuda_runtime_major("nvidia-cudnn-cu12", "9.10.2.21"), "12");
  EXPECT_EQ(cuda_runtime_major("nvidia-cublas", "13.1.0.3"), "13");
  EXPECT_EQ(cuda_runtime_major("nvidia-cufft", "12.0.0.15"), "");  // cuFFT 12 ships with CUDA 13
}

TEST(StackTarget, PipPlatformTagsFollowGlibc) {
  Target t;
  t.platform = "aarch64";
  t.glibc = "2.28";
  auto tags = pip_platform_tags(t);
  EXPECT_EQ(tags.front(), "manylinux_2_28_aarch64");
  EXPECT_TRUE(contains(tags, "manylinux_2_17_aarch64"));
  EXPECT_TRUE(contains(tags, "manylinux2014_aarch64"));
  EXPECT_FALSE(contains(tags, "manylinux_2_31_aarch64"));
  EXPECT_FALSE(contains(tags, "manylinux_2_28_x86_64"));
  EXPECT_EQ(tags.back(), "linux_aarch64");
  t.platform = "x86_64";
  t.glibc = "2.17";
  tags = pip_platform_tags(t);
  EXPECT_TRUE(contains(tags, "manylinux_2_5_x86_64"));
  EXPECT_TRUE(contains(tags, "manylinux1_x86_64"));
  EXPECT_TRUE(contains(tags, "manylinux2010_x86_64"));
  EXPECT_TRUE(contains(tags, "manylinux2014_x86_64"));
  EXPECT_FALSE(contains(tags, "manylinux_2_24_x86_64"));
}

TEST(StackTarget, GpuLabel) {
  Target t;
  t.gpu_text = "T4G";
  t.gpus = {{7, 5}};
  EXPECT_EQ(t.gpu_label(), "T4G (7.5)");
  t.gpu_text = "7.5";
  EXPECT_EQ(t.gpu_label(), "7.5");
}

// The shape pip 23-25 writes (`pip install --dry-run --report`), trimmed.
constexpr std::string_view k_report = R"({
  "version": "1", "pip_version": "23.2.1",
  "install": [
    {"download_info": {"url": "https://files.example/packages/torch-2.9.1-cp310-cp310-manylinux_2_28_aarch64.whl",
                       "archive_info": {"hash": "sha256=aa", "hashes": {"sha256": "0123"}}},
     "is_direct": false, "requested": true,
     "metadata": {"name": "torch", "version": "2.9.1", "requires_dist": ["filelock", "nvidia-cublas-cu12==12.8.4.1; platform_machine == \"x86_64\""]}},
    {"download_info": {"url": "http://127.0.0.1:8000/files/torch-2.11.0%2Bcu130-py3-none-linux_aarch64.whl%2F%zz%2"},
     "metadata": {"name": "torch", "version": "2.11.0+cu130"}},
    {"download_info": {"url": "http://127.0.0.1:8000/files/fused_ops-0.1.0.tar.gz#sha256=beef",
                       "archive_info": {"hash": "sha256=beef"}},
     "requested": false, "metadata": {"name": "Fused_Ops", "version": "0.1.0"}}
  ],
  "environment": {"platform_machine": "aarch64"}
})";

TEST(PipReport, Parses) {
  auto dists = parse_pip_report(k_report);
  ASSERT_TRUE(dists) << dists.error().message;
  ASSERT_EQ(dists->size(), 3u);
  EXPECT_EQ((*dists)[1].filename,
            "torch-2.11.0+cu130-py3-none-linux_aarch64.whl%2F%zz%2");  // '/' stays encoded
  EXPECT_EQ((*dists)[1].sha256, "");
  const auto& torch = (*dists)[0];
  EXPECT_EQ(torch.key, "torch");
  EXPECT_EQ(torch.sha256, "0123");  // `hashes` wins over the legacy `hash`
  EXPECT_EQ(torch.filename, "torch-2.9.1-cp310-cp310-manylinux_2_28_aarch64.whl");
  EXPECT_TRUE(torch.wheel);
  EXPECT_TRUE(torch.requested);
  EXPECT_EQ(torch.requires_dist.size(), 2u);
  const auto& sdist = (*dists)[2];
  EXPECT_EQ(sdist.key, "fused-ops");
  EXPECT_EQ(sdist.sha256, "beef");
  EXPECT_EQ(sdist.filename, "fused_ops-0.1.0.tar.gz");
  EXPECT_FALSE(sdist.wheel);
}

TEST(PipReport, RefusesWhatItCannotRead) {
  EXPECT_EQ(parse_pip_report("not json").error().message, "pip's report is not JSON");
  EXPECT_EQ(parse_pip_report(R"({"version": "2", "install": []})").error().message,
            "pip's report has version 2, expected 1");
  EXPECT_EQ(parse_pip_report(R"({"version": "1"})").error().message,
            "pip's report has no install list");
  EXPECT_FALSE(parse_pip_report(R"({"version": "1", "install": [{"metadata": {}}]})"));
  EXPECT_FALSE(parse_pip_report(
      R"({"version": "1", "install": [{"metadata": {"name": ""}, "download_info": {}}]})"));
  EXPECT_FALSE(parse_pip_report(R"({"version": "1", "install": [5]})"));
  // A hostile index: a URL whose file name would climb out of the cache.
  EXPECT_EQ(
      parse_pip_report(R"({"version": "1", "install": [{"metadata": {"name": "x", "version": "1"},
      "download_info": {"url": "http://h/a/.."}}]})")
          .error()
          .message,
      "pip's report: x 1: the URL names no usable file");
}

TEST(PipErrors, UnsatisfiedRequirementAndFirstLine) {
  std::string err =
      "ERROR: Ignored the following versions that require a different python version: 3.5 "
      "Requires-Python >=3.11\n"
      "ERROR: Could not find a version that satisfies the requirement "
      "nvidia-cudnn-cu12==9.10.2.21; platform_system == "
      "\"Linux\" (from torch) (from versions: 9.0.0.312)\n"
      "ERROR: No matching distribution found for nvidia-cudnn-cu12==9.10.2.21; platform_system == "
      "\"Linux\"\n";
  EXPECT_EQ(unsatisfied_requirement(err), "nvidia-cudnn-cu12");
  EXPECT_EQ(pip_error_line(err).substr(0, 41), "ERROR: No matching distribution found for");
  EXPECT_EQ(unsatisfied_requirement("ERROR: No matching distribution found for Fused_Ops\n"),
            "fused-ops");
  EXPECT_EQ(unsatisfied_requirement("ERROR: metadata-generation-failed\n"), "");
  EXPECT_EQ(pip_error_line("  \nERROR: metadata-generation-failed\n"),
            "ERROR: metadata-generation-failed");
  EXPECT_EQ(pip_error_line(""), "pip failed with no message");
}

StackResult sample() {
  StackResult r;
  r.target.platform = "x86_64";
  r.target.python = "3.11";
  r.target.glibc = "2.36";
  r.target.gpu_text = "T4";  // not T4G: that implies aarch64
  r.target.gpus = {{7, 5}};
  r.torch = {"2.11.0+cu130", cuda::CudaVersion{13, 0}, "sm_75 sm_80", "installed in python3", true};
  r.torch_python = "python3";
  r.index.index_url = "http://127.0.0.1:1/simple";
  Row torch;
  torch.name = torch.key = "torch";
  torch.version = "2.11.0+cu130";
  torch.kind = Kind::torch;
  torch.outcome = Outcome::installed;
  torch.covers = "yes";
  Row k;
  k.name = k.key = "kern75";
  k.version = "1.0";
  k.kind = Kind::cuda;
  k.wheel = true;
  k.wheel_url = "http://127.0.0.1:1/files/kern75-1.0-py3-none-linux_x86_64.whl";
  k.wheel_sha256 = std::string(64, 'a');
  k.wheel_file = "kern75-1.0-py3-none-linux_x86_64.whl";
  k.targets = {"sm_75"};
  k.covers = "yes";
  k.reason = "has sm_75; runs on T4 (7.5)";
  k.requested = true;
  Row b;
  b.name = "fused_ops";
  b.key = "fused-ops";
  b.version = "0.1.0";
  b.kind = Kind::source;
  b.outcome = Outcome::build;
  b.buildable = "yes";
  b.sdist_url = "http://127.0.0.1:1/files/fused_ops-0.1.0.tar.gz";
  b.sdist_sha256 = std::string(64, 'b');
  b.sdist_file = "/cache/fused_ops-0.1.0.tar.gz";
  b.recipe = "generic";
  b.depends = {"torch"};
  r.rows = {torch, k, b};
  r.notes = {"a note"};
  return r;
}

TEST(StackLock, RoundTrips) {
  auto text = render_lock(sample());
  auto back = read_lock(text);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(render_lock(*back), text);
  EXPECT_EQ(back->rows.size(), 3u);
  EXPECT_EQ(back->rows[1].wheel_sha256, std::string(64, 'a'));
  EXPECT_EQ(back->rows[2].outcome, Outcome::build);
  EXPECT_EQ(back->target.gpus.front().str(), "7.5");
}

TEST(StackLock, RefusesBrokenLocks) {
  EXPECT_EQ(read_lock("{").error().message, "the lock is not JSON");
  EXPECT_EQ(read_lock(R"({"schema": "tailor.stack-lock/9"})").error().message,
            "the lock's schema is 'tailor.stack-lock/9', expected tailor.stack-lock/1");
  EXPECT_FALSE(read_lock(R"({"schema": "tailor.stack-lock/1", "target": 5})"));
  auto text = render_lock(sample());
  auto without_hash = text;
  without_hash.replace(without_hash.find(std::string(64, 'a')), 64, "abc");
  EXPECT_EQ(read_lock(without_hash).error().message,
            "the lock: kern75: a prebuilt package needs a wheel url and sha256");
  auto bad_outcome = text;
  bad_outcome.replace(bad_outcome.find("\"build\""), 7, "\"maybe\"");
  EXPECT_EQ(read_lock(bad_outcome).error().message, "the lock: fused_ops: unknown outcome 'maybe'");
  auto bad_gpu = text;
  bad_gpu.replace(bad_gpu.find("\"7.5\""), 5, "\"x.y\"");
  EXPECT_FALSE(read_lock(bad_gpu));
}

TEST(StackScript, InstallsExactlyAndPassesBashN) {
  auto r = sample();
  auto s = render_script(r);
  EXPECT_NE(
      s.find(
          "kern75 @ http://127.0.0.1:1/files/kern75-1.0-py3-none-linux_x86_64.whl --hash=sha256:" +
          std::string(64, 'a')),
      std::string::npos);
  EXPECT_NE(s.find("--require-hashes --index-url http://127.0.0.1:1/simple"), std::string::npos);
  EXPECT_NE(s.find("\"$TAILOR\" build \"$work/fused_ops-0.1.0.tar.gz\" --gpu T4"),
            std::string::npos);
  EXPECT_NE(s.find(std::string(64, 'b')), std::string::npos);  // the sdist's sha256 is checked
  EXPECT_NE(s.find("tailor-stack-torch.pth"), std::string::npos);
  EXPECT_EQ(s.find("exit 1\n[ -x"), std::string::npos);  // nothing unsupported: no refusal line
  auto path = std::filesystem::temp_directory_path() /
              ("tailor-stack-test-" + std::to_string(::getpid()) + ".sh");
  std::ofstream(path) << s;
  EXPECT_EQ(std::system(("bash -n " + path.string()).c_str()), 0);
  std::filesystem::remove(path);
  r.rows[1].outcome = Outcome::unsupported;
  r.rows[1].reason = "it's gone";
  s = render_script(r);
  EXPECT_NE(s.find("echo 'stack: kern75 cannot be installed: it'\\''s gone' >&2; exit 1"),
            std::string::npos);
}

// torch's coverage comes from the official arch list of its CUDA build and platform; a
// CUDA build tailor's data does not know is "unknown", never "prebuilt" (issue 27).
ResolvedDist torch_wheel(const std::string& version, const std::string& platform_tag) {
  ResolvedDist d;
  d.name = d.key = "torch";
  d.version = version;
  d.filename = "torch-" + version + "-cp312-cp312-" + platform_tag + ".whl";
  d.url = "https://download.example/whl/" + d.filename;
  d.sha256 = std::string(64, 'c');
  d.requested = true;
  return d;
}

Target x86_target() {
  Target t;
  t.platform = "x86_64";
  t.python = "3.12";
  t.glibc = "2.35";
  t.gpu_text = "8.6";
  t.gpus = {{8, 6}};
  return t;
}

TEST(StackTorch, ACudaBuildWithoutDataIsUnknownWithTheCommandThatDecidesIt) {
  Row row;
  TorchChoice choice;
  auto d = torch_wheel("2.99.0+cu199", "manylinux_2_28_x86_64");
  decide_torch(x86_target(), std::nullopt, d, {d}, row, choice);
  EXPECT_EQ(row.outcome, Outcome::unknown);
  EXPECT_EQ(outcome_key(row.outcome), "unknown");
  EXPECT_EQ(row.covers, "?");
  EXPECT_EQ(choice.cuda, (cuda::CudaVersion{19, 9}));
  EXPECT_NE(row.reason.find("CUDA 19.9 build; its arch list for x86_64 is not in tailor's data, so "
                            "whether it runs on 8.6 is unknown"),
            std::string::npos)
      << row.reason;
  EXPECT_NE(
      row.reason.find(
          "pip download --no-deps --only-binary=:all: --platform manylinux_2_28_x86_64 "
          "--python-version 3.12 -d . "
          "https://download.example/whl/torch-2.99.0+cu199-cp312-cp312-manylinux_2_28_x86_64.whl "
          "&& "
          "tailor inspect torch-2.99.0+cu199-cp312-cp312-manylinux_2_28_x86_64.whl --gpu 8.6"),
      std::string::npos)
      << row.reason;
  // The user's own spelling of the GPUs is carried, quoted for the shell where needed.
  Target t = x86_target();
  t.gpu_text = "A10G;H100";
  t.gpus = {{8, 6}, {9, 0}};
  Row row2;
  decide_torch(t, std::nullopt, d, {d}, row2, choice);
  EXPECT_NE(row2.reason.find("--gpu 'A10G;H100'`"), std::string::npos) << row2.reason;

  StackResult r;
  r.target = x86_target();
  r.rows = {row};
  EXPECT_FALSE(r.ok());
}

// A torch from the default index has no +cuNNN label: its CUDA is read from its METADATA's
// requirements that pip resolved for the target, never taken for a CPU build because the
// resolution has no nvidia-cuda-runtime (the issue's torch 2.12.1, pulling nvidia-cudnn-cu13).
TEST(StackTorch, ACudaTorchWithoutALabelIsReadFromItsMetadata) {
  auto dep = [](const std::string& key, const std::string& version) {
    ResolvedDist d;
    d.name = d.key = key;
    d.version = version;
    return d;
  };
  auto d = torch_wheel("2.12.1", "manylinux_2_28_x86_64");
  d.requires_dist = {"filelock", "nvidia-cudnn-cu13==9.13.0.50; platform_system == \"Linux\"",
                     "nvidia-cuda-runtime-cu12==12.8.90; platform_machine == \"aarch64\""};
  // Only cuDNN was resolved for this target: CUDA 13, minor release unknown.
  std::vector<ResolvedDist> all = {d, dep("filelock", "3.20.0"),
                                   dep("nvidia-cudnn-cu13", "9.13.0.50")};
  auto stated = torch_cuda_from_metadata(d, all);
  EXPECT_FALSE(stated.release);
  EXPECT_EQ(stated.major_only, 13);
  Row row;
  TorchChoice choice;
  decide_torch(x86_target(), std::nullopt, d, all, row, choice);
  EXPECT_EQ(row.outcome, Outcome::unknown);
  EXPECT_EQ(row.reason.find("CPU-only"), std::string::npos) << row.reason;
  EXPECT_NE(row.reason.find("a CUDA 13 build (its METADATA requires nvidia-cudnn-cu13 9.13.0.50)"),
            std::string::npos)
      << row.reason;
  // With the runtime resolved: its release.
  d.requires_dist.push_back("nvidia-cuda-runtime==13.0.96");
  all.push_back(dep("nvidia-cuda-runtime", "13.0.96"));
  auto full = torch_cuda_from_metadata(d, all);
  ASSERT_TRUE(full.release);
  EXPECT_EQ(*full.release, (cuda::CudaVersion{13, 0}));
  Row row2;
  decide_torch(x86_target(), std::nullopt, d, all, row2, choice);
  EXPECT_EQ(row2.outcome, Outcome::prebuilt) << row2.reason;
  // A runtime in the resolution that torch does not require says nothing of torch.
  auto cpu = torch_wheel("2.9.1", "manylinux_2_28_aarch64");
  EXPECT_FALSE(torch_cuda_from_metadata(cpu, {cpu, dep("nvidia-cuda-runtime", "13.0.96")}).release);
}

TEST(StackTorch, AKnownCudaBuildIsJudgedByItsOfficialList) {
  Row row;
  TorchChoice choice;
  auto d = torch_wheel("2.11.0+cu130", "manylinux_2_28_x86_64");
  decide_torch(x86_target(), std::nullopt, d, {d}, row, choice);
  EXPECT_EQ(row.outcome, Outcome::prebuilt);
  EXPECT_EQ(row.covers, "yes");
  Target t4g = x86_target();
  t4g.platform = "aarch64";
  t4g.gpu_text = "T4G";
  t4g.gpus = {{7, 5}};
  Row arm;
  decide_torch(t4g, std::nullopt, torch_wheel("2.11.0+cu130", "manylinux_2_28_aarch64"), {}, arm,
               choice);
  EXPECT_EQ(arm.outcome, Outcome::build);
  EXPECT_EQ(arm.covers, "no");
  // The suggested build names the release (plan and build torch take no +cuNNN label)
  // and carries the CUDA and the GPUs.
  EXPECT_NE(arm.reason.find("`tailor build torch --torch 2.11.0 --python "), std::string::npos)
      << arm.reason;
  EXPECT_EQ(arm.reason.find("2.11.0+cu130 --python"), std::string::npos) << arm.reason;
  EXPECT_NE(arm.reason.find("--platform aarch64 --cuda 13.0 --gpu T4G`"), std::string::npos)
      << arm.reason;
}

TEST(StackTorch, AnUnknownRowRoundTripsThroughTheLockAndTheScriptRefusesIt) {
  auto r = sample();
  r.rows[0].outcome = Outcome::unknown;
  r.rows[0].covers = "?";
  r.rows[0].reason = "CUDA 19.9 build; decide it with `tailor inspect x.whl --gpu T4`";
  auto back = read_lock(render_lock(r));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->rows[0].outcome, Outcome::unknown);
  EXPECT_FALSE(back->ok());
  auto s = render_script(r);
  EXPECT_NE(s.find("echo 'stack: torch'\\''s coverage is unknown: CUDA 19.9 build; decide it with "
                   "`tailor inspect x.whl --gpu T4`' >&2; "
                   "exit 1\n"),
            std::string::npos)
      << s;
}

TEST(StackVerification, JudgedAgainstTheTarget) {
  auto r = sample();
  EXPECT_TRUE(
      verification_failures(
          r, R"({"imports": [{"dist": "kern75", "module": "kern75", "ok": true, "error": ""}],
      "torch": {"version": "2.11.0", "cuda": "13.0", "arch_list": ["sm_75", "sm_80"]}, "gpu": null})")
          .empty());
  auto f = verification_failures(
      r,
      R"({"imports": [{"dist": "kern75", "module": "kern75", "ok": false, "error": "OSError: x"}],
      "torch": {"version": "2.11.0", "cuda": "13.0", "arch_list": ["sm_80", "sm_90"]},
      "gpu": {"name": "Tesla T4", "cc": "7.5", "matmul": false}})");
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[0], "import kern75 (kern75): OSError: x");
  EXPECT_EQ(f[1], "torch.cuda.get_arch_list() is sm_80 sm_90: nothing runs on 7.5");
  EXPECT_EQ(f[2], "the GPU smoke test on Tesla T4 failed");
  f = verification_failures(
      r, R"({"imports": [], "torch": {"version": "2.11.0+cpu", "cuda": "", "arch_list": []}})");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0], "torch 2.11.0+cpu has no CUDA");
  EXPECT_EQ(verification_failures(r, "").front(), "the verification printed no JSON");
}

}  // namespace
}  // namespace tailor::stack
