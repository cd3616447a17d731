// The fixed work path: which text is mapped, each route's command line, the route
// choice over fakes, tailor's own launcher (its arguments, and a real namespace made by it
// in a forked child), the real fixed folder's moves, and bubblewrap where it works.
#include "workpath/fixed_path.h"

#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>

#include "support/fake_host.h"
#include "support/fixtures.h"
#include "util/process.h"
#include "workpath/fixed_folder.h"
#include "workpath/fixed_path_wrapper.h"

namespace tailor::workpath {
namespace {

namespace fs = std::filesystem;

TEST(FixedPath, NamesAFolderPerPackage) {
  EXPECT_EQ(fixed_work_path("torch-scatter"), "/tmp/.tailor-build/torch-scatter");
  EXPECT_EQ(fixed_work_path("a/../b c"), "/tmp/.tailor-build/a_.._b_c");
  EXPECT_EQ(fixed_work_path(".."), "/tmp/.tailor-build/package");
  // A package named `..x` (issue 51) got a path the launcher refused, blamed on the machine.
  EXPECT_EQ(fixed_work_path("..x"), "/tmp/.tailor-build/_.x");
  EXPECT_EQ(fixed_work_path(".hidden"), "/tmp/.tailor-build/_hidden");
  EXPECT_EQ(fixed_work_path(""), "/tmp/.tailor-build/package");
}

TEST(FixedPath, MapsWholePathsOnly) {
  FixedPath fp{"/home/u/w/pkg-1a2b", "/tmp/.tailor-build/pkg", FixedPathRoute::bwrap, "bwrap"};
  EXPECT_EQ(to_fixed("/home/u/w/pkg-1a2b", fp), "/tmp/.tailor-build/pkg");
  EXPECT_EQ(to_fixed("/home/u/w/pkg-1a2b/src/build", fp), "/tmp/.tailor-build/pkg/src/build");
  EXPECT_EQ(to_fixed("-I/home/u/w/pkg-1a2b/src/csrc", fp), "-I/tmp/.tailor-build/pkg/src/csrc");
  EXPECT_EQ(to_fixed("--jobserver-auth=fifo:/home/u/w/pkg-1a2b/jobserver.fifo", fp),
            "--jobserver-auth=fifo:/tmp/.tailor-build/pkg/jobserver.fifo");
  EXPECT_EQ(to_fixed("/a/bin:/home/u/w/pkg-1a2b/compiler-wrappers:/usr/bin", fp),
            "/a/bin:/tmp/.tailor-build/pkg/compiler-wrappers:/usr/bin");
  // Longer names and paths that only end in the folder's name are other paths.
  EXPECT_EQ(to_fixed("/home/u/w/pkg-1a2b-old/x", fp), "/home/u/w/pkg-1a2b-old/x");
  EXPECT_EQ(to_fixed("/x/home/u/w/pkg-1a2b/y", fp), "/x/home/u/w/pkg-1a2b/y");
  EXPECT_EQ(to_fixed("no path here", fp), "no path here");
}

TEST(FixedPath, WrapsAStepBehindBubblewrap) {
  FixedPath fp{"/w/a", "/tmp/.tailor-build/p", FixedPathRoute::bwrap, "/usr/bin/bwrap"};
  tailor::plan::Step st;
  st.title = "build";
  st.argv = {"python3", "/w/a/build_wheel.py", "--out", "/w/a/wheelhouse"};
  st.cwd = "/w/a/src";
  st.env = {{"MAKEFLAGS", "-j4 --jobserver-auth=fifo:/w/a/jobserver.fifo"}, {"HOME", "/home/u"}};
  tailor::plan::Step w = in_fixed_path(st, fp);
  EXPECT_EQ(w.cwd, "/w/a/src");  // bubblewrap starts in the real folder
  EXPECT_EQ(w.argv,
            (std::vector<std::string>{
                "/usr/bin/bwrap", "--dev-bind", "/", "/", "--tmpfs", "/tmp/.tailor-build", "--bind",
                "/w/a", "/tmp/.tailor-build/p", "--die-with-parent", "--chdir",
                "/tmp/.tailor-build/p/src", "--", "python3", "/tmp/.tailor-build/p/build_wheel.py",
                "--out", "/tmp/.tailor-build/p/wheelhouse"}));
  EXPECT_EQ(w.env["MAKEFLAGS"], "-j4 --jobserver-auth=fifo:/tmp/.tailor-build/p/jobserver.fifo");
  EXPECT_EQ(w.env["HOME"], "/home/u");
}

TEST(FixedPath, WrapsAStepBehindTailorItself) {
  FixedPath fp{"/w/a", "/tmp/.tailor-build/p", FixedPathRoute::own_namespace,
               "/opt/tailor/bin/tailor"};
  tailor::plan::Step st;
  st.argv = {"python3", "/w/a/build_wheel.py"};
  st.cwd = "/w/a/src";
  st.env = {{"MAKEFLAGS", "--jobserver-auth=fifo:/w/a/jobserver.fifo"}};
  tailor::plan::Step w = in_fixed_path(st, fp);
  EXPECT_EQ(w.cwd, "/w/a/src");  // the launcher starts in the real folder and changes in
  EXPECT_EQ(w.argv,
            (std::vector<std::string>{"/opt/tailor/bin/tailor", "__fixed-path", "--tmpfs",
                                      "/tmp/.tailor-build", "--bind", "/w/a",
                                      "/tmp/.tailor-build/p", "--chdir", "/tmp/.tailor-build/p/src",
                                      "--", "python3", "/tmp/.tailor-build/p/build_wheel.py"}));
  EXPECT_EQ(w.env["MAKEFLAGS"], "--jobserver-auth=fifo:/tmp/.tailor-build/p/jobserver.fifo");
  // What the launcher reads back is what was meant.
  auto parsed =
      parse_fixed_path_wrapper_args(std::vector<std::string>(w.argv.begin() + 2, w.argv.end()));
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->tmpfs, "/tmp/.tailor-build");
  EXPECT_EQ(parsed->real, "/w/a");
  EXPECT_EQ(parsed->fixed, "/tmp/.tailor-build/p");
  EXPECT_EQ(parsed->chdir, "/tmp/.tailor-build/p/src");
  EXPECT_FALSE(parsed->sandbox);
  EXPECT_EQ(parsed->argv,
            (std::vector<std::string>{"python3", "/tmp/.tailor-build/p/build_wheel.py"}));
  // A launcher prefix (the sccache server's): no program, no cwd of its own.
  EXPECT_EQ(fixed_path_argv(fp, "", {}).back(), "--");
}

TEST(FixedPath, TheFolderRouteRunsTheStepAsItIsAtTheFixedFolder) {
  FixedPath fp{"/w/a", "/tmp/.tailor-build/p", FixedPathRoute::folder, ""};
  tailor::plan::Step st;
  st.argv = {"python3", "/w/a/build_wheel.py"};
  st.cwd = "/w/a/src";
  st.env = {{"OUT", "/w/a/wheelhouse"}};
  tailor::plan::Step w = in_fixed_path(st, fp);
  EXPECT_EQ(w.argv, (std::vector<std::string>{"python3", "/tmp/.tailor-build/p/build_wheel.py"}));
  EXPECT_EQ(w.cwd, "/tmp/.tailor-build/p/src");
  EXPECT_EQ(w.env["OUT"], "/tmp/.tailor-build/p/wheelhouse");
  EXPECT_TRUE(fixed_path_argv(fp, "/w/a", {}).empty());  // no launcher prefix
}

TEST(FixedPath, TheLauncherRefusesWhatItDoesNotUnderstand) {
  auto err = [](std::vector<std::string> args) {
    auto r = parse_fixed_path_wrapper_args(args);
    return r ? std::string("parsed") : r.error().message;
  };
  EXPECT_EQ(err({"--tmpfs", "/r", "--bind", "/w", "/r/p", "--", "true"}), "parsed");
  EXPECT_EQ(err({"--tmpfs", "/r", "--bind", "/w", "/r/p", "--frob", "--", "true"}),
            "unknown argument '--frob'");
  EXPECT_EQ(err({"--tmpfs", "/r", "--bind", "/w", "/r/p", "--"}), "no program after --");
  EXPECT_EQ(err({"--tmpfs", "/r", "--bind", "/w", "/elsewhere/p", "--", "true"}),
            "/elsewhere/p: not a folder below /r");
  EXPECT_EQ(err({"--tmpfs", "/r", "--bind", "/w", "/r/../etc", "--", "true"}),
            "/r/../etc: not a folder below /r");
  EXPECT_EQ(err({"--tmpfs", "/r", "--bind", "/w", "/r/a/..", "--", "true"}),
            "/r/a/..: not a folder below /r");
  EXPECT_TRUE(
      parse_fixed_path_wrapper_args({"--tmpfs", "/r", "--bind", "/w", "/r/..x", "--", "true"}));
  EXPECT_EQ(err({"--tmpfs", "/r", "--bind", "w", "/r/p", "--", "true"}), "w: not an absolute path");
  EXPECT_EQ(err({"--bind", "/w", "/r/p", "--", "true"}),
            "--tmpfs ROOT and --bind REAL FIXED are needed");
  EXPECT_EQ(err({"--tmpfs", "/r", "--bind", "/w"}), "--bind: needs a path");
  EXPECT_EQ(err({"--tmpfs", "/r", "--bind", "/w", "/r/p", "--rw", "/c", "--", "true"}),
            "--rw: only with --sandbox");
  auto sb = parse_fixed_path_wrapper_args(
      {"--tmpfs", "/r", "--bind", "/w", "/r/p", "--sandbox", "--rw", "/c", "--", "true"});
  ASSERT_TRUE(sb);
  EXPECT_TRUE(sb->sandbox);
  EXPECT_EQ(sb->writable, std::vector<std::string>{"/c"});
}

TEST(FixedPath, ReadsTheRouteSwitch) {
  EXPECT_EQ(*parse_fixed_path_route(nullptr), std::nullopt);
  EXPECT_EQ(*parse_fixed_path_route(""), std::nullopt);
  EXPECT_EQ(*parse_fixed_path_route("namespace"), FixedPathRoute::own_namespace);
  EXPECT_EQ(*parse_fixed_path_route("bwrap"), FixedPathRoute::bwrap);
  EXPECT_EQ(*parse_fixed_path_route("folder"), FixedPathRoute::folder);
  EXPECT_EQ(*parse_fixed_path_route("none"), FixedPathRoute::none);
  auto bad = parse_fixed_path_route("tmp");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find(
                "TAILOR_FIXED_PATH_ROUTE=tmp: expected namespace, bwrap, folder or none"),
            std::string::npos);
}

TEST(FixedPath, TakesTheFirstRouteThatOpens) {
  const FixedPathTools tools{"/opt/tailor", "/usr/bin/bwrap"};
  std::vector<std::string> tried;
  auto only = [&](FixedPathRoute ok) {
    return [&, ok](const FixedPath& fp) -> Expected<void> {
      tried.push_back(std::string(fixed_path_route_name(fp.route)));
      if (fp.route == ok) return {};
      return make_error(std::string(fixed_path_route_name(fp.route)) + " refused");
    };
  };
  auto c = choose_fixed_path("/w/a", "/tmp/.tailor-build/p", tools, std::nullopt,
                             only(FixedPathRoute::own_namespace));
  ASSERT_TRUE(c.path);
  EXPECT_EQ(c.route(), FixedPathRoute::own_namespace);
  EXPECT_EQ(c.path->launcher, "/opt/tailor");
  EXPECT_EQ(tried, std::vector<std::string>{"namespace"});
  EXPECT_TRUE(c.refused.empty());

  tried.clear();
  c = choose_fixed_path("/w/a", "/tmp/.tailor-build/p", tools, std::nullopt,
                        only(FixedPathRoute::folder));
  EXPECT_EQ(c.route(), FixedPathRoute::folder);
  EXPECT_EQ(tried, (std::vector<std::string>{"namespace", "bwrap", "folder"}));
  EXPECT_EQ(c.refusals(), "namespace: namespace refused; bwrap: bwrap refused");

  // No bubblewrap: not tried, and said so.
  tried.clear();
  c = choose_fixed_path("/w/a", "/tmp/.tailor-build/p", {"/opt/tailor", ""}, std::nullopt,
                        only(FixedPathRoute::none));
  EXPECT_EQ(c.route(), FixedPathRoute::none);
  EXPECT_EQ(tried, (std::vector<std::string>{"namespace", "folder"}));
  EXPECT_EQ(
      c.refusals(),
      "namespace: namespace refused; bwrap: no bwrap (bubblewrap) on PATH; folder: folder refused");
  std::string warning = no_fixed_path_warning(c);
  EXPECT_NE(warning.find("no fixed work path (namespace: namespace refused;"), std::string::npos)
      << warning;
  EXPECT_NE(warning.find("the wheel's bytes depend on it; fix: let this user make namespaces"),
            std::string::npos)
      << warning;

  // A forced route is the only one tried; when it fails there is no other.
  tried.clear();
  c = choose_fixed_path("/w/a", "/tmp/.tailor-build/p", tools, FixedPathRoute::folder,
                        only(FixedPathRoute::own_namespace));
  EXPECT_EQ(c.route(), FixedPathRoute::none);
  EXPECT_EQ(tried, std::vector<std::string>{"folder"});
  EXPECT_EQ(c.forced, "TAILOR_FIXED_PATH_ROUTE=folder");
  warning = no_fixed_path_warning(c);
  EXPECT_NE(warning.find("(TAILOR_FIXED_PATH_ROUTE=folder: folder: folder refused)"),
            std::string::npos)
      << warning;
  EXPECT_NE(warning.find("fix: unset TAILOR_FIXED_PATH_ROUTE"), std::string::npos) << warning;
}

// The system's tries, over a fake runner: each namespace route runs `true` behind its
// launcher once; the launcher's own prefix is left out of the reason; the folder route is
// only checked (here: a root that is a file, so it is refused too).
TEST(FixedPath, TriesEachNamespaceRouteOnceWithTrue) {
  tailor::test::FakeCommandRunner runner;
  CommandResult refused = tailor::test::ran(127);
  refused.err =
      "tailor: fixed path: unshare(CLONE_NEWUSER|CLONE_NEWNS): permission denied: user namespaces "
      "are disabled\n";
  runner.by_program["/opt/tailor"] = refused;
  CommandResult bwrap_refused = tailor::test::ran(1);
  bwrap_refused.err = "bwrap: setting up uid map: Permission denied\n";
  runner.by_program["/usr/bin/bwrap"] = bwrap_refused;
  tailor::test::TempDir dir("fixed_path_tries");
  { std::ofstream(dir.path / "root") << "a file in the way\n"; }
  auto c = open_fixed_path("/w/a", (dir.path / "root" / "p").string(),
                           {"/opt/tailor", "/usr/bin/bwrap"}, std::nullopt, runner);
  EXPECT_EQ(c.route(), FixedPathRoute::none);
  ASSERT_EQ(runner.calls.size(), 2u);
  EXPECT_EQ(runner.calls[0].front(), "/opt/tailor");
  EXPECT_EQ(runner.calls[0].back(), "true");
  EXPECT_EQ(runner.calls[1].front(), "/usr/bin/bwrap");
  ASSERT_EQ(c.refused.size(), 3u);
  EXPECT_EQ(c.refused[0].second,
            "unshare(CLONE_NEWUSER|CLONE_NEWNS): permission denied: user namespaces are disabled");
  EXPECT_EQ(c.refused[1].second, "bwrap: setting up uid map: Permission denied");
  EXPECT_EQ(c.refused[2].second, (dir.path / "root").string() + " is not a folder");
  // The launcher works: taken at once, nothing else tried.
  runner.by_program["/opt/tailor"] = tailor::test::ran(0);
  runner.calls.clear();
  c = open_fixed_path("/w/a", "/tmp/.tailor-build/p", {"/opt/tailor", "/usr/bin/bwrap"},
                      std::nullopt, runner);
  EXPECT_EQ(c.route(), FixedPathRoute::own_namespace);
  EXPECT_EQ(runner.calls.size(), 1u);
}

/// Runs tailor's launcher in a forked child (the test process stands in for tailor; the
/// child is single-threaded, as the real launcher is): its exit status and output.
/// `as_uid`: the child first becomes that user (root only), as an unprivileged build is.
std::pair<int, std::string> run_launcher(const std::vector<std::string>& args,
                                         std::optional<uid_t> as_uid = std::nullopt) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return {-1, "pipe"};
  pid_t pid = fork();
  if (pid == 0) {
    dup2(pipe_fds[1], 1);
    dup2(pipe_fds[1], 2);
    close(pipe_fds[0]);
    if (as_uid && (setgroups(0, nullptr) != 0 || setgid(*as_uid) != 0 || setuid(*as_uid) != 0))
      _exit(126);
    // As an exec'd tailor is (setuid made this child non-dumpable, which hides /proc/self).
    prctl(PR_SET_DUMPABLE, 1);
    // As the runner starts every step: the launcher must hand this on to the program.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    _exit(run_fixed_path_wrapper(args));
  }
  close(pipe_fds[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(pipe_fds[0], buf, sizeof buf)) > 0;)
    out.append(buf, static_cast<size_t>(n));
  close(pipe_fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), out};
}

/// The kernel (or AppArmor, or a seccomp filter) refused the namespace itself: a machine
/// without one, not a fault of the launcher.
bool no_namespace_here(int rc, const std::string& out) {
  if (rc != 127) return false;
  for (const char* why : {"unshare(", "clone(", "making the mounts private", "/setgroups",
                          "/uid_map", "/gid_map", "mount_setattr"})
    if (out.find(why) != std::string::npos) return true;
  return false;
}

TEST(FixedPath, TailorsOwnNamespaceSeesTheFolderAtTheFixedPath) {
  fs::path dir = tailor::test::scratch_dir("own_namespace");
  { std::ofstream(dir / "marker") << "here\n"; }
  const std::string fixed = fixed_work_path("own-namespace-test");
  auto [rc, out] =
      run_launcher({"--tmpfs", std::string(k_fixed_root), "--bind", dir.string(), fixed, "--chdir",
                    fixed, "--", "sh", "-c", "pwd; cat marker; echo made > made-inside; id -u"});
  if (no_namespace_here(rc, out)) GTEST_SKIP() << "no namespace here: " << out;
  ASSERT_EQ(rc, 0) << out;
  EXPECT_EQ(out, fixed + "\nhere\n" + std::to_string(geteuid()) + "\n");  // the same user inside
  EXPECT_TRUE(fs::exists(dir / "made-inside"));  // written through to the real folder
  EXPECT_FALSE(fs::exists(fixed + "/marker"));   // nothing outside the namespace
  // A program that is not there, a folder that is not there: one line, exit 127.
  auto [rc2, out2] = run_launcher({"--tmpfs", std::string(k_fixed_root), "--bind", dir.string(),
                                   fixed, "--", "tailor-no-such-program"});
  EXPECT_EQ(rc2, 127);
  EXPECT_EQ(out2,
            "tailor: fixed path: cannot run tailor-no-such-program: no such file or directory\n");
  auto [rc3, out3] = run_launcher({"--tmpfs", std::string(k_fixed_root), "--bind",
                                   (dir / "missing").string(), fixed, "--", "true"});
  EXPECT_EQ(rc3, 127);
  EXPECT_EQ(out3,
            "tailor: fixed path: " + (dir / "missing").string() + ": no such file or directory\n");
}

TEST(FixedPath, TailorsOwnNamespaceWorksForAnUnprivilegedUser) {
  if (geteuid() != 0)
    GTEST_SKIP() << "becoming another user needs root (this user's own run is the test above)";
  fs::path dir = tailor::test::scratch_dir("own_namespace_user");
  fs::permissions(dir, fs::perms::all);
  { std::ofstream(dir / "marker") << "here\n"; }
  const std::string fixed = fixed_work_path("own-namespace-user-test");
  auto [rc, out] = run_launcher(
      {"--tmpfs", std::string(k_fixed_root), "--bind", dir.string(), fixed, "--chdir", fixed, "--",
       "sh", "-c",
       "pwd; cat marker; echo made > made-inside; id -u; id -g; exec python3 -c 'import ctypes; "
       "s = ctypes.c_int(); ctypes.CDLL(None).prctl(2, ctypes.byref(s)); print(s.value)'"},
      65534);
  if (no_namespace_here(rc, out)) GTEST_SKIP() << "no user namespace here: " << out;
  ASSERT_EQ(rc, 0) << out;
  // The user's own ids inside, and PR_SET_PDEATHSIG (SIGKILL, 9) kept through the exec.
  EXPECT_EQ(out, fixed + "\nhere\n65534\n65534\n9\n");
  struct stat st {};
  ASSERT_EQ(stat((dir / "made-inside").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 65534u);  // and the files it writes are the user's
}

TEST(FixedPath, TheSandboxHasNoNetworkAndWritesOnlyItsFolders) {
  fs::path dir = tailor::test::scratch_dir("sandbox");
  fs::path cache = dir / "cache", outside = tailor::test::scratch_dir("sandbox_outside");
  fs::create_directories(dir / "work");
  fs::create_directories(cache);
  const std::string fixed = fixed_work_path("sandbox-test");
  auto [rc, out] =
      run_launcher({"--tmpfs", std::string(k_fixed_root), "--bind", (dir / "work").string(), fixed,
                    "--chdir", fixed, "--sandbox", "--rw", cache.string(), "--", "sh", "-c",
                    "echo a > in-work && echo b > " + cache.string() +
                        "/in-cache && echo c > /dev/shm/tailor-sandbox-$$ && "
                        "rm /dev/shm/tailor-sandbox-$$ && echo writes-ok; { echo d > " +
                        outside.string() +
                        "/x; } 2>/dev/null || echo outside-refused; "
                        "python3 -c 'import socket; socket.create_connection((\"1.1.1.1\", 80), "
                        "2)' 2>&1 | tail -1"});
  if (no_namespace_here(rc, out)) GTEST_SKIP() << "no sandbox here: " << out;
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("writes-ok\noutside-refused\n"), std::string::npos) << out;
  EXPECT_NE(out.find("Network is unreachable"), std::string::npos) << out;
  EXPECT_TRUE(fs::exists(dir / "work" / "in-work"));
  EXPECT_TRUE(fs::exists(cache / "in-cache"));
  EXPECT_FALSE(fs::exists(outside / "x"));
}

// The escapes of issue 51, each tried from inside the sandbox, as root and as an
// unprivileged user: remounting `/` writable, nsenter into the caller's namespaces, a Unix
// socket listening outside the work folder (in /tmp, world-writable), a TCP listener on the
// host's loopback, a daemon that outlives the program, and what the program holds: no
// capability, no_new_privs, its own PID namespace with only its own processes.
constexpr const char* k_escapes = R"PY(
import os, socket, subprocess, sys
outside, sock, port, tailor_pid, mark = sys.argv[1:6]
def tried(name, f):
    try:
        f()
        print(name, 'ESCAPED')
    except Exception:
        print(name, 'refused')
def remount():
    subprocess.run(['mount', '-o', 'remount,bind,rw', '/'], capture_output=True)
    subprocess.run(['mount', '-o', 'remount,rw', outside], capture_output=True)
    open(outside + '/remounted', 'w').write('x')
def nsenter():
    for pid in (tailor_pid, '1'):
        subprocess.run(['nsenter', '-t', pid, '-m', '-n', 'sh', '-c', 'echo x > ' + outside + '/nsenter'],
                       capture_output=True, timeout=10)
    if not os.path.exists(outside + '/nsenter'):
        raise OSError('nothing written')
def unix():
    s = socket.socket(socket.AF_UNIX); s.settimeout(3); s.connect(sock); s.sendall(b'escaped')
def tcp():
    socket.create_connection(('127.0.0.1', int(port)), 3).sendall(b'escaped')
for name, f in (('remount', remount), ('nsenter', nsenter), ('unix-socket', unix), ('tcp', tcp)):
    tried(name, f)
status = dict(l.split(':\t', 1) for l in open('/proc/self/status').read().splitlines() if ':\t' in l)
print('CapEff', status['CapEff'].strip(), 'CapBnd', status['CapBnd'].strip(), 'NoNewPrivs', status['NoNewPrivs'].strip())
print('processes', len([p for p in os.listdir('/proc') if p.isdigit()]))
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        devnull = os.open('/dev/null', os.O_RDWR)
        for fd in (0, 1, 2): os.dup2(devnull, fd)
        os.execv('/bin/sleep', ['sleep', '300', mark])
    os._exit(0)
os.wait()
print('done')
)PY";

// Processes whose command line holds `mark`.
int processes_marked(const std::string& mark) {
  int n = 0;
  for (const auto& e : fs::directory_iterator("/proc")) {
    std::ifstream in(e.path() / "cmdline");
    std::string cmd((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (cmd.find(mark) != std::string::npos) ++n;
  }
  return n;
}

void expect_no_escape(std::optional<uid_t> as_uid) {
  if (!fs::exists("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3";
  const std::string who = as_uid ? "uid " + std::to_string(*as_uid) : "this user";
  fs::path dir = tailor::test::scratch_dir(as_uid ? "escape_user" : "escape");
  fs::path outside = tailor::test::scratch_dir(as_uid ? "escape_user_out" : "escape_out");
  fs::create_directories(dir / "work");
  fs::permissions(dir / "work", fs::perms::all);
  fs::permissions(outside, fs::perms::all);
  // Listeners outside: a Unix socket anyone may connect to, in /tmp (hidden) or, as here, in
  // the folder the test runs in (seen, but no Unix socket can be made), and TCP on the loopback.
  const std::string sock =
      (fs::current_path() / ("tailor-escape-" + std::to_string(getpid()) + ".sock")).string();
  fs::remove(sock);
  int us = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  sockaddr_un ua{};
  ua.sun_family = AF_UNIX;
  std::strncpy(ua.sun_path, sock.c_str(), sizeof ua.sun_path - 1);
  ASSERT_EQ(bind(us, reinterpret_cast<sockaddr*>(&ua), sizeof ua), 0);
  chmod(sock.c_str(), 0777);
  ASSERT_EQ(listen(us, 4), 0);
  int ts = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  sockaddr_in ta{};
  ta.sin_family = AF_INET;
  ta.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(ts, reinterpret_cast<sockaddr*>(&ta), sizeof ta), 0);
  socklen_t len = sizeof ta;
  getsockname(ts, reinterpret_cast<sockaddr*>(&ta), &len);
  ASSERT_EQ(listen(ts, 4), 0);
  const std::string mark = "tailor-escape-" + std::to_string(getpid()) + (as_uid ? "-user" : "");
  auto [rc, out] =
      run_launcher({"--tmpfs", std::string(k_fixed_root), "--bind", (dir / "work").string(),
                    fixed_work_path("escape-test"), "--chdir", fixed_work_path("escape-test"),
                    "--sandbox", "--", "/usr/bin/python3", "-c", k_escapes, outside.string(), sock,
                    std::to_string(ntohs(ta.sin_port)), std::to_string(getpid()), mark},
                   as_uid);
  if (no_namespace_here(rc, out)) GTEST_SKIP() << "no sandbox here for " << who << ": " << out;
  ASSERT_EQ(rc, 0) << out;
  for (const char* escape : {"remount", "nsenter", "unix-socket", "tcp"})
    EXPECT_NE(out.find(std::string(escape) + " refused"), std::string::npos) << who << ": " << out;
  EXPECT_NE(out.find("CapEff 0000000000000000 CapBnd 0000000000000000 NoNewPrivs 1"),
            std::string::npos)
      << out;
  // The init (1) and the program, perhaps the short-lived sh of a command: nothing outside.
  auto at = out.find("processes ");
  ASSERT_NE(at, std::string::npos) << out;
  EXPECT_LE(std::stoi(out.substr(at + 10)), 3) << out;
  EXPECT_NE(out.find("done"), std::string::npos) << out;
  for (const char* f : {"remounted", "nsenter"}) EXPECT_FALSE(fs::exists(outside / f)) << f;
  EXPECT_LT(accept(us, nullptr, nullptr), 0);
  EXPECT_LT(accept(ts, nullptr, nullptr), 0);
  EXPECT_EQ(processes_marked(mark), 0) << "the daemon outlived the sandbox";
  close(us);
  close(ts);
  fs::remove(sock);
}

TEST(FixedPath, NoEscapeFromTheSandboxAsRoot) {
  if (geteuid() != 0) GTEST_SKIP() << "the root case needs root (the next test is this user's)";
  expect_no_escape(std::nullopt);
}

TEST(FixedPath, NoEscapeFromTheSandboxAsThisOrAnUnprivilegedUser) {
  expect_no_escape(geteuid() == 0 ? std::optional<uid_t>(65534) : std::nullopt);
}

TEST(FixedPath, ARealBubblewrapNamespaceSeesTheFolderAtTheFixedPath) {
  std::string bwrap = find_in_path("bwrap");
  if (bwrap.empty()) GTEST_SKIP() << "no bwrap on PATH";
  fs::path dir = tailor::test::scratch_dir("fixed_path");
  { std::ofstream(dir / "marker") << "here\n"; }
  SystemCommandRunner runner;
  auto choice = open_fixed_path(dir.string(), fixed_work_path("fixed-path-test"), {"", bwrap},
                                FixedPathRoute::bwrap, runner);
  if (!choice.path)
    GTEST_SKIP() << "bubblewrap cannot make a namespace here: " << choice.refusals();
  CommandSpec spec;
  spec.argv = fixed_path_argv(*choice.path, dir.string(),
                              {"sh", "-c", "pwd; cat marker; echo made > made-inside"});
  CommandResult r = runner.run(spec);
  ASSERT_TRUE(r.ok()) << r.err;
  EXPECT_EQ(r.out, "/tmp/.tailor-build/fixed-path-test\nhere\n");
  EXPECT_TRUE(fs::exists(dir / "made-inside"));  // written through to the real folder
  EXPECT_FALSE(
      fs::exists("/tmp/.tailor-build/fixed-path-test/marker"));  // nothing outside the namespace
  // A folder that does not exist: one line, no namespace.
  auto missing = open_fixed_path((dir / "missing").string(), fixed_work_path("x"), {"", bwrap},
                                 FixedPathRoute::bwrap, runner);
  ASSERT_FALSE(missing.path);
  ASSERT_EQ(missing.refused.size(), 1u);
  EXPECT_EQ(missing.refused[0].second.find('\n'), std::string::npos);
}

/// The work folder's entries (name -> mtime in ns), for comparing before and after a move.
std::map<std::string, long long> times_in(const fs::path& dir) {
  std::map<std::string, long long> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    struct stat st {};
    lstat(e.path().c_str(), &st);
    // lexically: fs::relative resolves links, so link.cu would overwrite a.cu's entry.
    out[e.path().lexically_relative(dir).string()] =
        st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
  }
  return out;
}

/// A fixed folder in `root` (a folder of another file system than /tmp makes the moves copies).
void move_in_and_out(const fs::path& root) {
  tailor::test::TempDir work("fixed_folder_work");
  const fs::path real = work.path;
  fs::create_directories(real / "src" / "build");
  { std::ofstream(real / "src" / "a.cu") << "kernel\n"; }
  { std::ofstream(real / "src" / "build" / "a.o") << "object\n"; }
  fs::create_symlink("a.cu", real / "src" / "link.cu");
  { std::ofstream(real / "build-20260101T000000Z-1.log") << "log\n"; }
  ASSERT_EQ(mkfifo((real / "jobserver.fifo").c_str(), 0600), 0);
  const fs::path fixed = root / "pkg";
  const auto before = times_in(real / "src");
  auto folder = FixedFolder::acquire(real.string(), fixed.string(), false, nullptr);
  ASSERT_TRUE(folder) << folder.error().message;
  { std::ofstream(fixed / "stale") << "an earlier run's\n"; }
  ASSERT_TRUE(folder->move_in());
  EXPECT_EQ(tailor::test::slurp_text((fixed / "src" / "a.cu").string()), "kernel\n");
  EXPECT_FALSE(fs::exists(real / "src"));
  EXPECT_FALSE(fs::exists(fixed / "stale"));
  EXPECT_TRUE(fs::is_symlink(fixed / "src" / "link.cu"));
  EXPECT_TRUE(fs::exists(real / "build-20260101T000000Z-1.log"));  // the log stays
  EXPECT_FALSE(fs::exists(fixed / "build-20260101T000000Z-1.log"));
  EXPECT_TRUE(fs::is_symlink(fixed / "jobserver.fifo"));  // held open by tailor: linked
  EXPECT_EQ(times_in(fixed / "src"), before);
  { std::ofstream(fixed / "src" / "build" / "b.o") << "new object\n"; }
  ASSERT_TRUE(folder->move_out());
  EXPECT_EQ(tailor::test::slurp_text((real / "src" / "build" / "b.o").string()), "new object\n");
  EXPECT_TRUE(fs::is_fifo(real / "jobserver.fifo"));
  EXPECT_FALSE(fs::exists(fixed / "src"));
  EXPECT_FALSE(fs::exists(fixed / "jobserver.fifo"));
  auto after = times_in(real / "src"), expected = before;
  after.erase("build/b.o");
  after.erase("build");  // b.o changed it
  expected.erase("build");
  EXPECT_EQ(after, expected);
  // A second build of the package waits (here: --no-wait, so it says who holds it).
  auto second = FixedFolder::acquire(real.string(), fixed.string(), false, nullptr);
  ASSERT_FALSE(second);
  EXPECT_NE(
      second.error().message.find("is in use by tailor build pid " + std::to_string(getpid())),
      std::string::npos)
      << second.error().message;
}

TEST(FixedFolder, MovesTheWorkFolderInAndOutByRename) {
  tailor::test::TempDir root("fixed_folder_root");
  move_in_and_out(root.path / "fixed");
}

TEST(FixedFolder, MovesTheWorkFolderInAndOutAcrossFileSystems) {
  if (!fs::is_directory("/dev/shm")) GTEST_SKIP() << "no /dev/shm";
  fs::path root = fs::path("/dev/shm") / ("tailor-fixed-folder-" + std::to_string(getpid()));
  move_in_and_out(root);
  fs::remove_all(root);
}

// A tailor killed with -9 in the middle of a build leaves the work folder's contents in the
// fixed folder; the next build of the package, from this work folder or another, must give
// them back (a --source tree is the user's own), never clear them.
TEST(FixedFolder, ARunKilledLeavesItsContentsWhichTheNextBuildGivesBack) {
  tailor::test::TempDir root("fixed_folder_killed");
  tailor::test::TempDir work("fixed_folder_killed_work");
  tailor::test::TempDir other("fixed_folder_killed_other");
  const fs::path real = work.path, fixed = root.path / "pkg";
  fs::create_directories(real / "src" / "build");
  { std::ofstream(real / "src" / "setup.py") << "source\n"; }
  { std::ofstream(real / "src" / "build" / "a.o") << "hours of work\n"; }
  {
    auto killed = FixedFolder::acquire(real.string(), fixed.string(), false, nullptr);
    ASSERT_TRUE(killed) << killed.error().message;
    ASSERT_TRUE(killed->move_in());
    ASSERT_FALSE(fs::exists(real / "src"));
  }  // no move_out: the process died; its lock goes with it
  // The same work folder's next build: the tree back, then in again for the run.
  {
    auto next = FixedFolder::acquire(real.string(), fixed.string(), false, nullptr);
    ASSERT_TRUE(next) << next.error().message;
    ASSERT_TRUE(next->move_in());
    EXPECT_EQ(tailor::test::slurp_text((fixed / "src" / "build" / "a.o").string()),
              "hours of work\n");
    EXPECT_EQ(tailor::test::slurp_text((fixed / ".tailor-moved-from").string()),
              real.string() + "\n");
  }  // killed again
  // Another work folder's build of the package: the tree goes back where it came from.
  fs::create_directories(other.path / "src");
  { std::ofstream(other.path / "src" / "setup.py") << "other source\n"; }
  auto third = FixedFolder::acquire(other.path.string(), fixed.string(), false, nullptr);
  ASSERT_TRUE(third) << third.error().message;
  ASSERT_TRUE(third->move_in());
  EXPECT_EQ(tailor::test::slurp_text((real / "src" / "build" / "a.o").string()), "hours of work\n");
  EXPECT_EQ(tailor::test::slurp_text((real / "src" / "setup.py").string()), "source\n");
  EXPECT_EQ(tailor::test::slurp_text((fixed / "src" / "setup.py").string()), "other source\n");
  ASSERT_TRUE(third->move_out());
  EXPECT_FALSE(fs::exists(fixed / ".tailor-moved-from"));
  EXPECT_EQ(tailor::test::slurp_text((other.path / "src" / "setup.py").string()), "other source\n");
}

TEST(FixedFolder, RefusesALinkOrAnotherUsersFolder) {
  tailor::test::TempDir root("fixed_folder_refuse");
  fs::create_directories(root.path / "elsewhere");
  fs::create_symlink(root.path / "elsewhere", root.path / "pkg");
  auto link = check_fixed_folder((root.path / "pkg").string());
  ASSERT_FALSE(link);
  EXPECT_EQ(link.error().message, (root.path / "pkg").string() + " is a link, not a folder");
  if (geteuid() != 0) GTEST_SKIP() << "making another user's folder needs root";
  fs::create_directories(root.path / "theirs");
  ASSERT_EQ(chown((root.path / "theirs").c_str(), 65534, 65534), 0);
  auto theirs = check_fixed_folder((root.path / "theirs").string());
  ASSERT_FALSE(theirs);
  EXPECT_EQ(theirs.error().message,
            (root.path / "theirs").string() +
                " belongs to uid 65534 (another user could change a build there)");
}

}  // namespace
}  // namespace tailor::workpath
