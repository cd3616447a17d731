// The subcommand table (one row per command, like ninja's kTools[]). Each command lives
// in cmd_<name>.cpp: it declares its options on a CLI11 subcommand, and when chosen,
// `run` is set to a function that does the work and returns the exit code.
#pragma once
#include <CLI/CLI.hpp>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "util/expected.h"

namespace tailor::cli {

/// Exit codes shared by every command.
enum ExitCode : int { k_exit_ok = 0, k_exit_failed = 1, k_exit_bad_input = 2 };

using RunFn = std::function<int()>;

struct CommandEntry {
  const char* name;
  const char* help;
  /// Adds options to `sub`; stores in `run` what to do when `sub` is chosen.
  void (*setup)(CLI::App& sub, RunFn& run);
};

void setup_detect(CLI::App& sub, RunFn& run);
void setup_arch(CLI::App& sub, RunFn& run);
void setup_inspect(CLI::App& sub, RunFn& run);
void setup_build(CLI::App& sub, RunFn& run);
/// `tailor build torch ...`: a nested subcommand of build, added by setup_build.
void setup_build_torch(CLI::App& sub, RunFn& run);
void setup_explain(CLI::App& sub, RunFn& run);
void setup_plan(CLI::App& sub, RunFn& run);
void setup_doctor(CLI::App& sub, RunFn& run);
void setup_matrix(CLI::App& sub, RunFn& run);
void setup_slim(CLI::App& sub, RunFn& run);
void setup_stack(CLI::App& sub, RunFn& run);
void setup_cache(CLI::App& sub, RunFn& run);
void setup_dist(CLI::App& sub, RunFn& run);
void setup_report(CLI::App& sub, RunFn& run);
void setup_publish(CLI::App& sub, RunFn& run);

/// The hidden `tailor __governed ...` (cli/cmd_governed.cpp), its arguments after the name.
int run_governed_command(const std::vector<std::string>& args);

/// Entry point used by the thin main: parses argv, runs one command, prints errors as
/// `tailor: error: ...` and returns the exit code.
int run_tailor(int argc, char** argv);

/// An output folder given with --out must be a folder or not exist yet: an existing file
/// there is an error before any work starts.
Expected<void> check_out_dir(const std::string& out_dir);

/// Parses a tailor command line (without the program name) exactly as `tailor` would,
/// running nothing: an error for what the parser refuses (unknown option, bad value).
Expected<void> check_command_line(const std::vector<std::string>& args);

/// Every JSON document tailor prints names its schema: "schema": "tailor.<command>/1".
/// Adds it to an object that has none (inspect's renderer already sets its own).
nlohmann::json with_schema(nlohmann::json document, std::string_view command, int version = 1);

/// Prints `tailor: error: <message>` to stderr and returns k_exit_bad_input (or `code`).
int report_error(const std::string& message, int code = k_exit_bad_input);

}  // namespace tailor::cli
