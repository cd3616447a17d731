#include "workpath/fixed_path_wrapper.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>

#include "util/files.h"
#include "util/mount_namespace.h"
#include "util/sandbox.h"
#include "util/text_escape.h"

namespace tailor::workpath {

namespace fs = std::filesystem;

Expected<FixedPathWrapperArgs> parse_fixed_path_wrapper_args(const std::vector<std::string>& args) {
  FixedPathWrapperArgs out;
  size_t i = 0;
  auto value = [&](std::string_view flag) -> Expected<std::string> {
    if (i + 1 >= args.size() || args[i + 1].empty())
      return make_error(fmt::format("{}: needs a path", flag));
    return args[++i];
  };
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      out.argv.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
      break;
    }
    if (a == "--tmpfs") {
      TAILOR_TRY(v, value(a));
      out.tmpfs = v;
    } else if (a == "--bind") {
      TAILOR_TRY(r, value(a));
      TAILOR_TRY(f, value(a));
      out.real = r;
      out.fixed = f;
    } else if (a == "--chdir") {
      TAILOR_TRY(v, value(a));
      out.chdir = v;
    } else if (a == "--sandbox") {
      out.sandbox = true;
    } else if (a == "--rw") {
      TAILOR_TRY(v, value(a));
      out.writable.push_back(v);
    } else {
      return make_error(fmt::format("unknown argument '{}'", a));
    }
  }
  if (out.tmpfs.empty() || out.real.empty())
    return make_error("--tmpfs ROOT and --bind REAL FIXED are needed");
  for (const std::string* p : {&out.tmpfs, &out.real, &out.fixed})
    if (!p->starts_with("/")) return make_error(fmt::format("{}: not an absolute path", *p));
  // The fixed folder lies inside the tmpfs, so the mount point can be made there.
  const fs::path below = fs::path(out.fixed).lexically_relative(out.tmpfs);
  bool climbs = below.empty();
  for (const auto& part : below) climbs = climbs || part == ".." || part == ".";
  if (!out.fixed.starts_with(out.tmpfs + "/") || climbs)
    return make_error(fmt::format("{}: not a folder below {}", out.fixed, out.tmpfs));
  if (!out.writable.empty() && !out.sandbox) return make_error("--rw: only with --sandbox");
  if (out.argv.empty()) return make_error("no program after --");
  return out;
}

namespace {

/// The fixed root exists as a folder (not a link): the tmpfs needs a mount point. Made for
/// every user (sticky, like /tmp) when missing, so the folder route of another user finds it.
Expected<void> ensure_mount_point(const std::string& root) {
  struct stat st {};
  if (::lstat(root.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return {};
    return make_error(fmt::format("{}: not a folder (a link or a file is in the way)", root));
  }
  if (errno != ENOENT) return make_error(fmt::format("{}: {}", root, errno_text(errno)));
  if (::mkdir(root.c_str(), 0777) != 0 && errno != EEXIST)
    return make_error(fmt::format("{}: cannot make the mount point: {}", root, errno_text(errno)));
  (void)::chmod(root.c_str(), 01777);
  return {};
}

Expected<int> open_folder(const std::string& path) {
  int fd = ::open(path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return make_error(fmt::format("{}: {}", path, errno_text(errno)));
  return fd;
}

/// `dir` and its parents below an existing folder (inside the fresh tmpfs).
Expected<void> make_folders(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return make_error(
        fmt::format("{}: cannot make it inside the namespace: {}", dir, ec.message()));
  return {};
}

// The fixed path alone (no --sandbox): a private mount namespace in this process, which
// then execs the program.
Expected<void> enter(const FixedPathWrapperArgs& a) {
  TAILOR_TRY_VOID(ensure_mount_point(a.tmpfs));
  TAILOR_TRY_VOID(enter_private_mount_namespace());
  // Opened in the new namespace (a bind takes its source from there) before anything is
  // mounted: the work folder may lie below the fixed root.
  TAILOR_TRY(real_fd, open_folder(a.real));
  TAILOR_TRY_VOID(mount_tmpfs(a.tmpfs));
  TAILOR_TRY_VOID(make_folders(a.fixed));
  TAILOR_TRY_VOID(bind_mount_fd(real_fd, a.fixed, BindAccess::as_source));
  ::close(real_fd);
  if (!a.chdir.empty() && ::chdir(a.chdir.c_str()) != 0)
    return make_error(fmt::format("{}: cannot change into it: {}", a.chdir, errno_text(errno)));
  return {};
}

}  // namespace

int run_fixed_path_wrapper(const std::vector<std::string>& args) {
  auto fail = [](const std::string& what) {
    std::fprintf(stderr, "tailor: fixed path: %s\n", terminal_safe(what).c_str());
    return 127;
  };
  auto parsed = parse_fixed_path_wrapper_args(args);
  if (!parsed) return fail(parsed.error().message);
  if (parsed->sandbox) {
    // util/sandbox.h: this process stays in tailor's namespaces and waits; the program runs
    // below an init of its own, and ends the namespace when it ends.
    if (auto ready = ensure_mount_point(parsed->tmpfs); !ready) return fail(ready.error().message);
    SandboxSpec spec{parsed->tmpfs,    parsed->real,  parsed->fixed,
                     parsed->writable, parsed->chdir, parsed->argv};
    auto status = run_sandboxed(spec);
    if (!status) return fail(status.error().message);
    return *status;
  }
  // The runner set PR_SET_PDEATHSIG; a change of credentials (the user namespace) may
  // clear it, so it is set again before the exec, which keeps it.
  int death_signal = 0;
  (void)::prctl(PR_GET_PDEATHSIG, &death_signal);
  const pid_t parent = ::getppid();
  if (auto entered = enter(*parsed); !entered) return fail(entered.error().message);
  if (death_signal != 0) {
    (void)::prctl(PR_SET_PDEATHSIG, death_signal);
    if (::getppid() != parent) return fail("tailor went away while the namespace was made");
  }
  std::vector<char*> argv;
  for (auto& s : parsed->argv) argv.push_back(const_cast<char*>(s.c_str()));
  argv.push_back(nullptr);
  ::execvp(argv[0], argv.data());
  return fail(fmt::format("cannot run {}: {}", parsed->argv[0], errno_text(errno)));
}

}  // namespace tailor::workpath
