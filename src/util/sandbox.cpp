#include "util/sandbox.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <glob.h>
#include <grp.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "util/files.h"
#include "util/mount_namespace.h"

#ifndef SECBIT_NOROOT
#define SECBIT_NOROOT (1 << 0)
#define SECBIT_NOROOT_LOCKED (1 << 1)
#define SECBIT_NO_SETUID_FIXUP (1 << 2)
#define SECBIT_NO_SETUID_FIXUP_LOCKED (1 << 3)
#define SECBIT_KEEP_CAPS_LOCKED (1 << 5)
#endif

namespace tailor {
namespace {

namespace fs = std::filesystem;

struct InitArgs {
  const SandboxSpec* spec;
  int sync_read;    // one byte once the id maps are written
  int error_write;  // why the sandbox failed, closed by the program's exec
  bool root;
};

Expected<void> write_file_once(const std::string& path, const std::string& text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return make_error(fmt::format("{}: {}", path, errno_text(errno)));
  ssize_t n = ::write(fd, text.data(), text.size());
  int e = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(text.size()))
    return make_error(fmt::format("writing {}: {}", path, errno_text(n < 0 ? e : EIO)));
  return {};
}

Expected<int> open_path(const std::string& path, int flags) {
  int fd = ::open(path.c_str(), O_PATH | O_CLOEXEC | flags);
  if (fd < 0) return make_error(fmt::format("{}: {}", path, errno_text(errno)));
  return fd;
}

Expected<void> make_dirs(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return make_error(fmt::format("{}: cannot make it in the sandbox: {}", dir, ec.message()));
  return {};
}

Expected<void> tmpfs_at(const std::string& dir, const char* mode) {
  if (::mount("tmpfs", dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, mode) != 0)
    return make_error(fmt::format("mounting a tmpfs on {}: {}", dir, errno_text(errno)));
  return {};
}

// A /dev of the harmless devices (and the GPU's, world-usable anyway), bound from the
// host's, which the tmpfs then hides: no disk, no memory, no console of the host.
Expected<void> minimal_dev() {
  std::vector<std::string> devices = {"null", "zero", "full", "random", "urandom", "tty"};
  glob_t g{};
  if (::glob("/dev/nvidia*", 0, nullptr, &g) == 0)
    for (size_t i = 0; i < g.gl_pathc; ++i)
      if (!fs::is_directory(g.gl_pathv[i])) devices.push_back(fs::path(g.gl_pathv[i]).filename());
  ::globfree(&g);
  std::vector<std::pair<int, std::string>> fds;
  for (const auto& d : devices)
    if (auto fd = open_path("/dev/" + d, 0)) fds.emplace_back(*fd, d);
  TAILOR_TRY_VOID(tmpfs_at("/dev", "mode=0755"));
  for (const auto& [fd, name] : fds) {
    const std::string at = "/dev/" + name;
    int made = ::open(at.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0666);
    if (made >= 0) ::close(made);
    const std::string from = fmt::format("/proc/self/fd/{}", fd);
    if (::mount(from.c_str(), at.c_str(), nullptr, MS_BIND, nullptr) != 0)
      return make_error(fmt::format("binding {}: {}", at, errno_text(errno)));
    ::close(fd);
  }
  for (const char* dir : {"/dev/shm", "/dev/pts"}) ::mkdir(dir, 0755);
  TAILOR_TRY_VOID(tmpfs_at("/dev/shm", "mode=1777"));
  const std::pair<const char*, const char*> links[] = {{"/proc/self/fd", "/dev/fd"},
                                                       {"/proc/self/fd/0", "/dev/stdin"},
                                                       {"/proc/self/fd/1", "/dev/stdout"},
                                                       {"/proc/self/fd/2", "/dev/stderr"}};
  for (const auto& [target, link] : links) (void)::symlink(target, link);
  return {};
}

// The mounts of the sandbox, made by its init (full capabilities in the new user namespace,
// which owns the new mount namespace).
Expected<void> make_mounts(const SandboxSpec& s) {
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    return make_error("making the mounts private: " + errno_text(errno));
  // Opened before anything hides them: the work folder may lie below /tmp.
  TAILOR_TRY(real_fd, open_path(s.real, O_DIRECTORY));
  std::vector<std::pair<int, std::string>> writable;
  for (const auto& w : s.writable)
    if (auto fd = open_path(w, O_DIRECTORY)) writable.emplace_back(*fd, w);
  TAILOR_TRY_VOID(make_all_mounts_read_only());
  // The running system's state (its sockets, a container's /run/secrets): hidden. /var/run
  // is a link to /run. /tmp stays: the work folder, the jobserver's fifo and a HOME may lie
  // there (read-only, and no socket there can be connected to: refuse_unix_sockets).
  for (const char* dir : {"/run", "/var/run"}) {
    struct stat st {};
    if (::lstat(dir, &st) == 0 && S_ISDIR(st.st_mode)) TAILOR_TRY_VOID(tmpfs_at(dir, "mode=0755"));
  }
  TAILOR_TRY_VOID(minimal_dev());
  // The new PID namespace's own processes only, read-only (no sysrq-trigger, no sysctl).
  // Where a container masks parts of its /proc the kernel refuses a new one: the host's
  // stays, read-only, and its processes visible but out of reach (no capability over them).
  (void)::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY, nullptr);
  (void)make_dirs(s.tmpfs_root);
  TAILOR_TRY_VOID(tmpfs_at(s.tmpfs_root, "mode=0755"));
  TAILOR_TRY_VOID(make_dirs(s.fixed));
  TAILOR_TRY_VOID(bind_mount_fd(real_fd, s.fixed, BindAccess::read_write));
  ::close(real_fd);
  for (const auto& [fd, path] : writable) {
    if (make_dirs(path)) TAILOR_TRY_VOID(bind_mount_fd(fd, path, BindAccess::read_write));
    ::close(fd);
  }
  return {};
}

Expected<void> refuse_unix_sockets();

// The program's credentials: no supplementary groups (root), no capability in any set,
// none regained by an exec (SECBIT_NOROOT, no_new_privs).
Expected<void> drop_privileges(bool root) {
  if (root && ::setgroups(0, nullptr) != 0)
    return make_error("dropping the supplementary groups: " + errno_text(errno));
  for (int cap = 0; cap <= 63; ++cap)
    if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL)
      return make_error(fmt::format("dropping capability {}: {}", cap, errno_text(errno)));
  (void)::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  if (::prctl(PR_SET_SECUREBITS,
              SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
                  SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED,
              0, 0, 0) != 0)
    return make_error("locking the securebits: " + errno_text(errno));
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (::syscall(SYS_capset, &header, data) != 0)
    return make_error("clearing the capabilities: " + errno_text(errno));
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    return make_error("no_new_privs: " + errno_text(errno));
  return refuse_unix_sockets();
}

// No Unix socket of the program's own (socket(AF_UNIX, ...) fails with EACCES), so none in the
// file system can be connected to, wherever it lies and whatever its mode (a docker.sock
// below $HOME, root's own sockets, which root keeps reaching through its uid). Pairs
// (socketpair) stay. A 32-bit program's socketcall, whose arguments a filter cannot read, is
// refused the same way.
Expected<void> refuse_unix_sockets() {
#if defined(__x86_64__)
  constexpr uint32_t k_arch = AUDIT_ARCH_X86_64, k_compat = AUDIT_ARCH_I386;
  constexpr uint32_t k_compat_socket = 359, k_compat_socketcall = 102;
#elif defined(__aarch64__)
  constexpr uint32_t k_arch = AUDIT_ARCH_AARCH64, k_compat = AUDIT_ARCH_ARM;
  constexpr uint32_t k_compat_socket = 281, k_compat_socketcall = 0xffffffff;
#endif
#if defined(__x86_64__) || defined(__aarch64__)
  constexpr uint32_t k_deny = SECCOMP_RET_ERRNO | (EACCES & SECCOMP_RET_DATA);
  // x32 programs run as x86_64 with the x32 bit set in the number.
  constexpr uint32_t k_x32_socket =
      k_arch == AUDIT_ARCH_X86_64 ? 0x40000000u | SYS_socket : SYS_socket;
  sock_filter filter[] = {
      /* 0 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
      /* 1 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, k_arch, 0, 4),
      /* 2 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      /* 3 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_socket, 7, 0),
      /* 4 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, k_x32_socket, 6, 0),
      /* 5 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      /* 6 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, k_compat, 0, 3),
      /* 7 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      /* 8 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, k_compat_socketcall, 4, 0),
      /* 9 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, k_compat_socket, 1, 0),
      /* 10 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      /* 11 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[0])),
      /* 12 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, 0, 1),
      /* 13 */ BPF_STMT(BPF_RET | BPF_K, k_deny),
      /* 14 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog prog{static_cast<unsigned short>(sizeof filter / sizeof filter[0]), filter};
  if (::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) != 0)
    return make_error("installing the seccomp filter: " + errno_text(errno));
#endif
  return {};
}

[[noreturn]] void fail_in_sandbox(int fd, const std::string& why) {
  [[maybe_unused]] ssize_t n = ::write(fd, why.data(), why.size());
  ::_exit(127);
}

// PID 1 of the sandbox: the mounts, then the program as its child; it ends with the
// program's status, and the kernel then kills whatever is left in the namespace.
int sandbox_init(void* raw) {
  auto* a = static_cast<InitArgs*>(raw);
  char go = 0;
  if (::read(a->sync_read, &go, 1) != 1) ::_exit(127);  // the parent could not map the ids
  ::close(a->sync_read);
  (void)::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (auto made = make_mounts(*a->spec); !made)
    fail_in_sandbox(a->error_write, made.error().message);
  pid_t program = ::fork();
  if (program < 0) fail_in_sandbox(a->error_write, "fork: " + errno_text(errno));
  if (program == 0) {
    (void)::prctl(PR_SET_PDEATHSIG, SIGKILL);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) ::sigaction(sig, &dfl, nullptr);
    if (auto dropped = drop_privileges(a->root); !dropped)
      fail_in_sandbox(a->error_write, dropped.error().message);
    if (!a->spec->chdir.empty() && ::chdir(a->spec->chdir.c_str()) != 0)
      fail_in_sandbox(a->error_write, fmt::format("{}: cannot change into it: {}", a->spec->chdir,
                                                  errno_text(errno)));
    std::vector<char*> argv;
    for (const auto& s : a->spec->argv) argv.push_back(const_cast<char*>(s.c_str()));
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    fail_in_sandbox(a->error_write,
                    fmt::format("cannot run {}: {}", a->spec->argv[0], errno_text(errno)));
  }
  ::close(a->error_write);
  // Signals from outside reach the program through its process group; the init has no
  // handler, so as PID 1 it ignores them.
  for (;;) {
    int status = 0;
    pid_t w = ::waitpid(-1, &status, 0);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) ::_exit(127);
    if (w == program) ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  }
}

}  // namespace

Expected<int> run_sandboxed(const SandboxSpec& spec) {
  if (spec.argv.empty()) return make_error("no program to run");
  const uid_t uid = ::geteuid();
  const gid_t gid = ::getegid();
  int sync[2], err[2];
  if (::pipe2(sync, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0)
    return make_error("pipe: " + errno_text(errno));
  InitArgs args{&spec, sync[0], err[1], uid == 0};
  constexpr size_t k_stack = size_t{1} << 20;
  void* stack = ::mmap(nullptr, k_stack, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) return make_error("mmap: " + errno_text(errno));
  const int flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC |
                    CLONE_NEWUTS | SIGCHLD;
  pid_t init = ::clone(sandbox_init, static_cast<char*>(stack) + k_stack, flags, &args);
  const int clone_errno = errno;
  ::close(sync[0]);
  ::close(err[1]);
  if (init < 0) {
    ::close(sync[1]);
    ::close(err[0]);
    return make_error("clone(CLONE_NEWUSER|CLONE_NEWPID|...): " +
                      why_no_user_namespace(clone_errno));
  }
  // Root stays root inside (the files it reads are root's), anyone else themselves; neither
  // has a capability over the host.
  const std::string proc = fmt::format("/proc/{}/", init);
  Expected<void> mapped = uid == 0 ? Expected<void>() : write_file_once(proc + "setgroups", "deny");
  if (mapped) mapped = write_file_once(proc + "uid_map", fmt::format("{} {} 1\n", uid, uid));
  if (mapped) mapped = write_file_once(proc + "gid_map", fmt::format("{} {} 1\n", gid, gid));
  if (!mapped) {
    ::kill(init, SIGKILL);
    ::waitpid(init, nullptr, 0);
    return make_error(mapped.error().message);
  }
  [[maybe_unused]] ssize_t n = ::write(sync[1], "1", 1);
  ::close(sync[1]);
  std::string why;
  char buf[1024];
  for (ssize_t got; (got = ::read(err[0], buf, sizeof buf)) != 0;) {
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) break;
    if (why.size() < 4096) why.append(buf, static_cast<size_t>(got));
  }
  ::close(err[0]);
  // The program's process group gets the caller's signals; this process waits for it.
  struct sigaction ign {};
  ign.sa_handler = SIG_IGN;
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) ::sigaction(sig, &ign, nullptr);
  int status = 0;
  while (::waitpid(init, &status, 0) < 0 && errno == EINTR) {
  }
  ::munmap(stack, k_stack);
  if (!why.empty()) return make_error(why);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace tailor
