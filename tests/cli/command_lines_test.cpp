// The command lines tailor tells people to run must parse with tailor's real CLI: every
// `tailor ...` snippet in a fix or cause of data/diagnose/failures.toml goes through the
// same parser `tailor` uses (nothing runs). Also the option rules of the variant flags.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/torch_variant_flags.h"
#include "diagnose/failure_pattern.h"
#include "util/strings.h"

namespace tailor::cli {
namespace {

/// Placeholders of the fix texts -> a value of the kind they stand for.
std::string fill_placeholders(std::string s) {
  const std::pair<std::string, std::string> k_samples[] = {
      {"{1}", "sm_90"},
      {"{2}", "sm_90"},
      {"<your GPU>", "T4"},
      {"...", "8.0"},
  };
  for (const auto& [from, to] : k_samples)
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
      s.replace(at, from.size(), to);
  std::vector<std::string> words;
  for (auto& w : split_any(s, " ")) {
    if (w == "N")
      w = "4";
    else if (w == "LOG")
      w = "build.log";
    else if (w == "WHEEL")
      w = "torch-2.9.1-cp310-cp310-linux_x86_64.whl";
    else if (w == "LIB")
      w = "libtorch_cuda.so";
    words.push_back(w);
  }
  return join(words, " ");
}

std::vector<std::string> tailor_snippets(const std::string& text) {
  std::vector<std::string> out;
  static const std::regex k_snippet("`(tailor [^`]*)`");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), k_snippet);
       it != std::sregex_iterator(); ++it)
    out.push_back((*it)[1].str());
  return out;
}

TEST(CommandLines, EveryTailorCommandInAFixParses) {
  size_t checked = 0;
  bool saw_build_torch_jobs = false;
  for (const auto& p : diagnose::failure_patterns()) {
    for (const std::string* text : {&p.fix, &p.cause}) {
      for (const auto& snippet : tailor_snippets(*text)) {
        std::string line = fill_placeholders(snippet);
        auto words = split_any(line, " ");
        ASSERT_EQ(words.front(), "tailor");
        words.erase(words.begin());
        auto ok = check_command_line(words);
        EXPECT_TRUE(ok) << p.id << ": `" << snippet << "` (as `" << line
                        << "`): " << (ok ? "" : ok.error().message);
        saw_build_torch_jobs = saw_build_torch_jobs || snippet == "tailor build torch --jobs N";
        ++checked;
      }
    }
  }
  // The table names at least the jobs, arch, inspect and explain commands.
  EXPECT_GE(checked, 8u);
  EXPECT_TRUE(saw_build_torch_jobs) << "the out-of-memory fixes name `tailor build torch --jobs N`";
}

TEST(CommandLines, TheParserRefusesWhatTailorRefuses) {
  EXPECT_TRUE(check_command_line({"build", "torch", "--jobs", "4"}));
  EXPECT_TRUE(check_command_line({"plan", "--jobs", "4"}));
  EXPECT_TRUE(check_command_line({"doctor", "torch", "--jobs", "2"}));
  EXPECT_TRUE(check_command_line({"matrix", "plan", "--jobs", "2"}));
  EXPECT_FALSE(check_command_line({"build", "torch", "--jobz", "4"}));
  EXPECT_FALSE(check_command_line({"build", "torch", "--jobs", "four"}));
  EXPECT_FALSE(check_command_line({"explain"}));  // LOG is required
  EXPECT_FALSE(check_command_line({"frobnicate"}));
}

// --arch / --gpu (and slim's --keep, inspect's --require/--exact) repeat on every command,
// one value each: a path after the flag stays a path (slim and inspect require one).
TEST(CommandLines, TargetFlagsRepeatOnEveryCommand) {
  const std::vector<std::vector<std::string>> lines = {
      {"build", "--arch", "8.0", "--arch", "9.0", "src"},
      {"build", "--gpu", "T4G", "--gpu", "H100"},
      {"plan", "--gpu", "T4G", "--gpu", "H100"},
      {"plan", "--arch", "8.0", "--arch", "9.0"},
      {"build", "torch", "--arch", "8.0", "--arch", "9.0"},
      {"doctor", "torch", "--gpu", "T4G", "--gpu", "A10G"},
      {"slim", "--keep", "8.0", "--keep", "9.0", "x.whl", "--dry-run"},
      {"slim", "--gpu", "T4G", "x.whl", "--dry-run"},
      {"stack", "torch", "--gpu", "T4G", "--gpu", "H100"},
      {"stack", "--arch", "8.0", "torch", "--arch", "9.0"},
      {"inspect", "--gpu", "T4G", "--gpu", "H100", "x.whl"},
      {"inspect", "--require", "8.0", "--require", "9.0", "x.whl"},
      {"inspect", "--exact", "8.0", "x.whl", "--exact", "9.0"},
  };
  for (const auto& line : lines) {
    auto ok = check_command_line(line);
    EXPECT_TRUE(ok) << join(line, " ") << ": " << (ok ? "" : ok.error().message);
  }
}

TEST(CommandLines, DoctorTakesItsPositionalSafely) {
  // CLI11 writes the positional during parsing, after setup_doctor returned: the field
  // must outlive setup (a local string there was written after its end).
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(check_command_line({"doctor", "torch", "--cuda", "12.6", "--arch", "8.0"}));
    EXPECT_TRUE(check_command_line(
        {"doctor", "a-much-longer-positional-than-any-small-string-buffer-holds"}));
  }
}

TorchVariantFlags flags_with(std::vector<std::string> arch, std::vector<std::string> gpu) {
  TorchVariantFlags f;
  f.torch = "2.9.1";
  f.arch = std::move(arch);
  f.gpu = std::move(gpu);
  return f;
}

TEST(CommandLines, ArchAndGpuExcludeEachOther) {
  auto both = variant_from_flags(flags_with({"8.0"}, {"T4G"}));
  ASSERT_FALSE(both);
  EXPECT_EQ(both.error().message, "use --arch or --gpu, not both");
  auto arch = variant_from_flags(flags_with({"8.0"}, {}));
  ASSERT_TRUE(arch);
  EXPECT_EQ(arch->arch, std::vector<std::string>{"8.0"});
  auto gpu = variant_from_flags(flags_with({}, {"g5g.xlarge"}));
  ASSERT_TRUE(gpu);
  // --gpu stays GPUs (each one's SASS), not --arch's spellings: cuda::resolve_target_request.
  EXPECT_TRUE(gpu->arch.empty());
  EXPECT_EQ(gpu->gpu, std::vector<std::string>{"g5g.xlarge"});
}

TEST(CommandLines, JobsBelowOneIsAnError) {
  TorchVariantFlags f = flags_with({"8.0"}, {});
  f.jobs = 0;
  auto v = variant_from_flags(f);
  ASSERT_FALSE(v);
  EXPECT_EQ(v.error().message, "--jobs 0: must be at least 1");
  f.jobs = 3;
  EXPECT_TRUE(variant_from_flags(f));
  EXPECT_EQ(resolve_options_from_flags(f).jobs, 3);
}

TEST(CommandLines, OutMustNotBeAFile) {
  std::string dir = ::testing::TempDir() + "tailor_out_check";
  std::filesystem::create_directories(dir);
  std::string file = dir + "/file";
  {
    std::FILE* fp = std::fopen(file.c_str(), "w");
    ASSERT_NE(fp, nullptr);
    std::fclose(fp);
  }
  auto bad = check_out_dir(file);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "--out " + file + ": exists and is not a folder");
  EXPECT_TRUE(check_out_dir(dir));
  EXPECT_TRUE(check_out_dir(dir + "/not-yet"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tailor::cli
