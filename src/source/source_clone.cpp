#include "source/source_clone.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "util/interrupt.h"
#include "util/strings.h"

namespace fs = std::filesystem;

namespace tailor::source {
namespace {

// A torch clone with its submodules is ~4 GB; a slow line gets two hours, then it stops.
constexpr std::chrono::hours k_clone_timeout{2};
constexpr std::chrono::minutes k_query_timeout{1};

bool is_file_url(const std::string& url) { return url.rfind("file://", 0) == 0; }

bool is_failure_line(std::string_view line) {
  return line.rfind("fatal:", 0) == 0 || line.rfind("error:", 0) == 0;
}

struct Git {
  const CloneRequest& req;
  CommandRunner& runner;
  std::FILE* out;

  /// git ARGS in `cwd`; with `echo`, its lines go to `out` (the step's log) as they come.
  CommandResult run(std::vector<std::string> args, const std::string& cwd, bool echo,
                    std::chrono::milliseconds timeout) const {
    CommandSpec spec;
    spec.argv = {"git"};
    // A mirror on this machine may name its submodules by file:// URLs as well.
    if (is_file_url(req.url))
      spec.argv.insert(spec.argv.end(), {"-c", "protocol.file.allow=always"});
    spec.argv.insert(spec.argv.end(), args.begin(), args.end());
    spec.cwd = cwd;
    spec.timeout = timeout;
    // Never a prompt for credentials: a remote that wants them fails at once.
    spec.env["GIT_TERMINAL_PROMPT"] = "0";
    spec.env["LC_ALL"] = "C";
    // git's progress goes to the log as it comes; its failure lines are said once, in the
    // step's own failure line (run_clone_command).
    if (echo)
      spec.on_line = [this](std::string_view line) {
        if (is_failure_line(trim(line))) return;
        std::fprintf(out, "%.*s\n", static_cast<int>(line.size()), line.data());
        std::fflush(out);
      };
    return runner.run(spec);
  }

  std::string commit(const std::string& dir, const std::string& rev) const {
    auto r = run({"rev-parse", "--verify", "-q", rev + "^{commit}"}, dir, false, k_query_timeout);
    return r.ok() ? std::string(trim(r.out)) : "";
  }
};

/// git's own words for a failure: its `fatal:` lines (else its last `error:` line, else
/// its last line), said once in the clone's one failure line; how it ended when it said
/// nothing.
std::string git_failure(const CommandResult& r) {
  if (!r.started) return "could not run git (is it installed and on PATH?)";
  if (r.interrupted) return "interrupted";
  if (r.timed_out) return fmt::format("git timed out after {} hours", k_clone_timeout.count());
  std::vector<std::string> fatal;
  std::string error, last;
  for (const auto& raw : split_any(r.out + "\n" + r.err, "\n")) {
    std::string line(trim(raw));
    if (line.empty()) continue;
    if (line.rfind("fatal:", 0) == 0 && std::find(fatal.begin(), fatal.end(), line) == fatal.end())
      fatal.push_back(line);
    if (line.rfind("error:", 0) == 0) error = line;
    last = line;
  }
  if (!fatal.empty()) return join(fatal, "; ");
  if (!error.empty()) return error;
  if (!last.empty()) return last;
  return fmt::format("git exited with {}", r.exit_code);
}

Expected<CloneResult> reuse_clone(const Git& git, const CloneRequest& r) {
  const std::string head = git.commit(r.dest, "HEAD");
  if (head.empty())
    return make_error(fmt::format(
        "{} is a git folder without a commit checked out (an interrupted clone of another "
        "tool?); remove it, or build in another --work-dir",
        r.dest));
  const std::string tagged = git.commit(r.dest, "refs/tags/" + r.tag);
  if (tagged != head)
    return make_error(fmt::format(
        "{} holds commit {}, not {} ({}); remove it to clone {}, or build in another --work-dir",
        r.dest, head.substr(0, 12), r.tag,
        tagged.empty() ? "a tag it does not have" : "at " + tagged.substr(0, 12), r.tag));
  std::fprintf(git.out, "tailor: clone: reusing %s (%s, commit %s)\n", r.dest.c_str(),
               r.tag.c_str(), head.substr(0, 12).c_str());
  auto sub = git.run({"submodule", "update", "--init", "--recursive", "--depth", "1"}, r.dest, true,
                     k_clone_timeout);
  if (!sub.ok()) return make_error(git_failure(sub));
  return CloneResult{true, head};
}

}  // namespace

Expected<CloneRequest> parse_clone_args(const std::vector<std::string>& args) {
  CloneRequest r;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    std::string* field = a == "--url"    ? &r.url
                         : a == "--tag"  ? &r.tag
                         : a == "--dest" ? &r.dest
                                         : nullptr;
    if (!field) return make_error("unknown argument '" + a + "'");
    if (i + 1 >= args.size()) return make_error(a + " needs a value");
    *field = args[++i];
  }
  if (r.url.empty() || r.tag.empty() || r.dest.empty())
    return make_error("--url, --tag and --dest are required");
  // A tag or URL starting with '-' would be read by git as an option.
  if (r.url.front() == '-' || r.tag.front() == '-')
    return make_error("a URL or tag cannot start with '-'");
  if (!fs::path(r.dest).is_absolute()) return make_error("--dest must be an absolute path");
  return r;
}

std::vector<std::string> clone_command_argv(const std::string& tailor, const CloneRequest& r) {
  return {tailor, std::string(k_clone_command), "--url", r.url, "--tag", r.tag, "--dest", r.dest};
}

Expected<CloneResult> clone_source(const CloneRequest& r, CommandRunner& runner, std::FILE* out) {
  const Git git{r, runner, out};
  std::error_code ec;
  const fs::path dest(r.dest);
  if (fs::exists(dest / ".git", ec)) return reuse_clone(git, r);
  if (fs::exists(dest, ec)) {
    if (!fs::is_directory(dest, ec) || !fs::is_empty(dest, ec))
      return make_error(fmt::format(
          "{} is there and is not a clone; remove it, or build in another --work-dir", r.dest));
    fs::remove(dest, ec);
  }
  const std::string partial = r.dest + ".partial";
  fs::remove_all(partial, ec);
  if (ec) return make_error(fmt::format("cannot remove {}: {}", partial, ec.message()));
  fs::create_directories(dest.parent_path(), ec);
  if (ec)
    return make_error(
        fmt::format("cannot create {}: {}", dest.parent_path().string(), ec.message()));
  std::fprintf(out, "tailor: clone: %s at %s into %s\n", r.url.c_str(), r.tag.c_str(),
               r.dest.c_str());
  std::fflush(out);
  auto c = git.run({"clone", "--recurse-submodules", "--shallow-submodules", "--depth", "1",
                    "--branch", r.tag, "--", r.url, partial},
                   dest.parent_path().string(), true, k_clone_timeout);
  if (!c.ok()) {
    fs::remove_all(partial, ec);
    return make_error(git_failure(c));
  }
  const std::string head = git.commit(partial, "HEAD");
  if (head.empty() || head != git.commit(partial, "refs/tags/" + r.tag)) {
    fs::remove_all(partial, ec);
    return make_error(fmt::format("the clone's HEAD ({}) is not the tag's commit",
                                  head.empty() ? "none" : head.substr(0, 12)));
  }
  fs::rename(partial, dest, ec);
  if (ec) return make_error(fmt::format("cannot move {} to {}: {}", partial, r.dest, ec.message()));
  return CloneResult{false, head};
}

int run_clone_command(const std::vector<std::string>& args) {
  auto req = parse_clone_args(args);
  if (!req) {
    std::fprintf(stderr, "tailor: clone: %s\n", req.error().message.c_str());
    return 2;
  }
  install_interrupt_handlers();
  SystemCommandRunner runner;
  auto done = clone_source(*req, runner, stdout);
  std::fflush(stdout);
  if (!done) {
    std::fprintf(stderr, "tailor: clone: cannot clone %s from %s: %s\n", req->tag.c_str(),
                 req->url.c_str(), done.error().message.c_str());
    return interrupt_signal() != 0 ? interrupt_exit_code(interrupt_signal()) : 1;
  }
  std::fprintf(stdout, "tailor: clone: %s %s at %s (commit %s)\n",
               done->reused ? "reused" : "cloned", req->tag.c_str(), req->dest.c_str(),
               done->commit.substr(0, 12).c_str());
  return 0;
}

}  // namespace tailor::source
