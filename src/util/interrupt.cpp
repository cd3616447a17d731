#include "util/interrupt.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <set>
#include <utility>
#include <vector>

namespace tailor {
namespace {

// ---- signals -------------------------------------------------------------------------

volatile sig_atomic_t g_signal = 0;
volatile sig_atomic_t g_count = 0;
int g_self_pipe[2] = {-1, -1};

void on_interrupt(int sig) {
  int saved = errno;
  if (g_signal == 0) g_signal = sig;
  g_count = g_count + 1;
  if (g_self_pipe[1] >= 0) {
    char c = 1;
    [[maybe_unused]] ssize_t n = write(g_self_pipe[1], &c, 1);
  }
  errno = saved;
}

// ---- the sweep: system calls on fixed buffers only (runs in the forked supervisor) ------

constexpr int k_max_procs = 16384;
constexpr int k_max_groups = 1024;

char g_marker[64];  // "TAILOR_RUN_<16 hex>=" (with the '=')
size_t g_marker_len = 0;

struct Dirent64 {
  uint64_t d_ino;
  int64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[];
};

bool parse_pid(const char* s, pid_t& out) {
  if (!*s) return false;
  long v = 0;
  for (; *s; ++s) {
    if (*s < '0' || *s > '9') return false;
    v = v * 10 + (*s - '0');
    if (v > 0x3fffffff) return false;
  }
  out = static_cast<pid_t>(v);
  return true;
}

/// "<name>/<leaf>" into buf.
void proc_path(char* buf, size_t size, const char* name, const char* leaf) {
  size_t n = 0;
  for (const char* p = name; *p && n + 1 < size; ++p) buf[n++] = *p;
  if (n + 1 < size) buf[n++] = '/';
  for (const char* p = leaf; *p && n + 1 < size; ++p) buf[n++] = *p;
  buf[n] = 0;
}

/// Parent, process group and state from /proc/<pid>/stat ("pid (comm) S ppid pgrp ...").
bool read_stat(int proc_fd, const char* name, pid_t& ppid, pid_t& pgrp, char& state) {
  char path[64], buf[1024];
  proc_path(path, sizeof path, name, "stat");
  int fd = openat(proc_fd, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return false;
  buf[n] = 0;
  char* close_paren = nullptr;
  for (char* p = buf; *p; ++p)
    if (*p == ')') close_paren = p;
  if (!close_paren || close_paren[1] != ' ') return false;
  char* p = close_paren + 2;
  state = *p;
  if (!*p || p[1] != ' ') return false;
  p += 2;
  long fields[2] = {0, 0};
  for (int i = 0; i < 2; ++i) {
    bool neg = *p == '-';
    if (neg) ++p;
    if (*p < '0' || *p > '9') return false;
    long v = 0;
    while (*p >= '0' && *p <= '9') v = v * 10 + (*p++ - '0');
    fields[i] = neg ? -v : v;
    if (*p == ' ') ++p;
  }
  ppid = static_cast<pid_t>(fields[0]);
  pgrp = static_cast<pid_t>(fields[1]);
  return true;
}

/// Whether /proc/<pid>/environ holds the marker (an entry starting with it).
bool environ_has_marker(int proc_fd, const char* name) {
  if (g_marker_len == 0) return false;
  char path[64];
  proc_path(path, sizeof path, name, "environ");
  int fd = openat(proc_fd, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  // buf keeps the last (marker length) bytes of the previous chunk before the new one, so
  // a match across chunks is found; `prev_nul` says whether the byte before buf[0] ended
  // an entry.
  char buf[8192 + 64];
  size_t kept = 0;
  bool found = false, at_entry_start = true;
  for (;;) {
    ssize_t n = read(fd, buf + kept, 8192);
    if (n <= 0) break;
    size_t len = kept + static_cast<size_t>(n);
    for (size_t i = 0; i + g_marker_len <= len; ++i) {
      bool starts = i == 0 ? at_entry_start : buf[i - 1] == 0;
      if (starts && std::memcmp(buf + i, g_marker, g_marker_len) == 0) {
        found = true;
        break;
      }
    }
    if (found) break;
    size_t keep = g_marker_len < len ? g_marker_len : len;
    at_entry_start = len - keep == 0 ? at_entry_start : buf[len - keep - 1] == 0;
    std::memmove(buf, buf + len - keep, keep);
    kept = keep;
  }
  close(fd);
  return found;
}

bool contains(const pid_t* list, int n, pid_t v) {
  for (int i = 0; i < n; ++i)
    if (list[i] == v) return true;
  return false;
}

void sleep_ms(long ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

pid_t g_stopped[k_max_procs];

/// What a sweep starts from: processes in `groups`, carrying the marker (when `marker`), or
/// children of `orphans_of` but those in `exempt` (tailor's orphans); their descendants too.
struct SweepRoots {
  const pid_t* groups = nullptr;
  int n_groups = 0;
  bool marker = false;
  pid_t orphans_of = -1;
  const pid_t* exempt = nullptr;
  int n_exempt = 0;
};

/// Stops, then kills, every process the roots name or descended from one of those; repeats
/// until a scan finds nothing. Returns how many were killed.
int sweep(const SweepRoots& roots, pid_t exclude) {
  pid_t self = getpid();
  int killed = 0;
  for (int pass = 0; pass < 50; ++pass) {
    int n = 0;
    for (int round = 0; round < 1000; ++round) {
      int proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (proc_fd < 0) return killed;
      int added = 0;
      alignas(8) char dents[16384];
      for (;;) {
        long got = syscall(SYS_getdents64, proc_fd, dents, sizeof dents);
        if (got <= 0) break;
        for (long off = 0; off < got;) {
          auto* d = reinterpret_cast<Dirent64*>(dents + off);
          off += d->d_reclen;
          pid_t pid;
          if (!parse_pid(d->d_name, pid)) continue;
          if (pid == self || pid == exclude || pid <= 1 || contains(g_stopped, n, pid)) continue;
          pid_t ppid = 0, pgrp = 0;
          char state = 0;
          if (!read_stat(proc_fd, d->d_name, ppid, pgrp, state)) continue;
          if (state == 'Z' || state == 'X') continue;
          bool match = contains(roots.groups, roots.n_groups, pgrp) ||
                       contains(g_stopped, n, ppid) ||
                       (ppid == roots.orphans_of && !contains(roots.exempt, roots.n_exempt, pid)) ||
                       (roots.marker && environ_has_marker(proc_fd, d->d_name));
          if (!match || n >= k_max_procs) continue;
          if (kill(pid, SIGSTOP) != 0) continue;
          g_stopped[n++] = pid;
          ++added;
        }
      }
      close(proc_fd);
      if (added == 0) break;
    }
    if (n == 0) break;
    for (int i = 0; i < n; ++i)
      if (kill(g_stopped[i], SIGKILL) == 0) ++killed;
    sleep_ms(10);
  }
  return killed;
}

int sweep(const pid_t* groups, int n_groups, pid_t exclude) {
  SweepRoots roots;
  roots.groups = groups;
  roots.n_groups = n_groups;
  roots.marker = true;
  return sweep(roots, exclude);
}

// ---- the supervisor ----------------------------------------------------------------

struct Record {
  char op;  // 'A' add a group, 'R' remove it, 'Q' tailor exits cleanly
  char pad[3];
  int32_t pid;
};

[[noreturn]] void supervisor_main(int fd) {
  static pid_t groups[k_max_groups];
  int n = 0;
  for (;;) {
    Record r{};
    ssize_t got = recv(fd, &r, sizeof r, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      // Tailor is gone without saying goodbye: nothing it started may outlive it.
      sweep(groups, n, -1);
      _exit(0);
    }
    if (got != sizeof r) continue;
    if (r.op == 'Q') _exit(0);
    if (r.op == 'A' && n < k_max_groups && !contains(groups, n, r.pid)) groups[n++] = r.pid;
    if (r.op == 'R')
      for (int i = 0; i < n; ++i)
        if (groups[i] == r.pid) {
          groups[i] = groups[--n];
          break;
        }
  }
}

struct SupervisorState {
  std::once_flag marker_once, start_once;
  std::string marker_name;
  int fd = -1;
  pid_t pid = -1;
  pid_t owner = -1;  // the process that started the supervisor (a fork is not it)
  std::mutex mutex;  // groups and the sweep's static buffers
  std::set<pid_t> groups;
  std::set<pid_t> kept;  // children tailor leaves running: detached daemons
  std::mutex children;   // held while a child is forked and registered, and by the orphan sweep
};

SupervisorState& state() {
  static SupervisorState* s = new SupervisorState;  // never destroyed: used at exit
  return *s;
}

void send_record(char op, pid_t pid) {
  SupervisorState& s = state();
  if (s.fd < 0) return;
  Record r{};
  r.op = op;
  r.pid = pid;
  // MSG_NOSIGNAL: a dead supervisor is no reason to die of SIGPIPE.
  while (send(s.fd, &r, sizeof r, MSG_NOSIGNAL) < 0 && errno == EINTR) {
  }
}

// At a clean exit (registered with atexit when the supervisor starts): the supervisor
// leaves without sweeping.
void supervisor_clean_exit() {
  if (state().owner == getpid()) send_record('Q', 0);
}

void start_supervisor() {
  SupervisorState& s = state();
  run_marker_name();
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) return;
  rlimit lim{};
  long max_fd = getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY
                    ? static_cast<long>(lim.rlim_cur)
                    : 65536;
  pid_t pid = fork();
  if (pid < 0) {
    close(sv[0]);
    close(sv[1]);
    return;
  }
  if (pid == 0) {
    // Only async-signal-safe calls from here on: the parent may have threads.
    setpgid(0, 0);
    struct sigaction ign {};
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU, SIGPIPE})
      sigaction(sig, &ign, nullptr);
    sigset_t all;
    sigemptyset(&all);
    sigprocmask(SIG_SETMASK, &all, nullptr);
    if (sv[0] != 3) dup2(sv[0], 3);
    int devnull = open("/dev/null", O_RDWR);
    if (devnull >= 0)
      for (int fd = 0; fd < 3; ++fd) dup2(devnull, fd);
    // Hold no other descriptor: not the pipes of running commands (their readers wait for
    // end-of-file), not a folder lock, not the other end of this socket.
    if (syscall(SYS_close_range, 4U, ~0U, 0U) != 0)
      for (long fd = 4; fd < max_fd; ++fd) close(static_cast<int>(fd));
    supervisor_main(3);
  }
  close(sv[0]);
  s.fd = sv[1];
  s.pid = pid;
  s.owner = getpid();
  std::atexit(supervisor_clean_exit);
}

}  // namespace

void install_interrupt_handlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (pipe2(g_self_pipe, O_CLOEXEC | O_NONBLOCK) != 0) g_self_pipe[0] = g_self_pipe[1] = -1;
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
      struct sigaction old {};
      sigaction(sig, nullptr, &old);
      if (sig != SIGTERM && old.sa_handler == SIG_IGN) continue;
      struct sigaction sa {};
      sa.sa_handler = on_interrupt;
      sigemptyset(&sa.sa_mask);
      sa.sa_flags = SA_RESTART;
      sigaction(sig, &sa, nullptr);
    }
  });
}

int interrupt_signal() { return g_signal; }
int interrupt_count() { return g_count; }
int interrupt_fd() { return g_self_pipe[0]; }

void reset_interrupt_for_testing() {
  if (g_self_pipe[0] >= 0) {
    char buf[256];
    while (read(g_self_pipe[0], buf, sizeof buf) > 0) {
    }
  }
  g_signal = 0;
  g_count = 0;
}

const std::string& run_marker_name() {
  SupervisorState& s = state();
  std::call_once(s.marker_once, [&s] {
    std::random_device rd;
    uint64_t token = (uint64_t{rd()} << 32) ^ rd() ^ (static_cast<uint64_t>(getpid()) << 16);
    char hex[17];
    for (int i = 0; i < 16; ++i) hex[i] = "0123456789abcdef"[(token >> (60 - 4 * i)) & 0xf];
    hex[16] = 0;
    s.marker_name = std::string("TAILOR_RUN_") + hex;
    std::string with_eq = s.marker_name + "=";
    std::memcpy(g_marker, with_eq.data(), with_eq.size());
    g_marker_len = with_eq.size();
  });
  return s.marker_name;
}

void supervise_process_group(pid_t pgid) {
  SupervisorState& s = state();
  std::call_once(s.start_once, start_supervisor);
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.groups.insert(pgid);
  }
  send_record('A', pgid);
}

void release_process_group(pid_t pgid) {
  SupervisorState& s = state();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.groups.erase(pgid);
  }
  send_record('R', pgid);
}

int kill_run_processes() {
  SupervisorState& s = state();
  run_marker_name();
  std::lock_guard<std::mutex> lock(s.mutex);
  pid_t groups[k_max_groups];
  int n = 0;
  for (pid_t g : s.groups)
    if (n < k_max_groups) groups[n++] = g;
  return sweep(groups, n, s.pid);
}

}  // namespace tailor

namespace tailor {
namespace {

struct ProcEntry {
  pid_t pid, ppid;
  char state;
};

// Every process: pid, parent, state, read from /proc/<pid>/stat.
std::vector<ProcEntry> all_processes() {
  std::vector<ProcEntry> out;
  int proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (proc_fd < 0) return out;
  alignas(8) char dents[16384];
  for (;;) {
    long got = syscall(SYS_getdents64, proc_fd, dents, sizeof dents);
    if (got <= 0) break;
    for (long off = 0; off < got;) {
      auto* d = reinterpret_cast<Dirent64*>(dents + off);
      off += d->d_reclen;
      pid_t pid, ppid = 0, pgrp = 0;
      char st = 0;
      if (parse_pid(d->d_name, pid) && read_stat(proc_fd, d->d_name, ppid, pgrp, st))
        out.push_back({pid, ppid, st});
    }
  }
  close(proc_fd);
  return out;
}

// The children of this process: (pid, state).
std::vector<std::pair<pid_t, char>> own_children() {
  std::vector<std::pair<pid_t, char>> out;
  const pid_t self = getpid();
  for (const ProcEntry& p : all_processes())
    if (p.ppid == self) out.emplace_back(p.pid, p.state);
  return out;
}

// The children tailor started and still owns: running commands' leaders, the supervisor,
// kept daemons.
std::vector<pid_t> owned_children(SupervisorState& s) {
  std::lock_guard<std::mutex> lock(s.mutex);
  std::vector<pid_t> out(s.groups.begin(), s.groups.end());
  out.insert(out.end(), s.kept.begin(), s.kept.end());
  if (s.pid > 0) out.push_back(s.pid);
  return out;
}

}  // namespace

void become_subreaper() {
  static std::once_flag once;
  std::call_once(once, [] { prctl(PR_SET_CHILD_SUBREAPER, 1); });
}

std::unique_lock<std::mutex> lock_child_table() {
  return std::unique_lock<std::mutex>(state().children);
}

int kill_orphans() {
  SupervisorState& s = state();
  std::lock_guard<std::mutex> children(s.children);
  std::vector<pid_t> owned = owned_children(s), running;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    running.assign(s.groups.begin(), s.groups.end());
  }
  auto in = [](const std::vector<pid_t>& v, pid_t p) {
    return std::find(v.begin(), v.end(), p) != v.end();
  };
  int killed = 0;
  // Killed orphans die as children of tailor, and their descendants come to tailor as their
  // parents die: sweep and reap until no orphan is left (bounded: 5 s).
  for (int round = 0; round < 500; ++round) {
    bool alive = false, any = false;
    for (auto [pid, st] : own_children()) {
      // A zombie is reaped unless a running command's runner waits for it (a kept daemon
      // that ended, an orphan that died); a live child is an orphan unless tailor owns it.
      if (st == 'Z' || st == 'X') {
        if (!in(running, pid) && waitpid(pid, nullptr, WNOHANG) == pid && !in(owned, pid))
          any = true;
      } else if (!in(owned, pid)) {
        alive = any = true;
      }
    }
    if (!any) break;
    if (alive) {
      std::lock_guard<std::mutex> lock(s.mutex);
      SweepRoots roots;
      roots.orphans_of = getpid();
      roots.exempt = owned.data();
      roots.n_exempt = static_cast<int>(owned.size());
      killed += sweep(roots, s.pid);
    } else {
      sleep_ms(10);
    }
  }
  return killed;
}

void keep_orphans() {
  SupervisorState& s = state();
  std::lock_guard<std::mutex> children(s.children);
  std::vector<pid_t> owned = owned_children(s);
  // The orphans and their descendants (a double fork's daemon still below its first child).
  std::vector<ProcEntry> procs = all_processes();
  std::set<pid_t> keep;
  for (const ProcEntry& p : procs)
    if (p.ppid == getpid() && p.state != 'Z' &&
        std::find(owned.begin(), owned.end(), p.pid) == owned.end())
      keep.insert(p.pid);
  for (size_t before = 0; before != keep.size();) {
    before = keep.size();
    for (const ProcEntry& p : procs)
      if (keep.count(p.ppid)) keep.insert(p.pid);
  }
  std::lock_guard<std::mutex> lock(s.mutex);
  s.kept.insert(keep.begin(), keep.end());
}

void keep_child(pid_t pid) {
  SupervisorState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.kept.insert(pid);
}

}  // namespace tailor
