// `tailor explain LOG [--json]`: the first real error block of a failed build log and
// what the failure-pattern table says about it; a build tailor's runner stopped on a signal
// is said to be interrupted (it did not fail on its own). Exit 0: diagnosed, interrupted
// or nothing wrong found; 1: an error tailor cannot diagnose; 2: the log cannot be read.
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.h"
#include "compat/removals.h"
#include "diagnose/diagnosis.h"
#include "util/files.h"
#include "util/strings.h"
#include "util/text_escape.h"
#include "util/user_file.h"

namespace tailor::cli {
namespace {

constexpr size_t k_max_shown_line = 300;

struct ExplainOptions {
  std::string log_path;
  std::string source_dir;  ///< the user's source the logged build compiled a copy of
  bool json = false;
};

// Real logs reach hundreds of MB (a full PyTorch build writes ~220 MB); beyond this is
// not a log. Regular files and pipes only: /dev/zero or a FIFO is refused before reading.
constexpr uint64_t k_max_log_bytes = 512ull << 20;

Expected<std::string> read_log(const std::string& path) {
  // A NUL byte early on means binary data (a file of zeros, a core dump), not a log.
  return read_text_file(path, k_max_log_bytes, BinaryData::refused);
}

// Lines come from the log: cut long ones, then escape control sequences for the terminal.
std::string shorten(const std::string& line) {
  if (line.size() <= k_max_shown_line) return terminal_safe(line);
  return terminal_safe(line.substr(0, k_max_shown_line)) +
         fmt::format(" ... [{} more characters]", line.size() - k_max_shown_line);
}

int exit_code_for(const std::optional<diagnose::ErrorBlock>& block,
                  const std::vector<diagnose::Diagnosis>& diagnoses, bool interrupted) {
  if (interrupted && !block) return k_exit_ok;
  bool specific = std::any_of(diagnoses.begin(), diagnoses.end(),
                              [](const diagnose::Diagnosis& d) { return !d.generic(); });
  if (specific) return k_exit_ok;
  return block || !diagnoses.empty() ? k_exit_failed : k_exit_ok;
}

void print_json(const ExplainOptions& o, const std::optional<diagnose::ErrorBlock>& block,
                const std::vector<diagnose::Diagnosis>& diagnoses,
                const std::optional<diagnose::Interruption>& stop, int code) {
  nlohmann::json j;
  j["log"] = o.log_path;
  j["diagnosed"] = code == k_exit_ok && (block || !diagnoses.empty() || stop);
  j["interrupted"] = stop ? nlohmann::json{{"line", stop->line_number},
                                           {"signal", stop->signal},
                                           {"quoted_line", stop->quoted_line}}
                          : nlohmann::json(nullptr);
  if (block) {
    j["error_block"] = {{"first_line", block->first_line},
                        {"last_line", block->last_line},
                        {"lines", block->lines}};
  } else {
    j["error_block"] = nullptr;
  }
  j["diagnoses"] = nlohmann::json::array();
  for (const auto& d : diagnoses)
    j["diagnoses"].push_back({{"id", d.pattern_id},
                              {"line", d.line_number},
                              {"quoted_line", d.quoted_line},
                              {"cause", d.cause},
                              {"fix", d.fix},
                              {"generic", d.generic()}});
  escape_json_strings(j);  // log lines need not be UTF-8
  std::cout << with_schema(j, "explain").dump(2) << "\n";
}

void print_human(const ExplainOptions& o, const std::string& text,
                 const std::optional<diagnose::ErrorBlock>& block,
                 const std::vector<diagnose::Diagnosis>& diagnoses,
                 const std::optional<diagnose::Interruption>& stop) {
  if (stop) {
    fmt::print("The build was interrupted by {} (line {}):\n  > {}\n",
               diagnose::signal_label(stop->signal), stop->line_number, shorten(stop->quoted_line));
    if (!block && diagnoses.empty()) {
      fmt::print(
          "It did not fail on its own: nothing to diagnose. Run the same build again; it goes on "
          "from what the "
          "stopped run left.\n");
      return;
    }
    fmt::print(
        "Errors logged before or while it stopped follow; those after the signal may be its "
        "consequence.\n\n");
  }
  if (!block && diagnoses.empty()) {
    // A log of tailor's has its step lines: without them this may be any text at all.
    const bool tailors = text.find("### tailor") != std::string::npos;
    fmt::print("No error found in {}{}.\n", terminal_safe(o.log_path),
               tailors ? ""
                       : " (it has no '### tailor step' line: not a log a tailor build wrote, "
                         "<wheel>.build.log)");
    return;
  }
  if (block) {
    fmt::print("First error in {} (lines {}-{}):\n", terminal_safe(o.log_path), block->first_line,
               block->last_line);
    const int width = static_cast<int>(std::to_string(block->last_line).size());
    for (size_t i = 0; i < block->lines.size(); ++i)
      fmt::print("  {:>{}} | {}\n", block->first_line + i, width, shorten(block->lines[i]));
  }
  if (diagnoses.empty()) {
    fmt::print("\nNo known failure pattern matches; the block above is the place to start.\n");
    return;
  }
  for (size_t i = 0; i < diagnoses.size(); ++i) {
    const auto& d = diagnoses[i];
    fmt::print("\n{}. {} (line {})\n", i + 1, d.pattern_id, d.line_number);
    fmt::print("   > {}\n", shorten(d.quoted_line));
    // Cause and fix are filled in from the log's own words.
    fmt::print("   cause: {}\n", terminal_safe(d.cause));
    fmt::print("   fix:   {}\n", terminal_safe(d.fix));
  }
}

int run_explain(const ExplainOptions& o) {
  auto text = read_log(o.log_path);
  if (!text) return report_error(text.error().message, k_exit_bad_input);
  if (text->find_first_not_of(" \t\r\n") == std::string::npos)
    return report_error(
        o.log_path +
            ": empty: no build log to explain (a build writes <wheel>.build.log beside its wheel)",
        k_exit_bad_input);
  const auto block = diagnose::first_error_block(*text);
  diagnose::DiagnoseOptions options;
  if (!o.source_dir.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_directory(o.source_dir, ec))
      return report_error(fmt::format("--source {}: not a folder", o.source_dir), k_exit_bad_input);
    options.source_dir = std::filesystem::absolute(o.source_dir, ec).lexically_normal().string();
  }
  auto diagnoses = diagnose::diagnose_log(*text, options);
  // A known API removal the compiler met (data/compat/removals.toml): named first.
  if (auto found = compat::removal_in_log(*text, compat::removals())) {
    diagnose::Diagnosis d;
    d.pattern_id = "compat-" + found->hit.id;
    d.quoted_line = std::string(trim(found->line));
    d.line_number = found->line_number;
    d.priority = 20;
    d.cause = fmt::format("The package uses {}, removed in {}: {}.", found->hit.api,
                          found->hit.removed_in, found->hit.why);
    d.fix =
        "`tailor build` bridges this in its copy of a package without a recipe (unless "
        "--keep-package-source); else port this use to today's API, or build with the "
        "release the package was written for.";
    diagnoses.insert(diagnoses.begin(), std::move(d));
  }
  const auto stop = diagnose::find_interruption(*text);
  const int code = exit_code_for(block, diagnoses, stop.has_value());
  if (o.json)
    print_json(o, block, diagnoses, stop, code);
  else
    print_human(o, *text, block, diagnoses, stop);
  return code;
}

}  // namespace

void setup_explain(CLI::App& sub, RunFn& run) {
  auto opts = std::make_shared<ExplainOptions>();
  sub.add_option("log", opts->log_path, "A build log ('-' reads standard input)")->required();
  sub.add_option("--source", opts->source_dir,
                 "the package's source folder that the logged build compiled a copy of: a "
                 "compiler's paths are "
                 "named in it (default: the path inside the package)")
      ->type_name("DIR");
  sub.add_flag("--json", opts->json, "Print the error block and diagnoses as JSON");
  sub.callback([&run, opts] { run = [opts] { return run_explain(*opts); }; });
}

}  // namespace tailor::cli
