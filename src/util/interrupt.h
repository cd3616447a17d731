// Interrupts (SIGINT, SIGTERM, SIGHUP) and the process trees tailor starts.
//
// Signals: the handler only records the signal and writes a byte into a self-pipe that is
// never drained, so the read end stays readable from the first interrupt on and every
// poll loop (SystemCommandRunner::run) notices it, whichever thread got the signal. The
// runner forwards the signal to its child's process group, waits a short grace, then
// kills the group and every process of this run (see below) and reports `interrupted`.
// After an interrupt the runner starts nothing new; the build layers stop at their next
// step, publish nothing, and the CLI prints one line and exits 128+signal.
//
// Children must also die when tailor itself dies without a chance to clean up (kill -9).
// Three nets, because a build's tree spreads over several process groups (ninja puts
// each compiler in its own group, `sh -c 'cmd &'` orphans):
//  1. every child tailor forks gets PR_SET_PDEATHSIG(SIGKILL) before exec;
//  2. every child gets the environment variable `TAILOR_RUN_<token>=1`, unique to this
//     tailor process and inherited by all its descendants;
//  3. a supervisor, forked once per tailor process, holds the read end of a pipe whose
//     write end only tailor holds (close-on-exec). Tailor tells it each child's process
//     group; at a clean exit it says so. When the pipe reaches end-of-file without that,
//     tailor is gone, and the supervisor sweeps: it stops (SIGSTOP) every process in a
//     registered group, carrying the variable, or whose parent it has already stopped
//     (stopped processes cannot fork or exit, so parent links stay intact), repeats until
//     nothing new turns up, then kills (SIGKILL) them all, and scans again until a scan
//     finds nothing. The supervisor runs only system calls on fixed buffers (it is forked
//     from a possibly threaded process), ignores terminal signals and sits in its own
//     process group so a signal to tailor's group does not take it down first.
// What escapes that net when tailor is killed: a descendant that both cleared its
// environment and was orphaned before the sweep, outside every registered group. While
// tailor lives nothing escapes: it is the subreaper of everything it starts
// (PR_SET_CHILD_SUBREAPER), so an orphan in a command's tree (a daemon's double fork,
// `setsid`) becomes tailor's child, and kill_orphans kills it, with its descendants, when
// the command ends.
#pragma once
#include <sys/types.h>

#include <chrono>
#include <mutex>
#include <string>

namespace tailor {

/// Installs the SIGINT/SIGTERM/SIGHUP handlers (once; later calls do nothing). SIGINT and
/// SIGHUP stay ignored when they were ignored at start (`nohup`, background jobs).
void install_interrupt_handlers();
/// The first signal received, 0 when none.
int interrupt_signal();
/// How many interrupt signals arrived (a second one escalates to SIGKILL at once).
int interrupt_count();
/// Readable once interrupted; -1 before install_interrupt_handlers().
int interrupt_fd();
/// 128 + the signal, the conventional exit status after an interrupt.
inline int interrupt_exit_code(int sig) { return 128 + sig; }
/// For tests: forget a received interrupt.
void reset_interrupt_for_testing();

/// How long a child's process group may take to stop after the forwarded signal before
/// it is killed.
inline constexpr std::chrono::milliseconds k_interrupt_grace{2000};

/// The variable every child carries ("TAILOR_RUN_<16 hex>"); created on first use.
const std::string& run_marker_name();
/// Registers a child's process group with the supervisor (starting it on first use).
void supervise_process_group(pid_t pgid);
/// The child's group was reaped: forget it.
void release_process_group(pid_t pgid);
/// Stops and kills every live process of this run: those carrying the marker, those in a
/// still-registered group, and their descendants. Returns how many were killed.
int kill_run_processes();

/// Makes this process the subreaper of its descendants (PR_SET_CHILD_SUBREAPER; once).
void become_subreaper();
/// Held while a child is forked and registered (supervise_process_group), so the orphan
/// sweep never takes a child that is being started for one of tailor's own.
std::unique_lock<std::mutex> lock_child_table();
/// Kills every orphan of this process, with its descendants, and reaps them: a child that
/// tailor did not start itself (not a registered group's leader, not the supervisor, not
/// kept). Returns how many were killed.
int kill_orphans();
/// Keeps the orphans there are now (a daemon a command is meant to leave: sccache's server)
/// out of kill_orphans, and a child started detached (`keep_child`).
void keep_orphans();
void keep_child(pid_t pid);

}  // namespace tailor
