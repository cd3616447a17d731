// stack's stored resolutions and inspections (stack_cache.h), over a fake pip: hits,
// misses, what the key is made of, a changed index page, --refresh, what is never stored,
// and stored files that do not read (ignored with a warning, never an error).
#include "stack/stack_cache.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/fixtures.h"
#include "util/files.h"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace tailor::stack {
namespace {

constexpr std::string_view k_wheel_report = R"({"version": "1", "install": [
  {"download_info": {"url": "https://files.example/torch-2.11.0-cp312-cp312-manylinux_2_28_x86_64.whl",
                     "archive_info": {"hashes": {"sha256": "aa"}}},
   "is_direct": false, "requested": true, "metadata": {"name": "torch", "version": "2.11.0"}}]})";

using test::TempDir;

/// pip through pip_target.py, as far as the cache sees it: a report where --report says,
/// and with TAILOR_PIP_SEEN the fingerprints of the index pages it "fetched" (`pages`,
/// changed by a test to say the index moved on); with TAILOR_PIP_CHECK it fetches the
/// pages the stored fingerprints name and writes no resolution.
class FakePip : public CommandRunner {
 public:
  std::map<std::string, std::string> pages = {{"https://pypi.org/simple/torch/", "p1"},
                                              {"https://pypi.org/simple/filelock/", "p2"}};
  std::string report = std::string(k_wheel_report);
  int resolves = 0, checks = 0;
  int exit_code = 0, check_exit_code = 0;
  bool write_seen = true;
  std::vector<CommandSpec> runs;

  CommandResult run(const CommandSpec& spec) override {
    runs.push_back(spec);
    CommandResult r;
    r.started = true;
    auto seen = env(spec, "TAILOR_PIP_SEEN");
    auto check = env(spec, "TAILOR_PIP_CHECK");
    json fingerprints = {{"files", json::object()},
                         {"config", "c1"},
                         {"installed", nullptr},
                         {"find_links", "f"},
                         {"runtime", {"/usr/bin/python3", "3.12.3", "24.0"}}};
    if (check) {
      ++checks;
      r.exit_code = check_exit_code;
      auto stored = json::parse(*read_file(*check));
      json now = json::object();
      for (const auto& [url, _] : stored["pages"].items())
        now[url] = pages.count(url) ? json(pages[url]) : json(nullptr);
      fingerprints["pages"] = now;
    } else {
      ++resolves;
      r.exit_code = exit_code;
      if (exit_code != 0) {
        r.err = "ERROR: No matching distribution found for nothere\n";
        return r;
      }
      auto at = std::find(spec.argv.begin(), spec.argv.end(), "--report");
      if (at != spec.argv.end()) std::ofstream(*(at + 1)) << report;
      fingerprints["pages"] = pages;
    }
    if (seen && write_seen && r.exit_code == 0) std::ofstream(*seen) << fingerprints.dump();
    return r;
  }
  static std::optional<std::string> env(const CommandSpec& spec, const std::string& name) {
    auto it = spec.env.find(name);
    if (it == spec.env.end() || !it->second) return std::nullopt;
    return *it->second;
  }
};

struct Fixture {
  TempDir dir{"stack-cache"};
  FakePip pip;
  std::vector<std::string> warnings, lines;
  std::string scratch() {
    fs::path s = dir.path / "tmp";
    fs::create_directories(s);
    return s.string();
  }
  std::string report_path() { return (fs::path(scratch()) / "report.json").string(); }
  std::vector<std::string> key_argv(std::vector<std::string> extra = {}) {
    std::vector<std::string> a = {
        "python3",   "-c",      "SCRIPT",   "{}",       "install",
        "--dry-run", "--quiet", "--report", "{report}", "--only-binary=:all:",
        "torch"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  CommandSpec spec(const std::vector<std::string>& key) {
    CommandSpec s;
    s.argv = key;
    std::replace(s.argv.begin(), s.argv.end(), std::string("{report}"), report_path());
    s.env["PIP_NO_INPUT"] = "1";
    return s;
  }
  PipCacheOptions options(bool refresh = false) {
    PipCacheOptions o;
    o.dir = (dir.path / "resolutions").string();
    o.refresh = refresh;
    o.environment = {{"PIP_INDEX_URL", "https://pypi.org/simple"}};
    o.warn = [this](std::string_view w) { warnings.emplace_back(w); };
    o.progress = [this](std::string_view l) { lines.emplace_back(l); };
    o.now = [] { return int64_t{1'800'000'000}; };
    return o;
  }
  Expected<PipResolution> resolve(std::vector<std::string> extra = {}, bool refresh = false) {
    auto key = key_argv(std::move(extra));
    return resolve_with_cache(pip, spec(key), report_path(), key, scratch(), options(refresh));
  }
  std::string stored_file(std::vector<std::string> extra = {}) {
    auto o = options();
    return ResolutionStore(o.dir).path_of(
        resolution_key(key_argv(std::move(extra)), spec(key_argv()).env, o.environment));
  }
};

TEST(ResolutionCache, MissThenHitWithoutResolvingAgain) {
  Fixture f;
  auto first = f.resolve();
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_TRUE(first->ok);
  EXPECT_FALSE(first->reused);
  EXPECT_EQ(first->report, k_wheel_report);
  EXPECT_EQ(f.pip.resolves, 1);
  EXPECT_EQ(f.pip.checks, 0);
  EXPECT_TRUE(fs::exists(f.stored_file()));

  auto second = f.resolve();
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_TRUE(second->ok);
  EXPECT_TRUE(second->reused);
  EXPECT_EQ(second->report, k_wheel_report);
  EXPECT_EQ(second->resolved_at, 1'800'000'000);
  EXPECT_EQ(f.pip.resolves, 1);  // pip was only asked to check
  EXPECT_EQ(f.pip.checks, 1);
  // The check is the same command, with the stored fingerprints to compare, and quiet.
  const auto& check = f.pip.runs.back();
  EXPECT_EQ(check.argv, f.spec(f.key_argv()).argv);
  EXPECT_FALSE(check.on_line);
  EXPECT_TRUE(FakePip::env(check, "TAILOR_PIP_CHECK"));
  EXPECT_TRUE(f.warnings.empty());
  ASSERT_FALSE(f.lines.empty());
  EXPECT_NE(f.lines.front().find("are the 2 index pages it read unchanged?"), std::string::npos)
      << f.lines.front();
  // Nothing of the run is left in its scratch folder.
  EXPECT_FALSE(fs::exists(fs::path(f.scratch()) / "seen.json"));
  EXPECT_FALSE(fs::exists(fs::path(f.scratch()) / "stored-seen.json"));
}

TEST(ResolutionCache, AChangedIndexPageResolvesAgain) {
  Fixture f;
  ASSERT_TRUE(f.resolve());
  f.pip.pages["https://pypi.org/simple/filelock/"] = "p2-with-a-new-release";
  auto again = f.resolve();
  ASSERT_TRUE(again);
  EXPECT_FALSE(again->reused);
  EXPECT_EQ(f.pip.checks, 1);
  EXPECT_EQ(f.pip.resolves, 2);
  // The new resolution replaced the old one: the next run reuses it.
  auto third = f.resolve();
  ASSERT_TRUE(third);
  EXPECT_TRUE(third->reused);
  EXPECT_EQ(f.pip.resolves, 2);
  // A page that no longer answers is a change too.
  f.pip.pages.erase("https://pypi.org/simple/torch/");
  EXPECT_FALSE(f.resolve()->reused);
}

TEST(ResolutionCache, RefreshResolvesAndReplaces) {
  Fixture f;
  ASSERT_TRUE(f.resolve());
  auto refreshed = f.resolve({}, true);
  ASSERT_TRUE(refreshed);
  EXPECT_FALSE(refreshed->reused);
  EXPECT_EQ(f.pip.checks, 0);
  EXPECT_EQ(f.pip.resolves, 2);
  f.pip.report = std::string(k_wheel_report)
                     .replace(std::string(k_wheel_report).find("2.11.0\"}"), 6, "2.12.0");
  ASSERT_TRUE(f.resolve({}, true));
  auto hit = f.resolve();
  ASSERT_TRUE(hit);
  EXPECT_TRUE(hit->reused);
  EXPECT_NE(hit->report.find("2.12.0"), std::string::npos);
}

TEST(ResolutionCache, StoredOnlyNeverRunsPipToResolve) {
  Fixture f;
  auto key = f.key_argv();
  auto o = f.options();
  o.stored_only = true;
  auto none = resolve_with_cache(f.pip, f.spec(key), f.report_path(), key, f.scratch(), o);
  ASSERT_TRUE(none);
  EXPECT_FALSE(none->ok);
  EXPECT_TRUE(none->output.empty());
  EXPECT_EQ(f.pip.resolves + f.pip.checks, 0);
  ASSERT_TRUE(f.resolve());
  auto hit = resolve_with_cache(f.pip, f.spec(key), f.report_path(), key, f.scratch(), o);
  ASSERT_TRUE(hit);
  EXPECT_TRUE(hit->ok);
  EXPECT_TRUE(hit->reused);
  EXPECT_EQ(f.pip.resolves, 1);
  // A stale entry is checked once, then gone: the lookup after it checks nothing.
  f.pip.pages["https://pypi.org/simple/torch/"] = "p1-changed";
  EXPECT_FALSE(resolve_with_cache(f.pip, f.spec(key), f.report_path(), key, f.scratch(), o)->ok);
  EXPECT_EQ(f.pip.checks, 2);
  EXPECT_FALSE(fs::exists(f.stored_file()));
  EXPECT_FALSE(resolve_with_cache(f.pip, f.spec(key), f.report_path(), key, f.scratch(), o)->ok);
  EXPECT_EQ(f.pip.checks, 2);
  EXPECT_EQ(f.pip.resolves, 1);
  // --refresh: nothing stored is used, not even by a stored-only lookup.
  ASSERT_TRUE(f.resolve());
  o.refresh = true;
  EXPECT_FALSE(resolve_with_cache(f.pip, f.spec(key), f.report_path(), key, f.scratch(), o)->ok);
  EXPECT_EQ(f.pip.checks, 2);
}

TEST(ResolutionCache, AnotherRequestIsAnotherEntry) {
  Fixture f;
  ASSERT_TRUE(f.resolve());
  auto other = f.resolve({"bitsandbytes"});
  ASSERT_TRUE(other);
  EXPECT_FALSE(other->reused);
  EXPECT_EQ(f.pip.resolves, 2);
  EXPECT_EQ(f.pip.checks, 0);  // nothing stored for that key: no check either
  EXPECT_TRUE(f.resolve()->reused);
  EXPECT_TRUE(f.resolve({"bitsandbytes"})->reused);
}

TEST(ResolutionCache, KeyChangesWithEveryInput) {
  const std::vector<std::string> argv = {
      "python3",
      "-c",
      "SCRIPT",
      R"({"platform_machine": "aarch64", "python_version": "3.12"})",
      "install",
      "--dry-run",
      "--report",
      "{report}",
      "--platform",
      "manylinux_2_28_aarch64",
      "--python-version",
      "3.12",
      "--index-url",
      "https://pypi.org/simple",
      "torch",
      "bitsandbytes"};
  const std::map<std::string, std::optional<std::string>> set = {{"PIP_NO_INPUT", "1"}};
  const std::map<std::string, std::string> environment = {{"PIP_FIND_LINKS", "/opt/wheels"},
                                                          {"HOME", "/root"}};
  const std::string base = resolution_key(argv, set, environment);
  EXPECT_EQ(base.size(), 64u);
  EXPECT_EQ(base, resolution_key(argv, set, environment));  // stable
  // Each argument: the interpreter, the marker environment, tags, Python, index, packages.
  for (size_t i = 0; i < argv.size(); ++i) {
    auto changed = argv;
    changed[i] += "x";
    EXPECT_NE(resolution_key(changed, set, environment), base)
        << "argument " << i << ": " << argv[i];
  }
  auto fewer = argv;
  fewer.pop_back();
  EXPECT_NE(resolution_key(fewer, set, environment), base);
  auto reordered = argv;
  std::swap(reordered[14], reordered[15]);
  EXPECT_NE(resolution_key(reordered, set, environment), base);
  // Arguments are delimited: "a b" is not "ab".
  auto joined = argv;
  joined[14] = "torchbitsandbytes";
  joined[15] = "";
  EXPECT_NE(resolution_key(joined, set, environment), base);
  // The variables set for pip and the PIP_* ones it inherits (pip reads them as options).
  EXPECT_NE(resolution_key(argv, {{"PIP_NO_INPUT", "0"}}, environment), base);
  EXPECT_NE(resolution_key(argv, {}, environment), base);
  EXPECT_NE(resolution_key(argv, set, {{"PIP_FIND_LINKS", "/srv/wheels"}, {"HOME", "/root"}}),
            base);
  EXPECT_NE(
      resolution_key(argv, set,
                     {{"PIP_FIND_LINKS", "/opt/wheels"}, {"PIP_PRE", "1"}, {"HOME", "/root"}}),
      base);
  // Other variables are not pip's options.
  EXPECT_EQ(resolution_key(argv, set, {{"PIP_FIND_LINKS", "/opt/wheels"}, {"HOME", "/home/me"}}),
            base);
  // A variable removed for pip is the same as one never set.
  EXPECT_EQ(resolution_key(argv, {{"PIP_NO_INPUT", "1"}, {"PIP_PRE", std::nullopt}},
                           {{"PIP_FIND_LINKS", "/opt/wheels"}, {"PIP_PRE", "1"}}),
            base);
}

TEST(ResolutionCache, CorruptStoredFileIsIgnoredWithAWarning) {
  for (
      std::string garbage :
      {std::string("{not json"), std::string(""),
       std::string(R"({"schema": "tailor.stack-resolution/1"})"),
       std::string(
           R"({"schema": "tailor.stack-resolution/1", "key": "other", "report": "", "seen": {}, "created": 1})"),
       std::string(
           R"({"schema": "tailor.stack-resolution/1", "report": 5, "seen": [], "created": "x"})"),
       std::string("\x00\xff\xfe", 3)}) {
    Fixture f;
    fs::create_directories(fs::path(f.stored_file()).parent_path());
    std::ofstream(f.stored_file(), std::ios::binary) << garbage;
    auto r = f.resolve();
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_TRUE(r->ok);
    EXPECT_FALSE(r->reused);
    EXPECT_EQ(f.pip.checks, 0);
    EXPECT_EQ(f.pip.resolves, 1);
    ASSERT_EQ(f.warnings.size(), 1u) << garbage;
    EXPECT_NE(f.warnings[0].find(f.stored_file()), std::string::npos) << f.warnings[0];
    EXPECT_NE(f.warnings[0].find("ignored"), std::string::npos) << f.warnings[0];
    // Replaced by the new resolution: the next run reuses it, without a warning.
    auto next = f.resolve();
    ASSERT_TRUE(next);
    EXPECT_TRUE(next->reused);
    EXPECT_EQ(f.warnings.size(), 1u);
  }
}

TEST(ResolutionCache, StoredFingerprintsThatDoNotReadAreAMiss) {
  Fixture f;
  ASSERT_TRUE(f.resolve());
  // A well-formed entry whose fingerprints lack what a check compares.
  auto j = json::parse(*read_file(f.stored_file()));
  j["seen"] = json::object({{"pages", json::object()}});
  std::ofstream(f.stored_file()) << j.dump();
  auto r = f.resolve();
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->reused);
  EXPECT_EQ(f.pip.resolves, 2);
}

TEST(ResolutionCache, AFailedCheckIsAMissNotAnError) {
  Fixture f;
  ASSERT_TRUE(f.resolve());
  f.pip.check_exit_code = 2;  // another pip, no network ...
  auto r = f.resolve();
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->ok);
  EXPECT_FALSE(r->reused);
  EXPECT_EQ(f.pip.resolves, 2);
  EXPECT_NE(f.lines.back().find("could not check it"), std::string::npos) << f.lines.back();
}

TEST(ResolutionCache, WhatIsNeverStored) {
  {  // pip failed: its output comes back, nothing is stored
    Fixture f;
    f.pip.exit_code = 1;
    auto r = f.resolve();
    ASSERT_TRUE(r);
    EXPECT_FALSE(r->ok);
    EXPECT_NE(r->output.find("No matching distribution found for nothere"), std::string::npos);
    EXPECT_FALSE(fs::exists(f.stored_file()));
  }
  {  // a pip whose internals pip_target.py cannot hook writes no fingerprints
    Fixture f;
    f.pip.write_seen = false;
    ASSERT_TRUE(f.resolve()->ok);
    EXPECT_FALSE(fs::exists(f.stored_file()));
    EXPECT_FALSE(f.resolve()->reused);
    EXPECT_EQ(f.pip.resolves, 2);
  }
  {  // an sdist's metadata was built by this machine's tools
    Fixture f;
    f.pip.report =
        R"({"version": "1", "install": [{"download_info": {"url": "https://files.example/x-1.0.tar.gz"},
                      "metadata": {"name": "x", "version": "1.0"}}]})";
    ASSERT_TRUE(f.resolve()->ok);
    EXPECT_FALSE(fs::exists(f.stored_file()));
    // ... unless the run had --no-deps (the sdist itself is the answer)
    ASSERT_TRUE(f.resolve({"--no-deps"})->ok);
    EXPECT_TRUE(fs::exists(f.stored_file({"--no-deps"})));
  }
  {  // no cache folder: pip every time, no check
    Fixture f;
    auto key = f.key_argv();
    auto o = f.options();
    o.dir.clear();
    ASSERT_TRUE(resolve_with_cache(f.pip, f.spec(key), f.report_path(), key, f.scratch(), o));
    ASSERT_TRUE(resolve_with_cache(f.pip, f.spec(key), f.report_path(), key, f.scratch(), o));
    EXPECT_EQ(f.pip.resolves, 2);
    EXPECT_EQ(f.pip.checks, 0);
    EXPECT_FALSE(FakePip::env(f.pip.runs.back(), "TAILOR_PIP_SEEN"));
  }
}

TEST(ResolutionCache, ReusableReports) {
  const std::vector<std::string> argv = {"install", "torch"};
  EXPECT_TRUE(reusable_report(k_wheel_report, argv));
  EXPECT_TRUE(reusable_report(R"({"install": []})", argv));
  EXPECT_FALSE(reusable_report("nope", argv));
  EXPECT_FALSE(reusable_report(
      R"({"install": [{"download_info": {"url": "https://h/x-1.0.tar.gz"}}]})", argv));
  EXPECT_TRUE(
      reusable_report(R"({"install": [{"download_info": {"url": "https://h/x-1.0.tar.gz"}}]})",
                      {"install", "--no-deps", "x"}));
  EXPECT_FALSE(reusable_report(
      R"({"install": [{"is_direct": true, "download_info": {"url": "file:///src/x-1.0-py3-none-any.whl"}}]})",
      argv));
  EXPECT_FALSE(reusable_report(
      R"({"install": [{"download_info": {"url": "file:///src/x", "dir_info": {}}}]})", argv));
  EXPECT_TRUE(reusable_report(
      R"({"install": [{"download_info": {"url": "https://h/x-1.0-py3-none-any.whl#sha256=ab"}}]})",
      argv));
}

TEST(ResolutionCache, Fingerprints) {
  std::string a = R"({"pages": {"u": "1"}, "runtime": ["py", "3.12", "24.0"], "config": "c"})";
  EXPECT_TRUE(same_fingerprints(
      a, R"({"config": "c", "runtime": ["py", "3.12", "24.0"], "pages": {"u": "1"}})"));
  EXPECT_FALSE(same_fingerprints(
      a, R"({"pages": {"u": "2"}, "runtime": ["py", "3.12", "24.0"], "config": "c"})"));
  EXPECT_FALSE(same_fingerprints(
      a, R"({"pages": {"u": "1"}, "runtime": ["py", "3.12", "25.0"], "config": "c"})"));
  EXPECT_FALSE(same_fingerprints(
      a, R"({"pages": {"u": "1"}, "runtime": ["py", "3.12", "24.0"], "config": "d"})"));
  EXPECT_FALSE(same_fingerprints(a, "{"));
  EXPECT_FALSE(same_fingerprints("{}", "{}"));  // nothing to compare is not a match
}

// ---- inspections ------------------------------------------------------------------------
inspect::WheelReport sample_wheel() {
  inspect::WheelReport w;
  w.path = "/cache/files/ab/abc/bitsandbytes-0.50.2-py3-none-manylinux_2_24_x86_64.whl";
  w.targets = {{"sm_75"}, {"sm_90"}, {"compute_90"}};
  inspect::InspectedLibrary cuda13;
  cuda13.path = "bitsandbytes/libbitsandbytes_cuda130.so";
  cuda13.machine = "x86_64";
  cuda13.has_device_code = true;
  cuda13.targets = {{"sm_75", 12, 100, 200, {"none"}},
                    {"sm_90", 3, 10, 20, {"zstd"}},
                    {"compute_90", 1, 5, 9, {"none"}}};
  cuda13.needed_libraries = {{"libcudart.so.13", inspect::NeededKind::cuda_runtime},
                             {"libc.so.6", inspect::NeededKind::whitelisted}};
  cuda13.cxx11_abi = true;
  inspect::InspectedLibrary cpu;
  cpu.path = "bitsandbytes/libbitsandbytes_cpu.so";
  cpu.machine = "x86_64";
  w.libraries = {cuda13, cpu};
  return w;
}

TEST(InspectionCache, RoundTripsWhatStackJudges) {
  auto text = inspection_to_json(sample_wheel(), "build-id 01");
  auto back = inspection_from_json(text, "build-id 01", "/elsewhere/b.whl");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->path, "/elsewhere/b.whl");
  EXPECT_EQ(back->target_names(), (std::vector<std::string>{"sm_75", "sm_90", "compute_90"}));
  ASSERT_EQ(back->libraries.size(), 2u);
  const auto& lib = back->libraries[0];
  EXPECT_EQ(lib.path, "bitsandbytes/libbitsandbytes_cuda130.so");
  EXPECT_EQ(lib.machine, "x86_64");
  EXPECT_TRUE(lib.has_device_code);
  ASSERT_EQ(lib.targets.size(), 3u);
  EXPECT_EQ(lib.targets[1].name, "sm_90");
  EXPECT_EQ(lib.targets[1].entries, 3u);
  ASSERT_EQ(lib.needed_libraries.size(), 2u);
  EXPECT_EQ(lib.needed_libraries[0].soname, "libcudart.so.13");
  EXPECT_EQ(lib.needed_libraries[0].kind, inspect::NeededKind::cuda_runtime);
  EXPECT_EQ(lib.needed_libraries[1].kind, inspect::NeededKind::whitelisted);
  EXPECT_EQ(lib.cxx11_abi, std::optional<bool>(true));
  EXPECT_FALSE(back->libraries[1].has_device_code);
  EXPECT_FALSE(back->libraries[1].cxx11_abi.has_value());
  // Another build's inspection is stale, not corrupt.
  bool stale = false;
  EXPECT_FALSE(inspection_from_json(text, "build-id 02", "x", &stale));
  EXPECT_TRUE(stale);
  EXPECT_FALSE(inspection_from_json("{", "build-id 01", "x", &stale));
  EXPECT_FALSE(stale);
  EXPECT_FALSE(inspection_from_json(
      R"({"schema": "tailor.stack-inspection/2", "build": "build-id 01", "targets": [1]})",
      "build-id 01", "x"));
}

TEST(InspectionCache, StoreLoadStaleAndCorrupt) {
  TempDir dir("stack-cache");
  const std::string sha(64, 'a');
  InspectionStore store((dir.path / "inspections").string(), "build-id 01");
  std::string warning;
  EXPECT_FALSE(store.load(sha, "w.whl", warning));  // miss
  EXPECT_TRUE(warning.empty());
  ASSERT_TRUE(store.store(sha, sample_wheel()));
  auto hit = store.load(sha, "w.whl", warning);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->libraries.size(), 2u);
  EXPECT_TRUE(warning.empty());
  // Another build: not reused, no warning.
  InspectionStore other((dir.path / "inspections").string(), "build-id 02");
  EXPECT_FALSE(other.load(sha, "w.whl", warning));
  EXPECT_TRUE(warning.empty());
  // A corrupt file: ignored with a warning naming it, then gone.
  ASSERT_TRUE(store.store(sha, sample_wheel()));
  fs::path file = dir.path / "inspections" / "aa" / (sha + ".json");
  ASSERT_TRUE(fs::exists(file));
  std::ofstream(file) << "{\"schema\": \"tailor.stack-inspection/2\", \"build\": \"build-id 01\", "
                         "\"libraries\": [{}]}";
  EXPECT_FALSE(store.load(sha, "w.whl", warning));
  EXPECT_NE(warning.find(file.string()), std::string::npos) << warning;
  EXPECT_FALSE(fs::exists(file));
  // What is not a sha256 names no file; without a build identity nothing is kept.
  EXPECT_FALSE(store.load("../../etc/passwd", "w.whl", warning));
  EXPECT_TRUE(store.store("../x", sample_wheel()));
  EXPECT_FALSE(fs::exists(dir.path / "x.json"));
  InspectionStore unnamed((dir.path / "none").string(), "");
  EXPECT_TRUE(unnamed.store(sha, sample_wheel()));
  EXPECT_FALSE(fs::exists(dir.path / "none"));
}

TEST(InspectionCache, BuildIdentityIsStable) {
  EXPECT_EQ(build_identity(), build_identity());
  if (!build_identity().empty()) {
    EXPECT_TRUE(build_identity().starts_with("build-id "));
  }
  EXPECT_TRUE(is_sha256_hex(std::string(64, 'F')));
  EXPECT_FALSE(is_sha256_hex(std::string(63, 'a')));
  EXPECT_FALSE(is_sha256_hex(std::string(63, 'a') + "/"));
}

}  // namespace
}  // namespace tailor::stack
