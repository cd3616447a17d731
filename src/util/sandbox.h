// A program run in a sandbox made with the kernel's own calls, as bubblewrap makes one, the
// same whether the caller is root or not:
//  - a new user namespace (root maps to root, anyone else to themselves) that owns new mount,
//    PID, network, IPC and UTS namespaces: the program has no capability over the host,
//    cannot setns into the caller's namespaces, and sees only its own processes;
//  - the host's file system read-only (mount_setattr), /run hidden under an empty tmpfs
//    (the running system's state: sockets, a container's secrets), a /dev of
//    null, zero, full, random, urandom, tty and the NVIDIA devices only, a fresh /dev/shm, a
//    read-only /proc of the new PID namespace;
//  - only the folders asked for writable, bound at their own paths, and one folder bound at
//    another path below a tmpfs;
//  - the program itself without capabilities even in its namespace (bounding set, ambient
//    and effective sets cleared, SECBIT_NOROOT locked) and with no_new_privs, so it cannot
//    remount what was made read-only (and the mounts it would copy into a namespace of its
//    own are locked by the kernel);
//  - no Unix socket of its own (a seccomp filter: socket(AF_UNIX) fails with EACCES; pairs
//    stay), so no socket in the file system is reachable, wherever it lies;
//  - an init of its own as PID 1 of the namespace: when the program ends, the init ends
//    with its status and the kernel kills every process left in the namespace (a daemon, a
//    child holding the output).
// Generic: it knows nothing of builds. The caller must be single-threaded.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "util/expected.h"

namespace tailor {

struct SandboxSpec {
  std::string tmpfs_root;             ///< a tmpfs here, `fixed` made below it
  std::string real, fixed;            ///< `real` bound writable at `fixed`
  std::vector<std::string> writable;  ///< bound writable at their own paths (missing: skipped)
  std::string chdir;                  ///< the program's folder (inside the sandbox)
  std::vector<std::string> argv;      ///< the program
};

/// Runs spec.argv in the sandbox and waits for it: its exit status, or 128 + the signal that
/// ended it. An error (naming the call and why, in words) when the sandbox cannot be made or
/// the program cannot be started; then nothing ran.
Expected<int> run_sandboxed(const SandboxSpec& spec);

}  // namespace tailor
