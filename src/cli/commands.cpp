#include "cli/commands.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <map>
#include <new>

#include "cli/shell_help.h"
#include "data/toml_document.h"
#include "source/source_clone.h"
#include "util/strings.h"
#include "util/terminal_style.h"
#include "util/text_escape.h"
#include "util/version.h"
#include "workpath/fixed_path_wrapper.h"

namespace tailor::cli {

namespace {
const CommandEntry k_commands[] = {
    {"detect", "What this machine is: CPU, memory, GPUs, CUDA toolkits, compilers, Pythons, torch",
     setup_detect},
    {"arch", "Understand GPU targets in any spelling and print them for every build system",
     setup_arch},
    {"inspect",
     "What is inside a wheel or library: CUDA targets, sizes, manylinux needs, GPU verdicts",
     setup_inspect},
    {"build", "Build a PyTorch CUDA extension (or torch itself) for chosen targets and verify it",
     setup_build},
    {"explain", "Diagnose a failed build log: the first real error, its cause and the fix",
     setup_explain},
    {"plan", "The resolved PyTorch build: every variable and command, without building",
     setup_plan},
    {"doctor", "Pre-flight checks for a build: toolchain, versions, disk, memory", setup_doctor},
    {"matrix", "Expand a tailor.toml build matrix into named variants, plan or build them",
     setup_matrix},
    {"stack",
     "Which packages install prebuilt for a target machine and its GPUs, which to build: a lock, a "
     "script, an install",
     setup_stack},
    {"cache",
     "The compiler cache builds share (local, Redis, S3): status, hit rates per CUDA step, zero",
     setup_cache},
    {"slim",
     "Cut the device code your GPUs will never run out of wheels, libraries and environments",
     setup_slim},
    {"publish", "Add tailor-built wheels to a folder wheelhouse: one pip index per GPU target set",
     setup_publish},
    {"report", "A build report as a page: compile-job timeline, memory, cache hits, checks",
     setup_report},
    {"dist",
     "Distributed compiles: start, check and stop an sccache-dist scheduler and build servers",
     setup_dist},
};
}  // namespace

Expected<void> check_out_dir(const std::string& out_dir) {
  std::error_code ec;
  auto st = std::filesystem::status(out_dir, ec);
  if (std::filesystem::exists(st) && !std::filesystem::is_directory(st))
    return make_error("--out " + out_dir + ": exists and is not a folder");
  return {};
}

namespace {
/// data/cli/commands.toml: each command's long description, by name; a table naming no
/// command is an error in the data.
const std::map<std::string, std::string>& command_details() {
  static const std::map<std::string, std::string> details = [] {
    auto doc = data::toml_document("cli/commands.toml");
    std::map<std::string, std::string> out;
    for (const auto& [key, table] : doc["command"].entries()) {
      const std::string& name = key;  // clang 14 captures no structured binding in a lambda
      if (std::none_of(std::begin(k_commands), std::end(k_commands),
                       [&](const CommandEntry& c) { return c.name == name; }))
        table.fail("not a command of tailor");
      out[name] = table["about"].string();
    }
    return out;
  }();
  return details;
}

/// Every command on one CLI11 app; `run` is set by the chosen command's callback.
void add_commands(CLI::App& app, RunFn& run) {
  app.require_subcommand(1);
  app.set_version_flag("-V,--version", "tailor " + std::string(tailor_version()));
  // --color before or after the command (`tailor --color=never inspect ...`, `tailor inspect ...
  // --color never`).
  app.fallthrough();
  app.add_option_function<std::string>(
         "--color",
         [](const std::string& value) {
           auto mode = parse_color_mode(value);
           if (!mode) throw CLI::ValidationError(mode.error().message);
           set_color_mode(*mode);
         },
         "Colour: auto (on a terminal, unless NO_COLOR is set), always or never")
      ->type_name("WHEN");
  app.footer(
      "`tailor help COMMAND` shows a command's options; `tailor completion bash|zsh|fish` prints a "
      "shell "
      "completion script and `tailor help --man` the man page.");
  for (const auto& c : k_commands) {
    CLI::App* sub = app.add_subcommand(c.name, c.help);
    c.setup(*sub, run);
    if (auto it = command_details().find(c.name); it != command_details().end())
      sub->footer(it->second);
  }
}
}  // namespace

Expected<void> check_command_line(const std::vector<std::string>& args) {
  CLI::App app{"tailor: made-to-measure PyTorch builds", "tailor"};
  RunFn run;
  add_commands(app, run);
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them last first
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    return make_error(std::string(e.get_name()) + ": " + e.what());
  }
  if (!run) return make_error("no command chosen");
  return {};
}

nlohmann::json with_schema(nlohmann::json document, std::string_view command, int version) {
  if (document.is_object() && !document.contains("schema"))
    document["schema"] = fmt::format("tailor.{}/{}", command, version);
  return document;
}

int report_error(const std::string& message, int code) {
  // Messages echo paths and names from the input: one line, no terminal control sequences.
  std::fprintf(stderr, "%s %s\n", paint("tailor: error:", Paint::red, 2).c_str(),
               terminal_safe(message).c_str());
  return code;
}

namespace {
int run_command_line(int argc, char** argv);
}

int run_tailor(int argc, char** argv) {
  // Nothing escapes as a crash: running out of memory on some input is one line, exit 2.
  try {
    return run_command_line(argc, argv);
  } catch (const std::bad_alloc&) {
    return report_error("out of memory (the input is larger than tailor can hold)",
                        k_exit_bad_input);
  } catch (const std::exception& e) {
    return report_error(e.what(), k_exit_failed);
  } catch (...) {
    return report_error("unexpected internal error", k_exit_failed);
  }
}

namespace {

/// The command names and aliases `app` knows.
std::vector<std::string> command_names(CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands({})) {
    names.push_back(sub->get_name());
    for (const auto& alias : sub->get_aliases()) names.push_back(alias);
  }
  return names;
}

/// "unknown command 'biuld' (did you mean 'build'?)": the nearest names within two edits,
/// or those the word starts.
std::string unknown_command_message(CLI::App& app, std::string_view word) {
  std::vector<std::string> near;
  size_t best = 3;
  for (const auto& name : command_names(app)) {
    size_t d = edit_distance(word, name);
    if (name.rfind(word, 0) == 0 && word.size() >= 2) d = std::min<size_t>(d, 1);
    if (d < best) {
      best = d;
      near.clear();
    }
    if (d == best && d < 3) near.push_back("'" + name + "'");
  }
  std::string msg = fmt::format("unknown command '{}'", word);
  if (!near.empty()) msg += fmt::format(" (did you mean {}?)", join(near, " or "));
  return msg + "; `tailor help` lists the commands";
}

/// " (did you mean --arch?)" for the first unknown --option on the line: the nearest long
/// option names of the command it follows (and the global ones) within two edits; "" when none.
std::string option_suggestion(CLI::App& app, int argc, char** argv) {
  CLI::App* command = &app;
  for (int i = 1; i < argc; ++i) {
    std::string_view word = argv[i];
    if (!word.empty() && word[0] != '-') {
      try {
        command =
            command->get_subcommand(std::string(word));  // `build torch`: the innermost command
      } catch (const CLI::OptionNotFound&) {
      }
      continue;
    }
    if (!word.starts_with("--")) continue;
    std::string_view name =
        word.substr(2, word.find('=') == std::string_view::npos ? word.npos : word.find('=') - 2);
    std::vector<std::string> known;
    for (CLI::App* scope : {command, &app})
      for (const CLI::Option* opt : scope->get_options())
        for (const auto& l : opt->get_lnames()) known.push_back(l);
    if (std::find(known.begin(), known.end(), name) != known.end()) continue;
    std::vector<std::string> near;
    size_t best = 3;
    for (const auto& k : known) {
      size_t d = edit_distance(name, k);
      if (d < best) {
        best = d;
        near.clear();
      }
      if (d == best && d < 3 && std::find(near.begin(), near.end(), "--" + k) == near.end())
        near.push_back("--" + k);
    }
    std::string where = " --help";
    for (const CLI::App* c = command; c != nullptr && c != &app; c = c->get_parent())
      where = " " + c->get_name() + where;
    where = "tailor" + where;
    if (near.empty()) return fmt::format("; `{}` lists the options", where);
    return fmt::format(" (did you mean {}?); `{}` lists the options", join(near, " or "), where);
  }
  return "";
}

int run_command_line(int argc, char** argv) {
  // The launcher a build's steps run behind on the own-namespace route (hidden: not in
  // help, completions or the man page; workpath/fixed_path_wrapper.h). First, before
  // anything could start a thread: a threaded process cannot enter a user namespace.
  if (argc >= 2 && argv[1] == workpath::k_fixed_path_command)
    return workpath::run_fixed_path_wrapper(std::vector<std::string>(argv + 2, argv + argc));
  // A torch build's clone step (hidden too; source/source_clone.h).
  if (argc >= 2 && argv[1] == source::k_clone_command)
    return source::run_clone_command(std::vector<std::string>(argv + 2, argv + argc));
  // Chosen Ninja targets of a configured tree under the builder's governor (hidden too;
  // workflow/governed_targets.h).
  if (argc >= 2 && std::string_view(argv[1]) == "__governed")
    return run_governed_command(std::vector<std::string>(argv + 2, argv + argc));
  CLI::App app{"tailor: made-to-measure PyTorch builds", "tailor"};
  RunFn run;
  add_commands(app, run);
  // A bare `tailor` is usage, on stderr, exit 2; `tailor help [COMMAND]` is help, exit 0.
  if (argc <= 1) {
    std::fputs(app.help().c_str(), stderr);
    return k_exit_bad_input;
  }
  const std::string first = argv[1];
  if (first == "completion") {
    if (argc != 3) return report_error("usage: tailor completion bash|zsh|fish", k_exit_bad_input);
    auto script = completion_script(app, argv[2]);
    if (!script) return report_error(script.error().message, k_exit_bad_input);
    std::fputs(script->c_str(), stdout);
    return 0;
  }
  if (first == "help") {
    if (argc == 3 && std::string_view(argv[2]) == "--man") {
      std::fputs(man_page(app, "tailor " + std::string(tailor_version())).c_str(), stdout);
      return 0;
    }
    if (argc == 2) {
      std::fputs(app.help().c_str(), stdout);
      return 0;
    }
    try {
      // As `tailor COMMAND --help` shows it: "Usage: tailor build ...".
      std::fputs(app.get_subcommand(argv[2])->help("tailor").c_str(), stdout);
      return 0;
    } catch (const CLI::OptionNotFound&) {
      return report_error(unknown_command_message(app, argv[2]), k_exit_bad_input);
    }
  }
  if (!first.empty() && first[0] != '-') {
    const auto names = command_names(app);
    if (std::find(names.begin(), names.end(), first) == names.end())
      return report_error(unknown_command_message(app, first), k_exit_bad_input);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ExtrasError& e) {
    return report_error(e.what() + option_suggestion(app, argc, argv), k_exit_bad_input);
  } catch (const CLI::ParseError& e) {
    // `tailor --versoin`: CLI11 says only that a command is required; the option is the
    // mistake, and its nearest names are the help.
    if (first.starts_with("--"))
      if (std::string hint = option_suggestion(app, argc, argv); !hint.empty())
        return report_error(
            fmt::format("unknown option '{}'{}", first.substr(0, first.find('=')), hint),
            k_exit_bad_input);
    return report_error(e.what(), k_exit_bad_input);
  }
  if (!run) return report_error("no command chosen");
  try {
    return run();
  } catch (const std::bad_alloc&) {
    return report_error("out of memory (the input is larger than tailor can hold)",
                        k_exit_bad_input);
  } catch (const std::exception& e) {
    return report_error(e.what(), k_exit_failed);
  }
}

}  // namespace

}  // namespace tailor::cli
