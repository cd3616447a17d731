// A private mount namespace for the calling process, made with the kernel's own calls and
// no helper program: what `workpath/fixed_path`'s wrapper needs to show a folder at
// another path to the program it then executes. Generic: it knows nothing of builds.
//
// The calling process must be single-threaded (unshare(CLONE_NEWUSER) refuses otherwise)
// and is meant to exec right after: everything here changes the process itself.
#pragma once
#include <string>
#include <string_view>

#include "util/expected.h"

namespace tailor {

enum class MountNamespaceKind {
  mount_only,  ///< CLONE_NEWNS alone: the process had CAP_SYS_ADMIN (root)
  with_user,   ///< CLONE_NEWUSER|CLONE_NEWNS: this uid and gid mapped to themselves
};

std::string_view mount_namespace_kind_name(MountNamespaceKind kind);  // "mount", "user+mount"

/// Moves this process into a new mount namespace whose mounts are all private (nothing
/// made in it reaches the parent namespace). With CAP_SYS_ADMIN a mount namespace alone;
/// otherwise, or when that is refused (root in a container without the capability), a new
/// user namespace too, where the process's effective uid and gid map to themselves
/// (`/proc/self/setgroups` = deny; files keep their owners, and the program run after is
/// this user, without privileges outside). The error names the call and says why in
/// words ("user namespaces are disabled here (user.max_user_namespaces = 0)", ...).
Expected<MountNamespaceKind> enter_private_mount_namespace();

/// Why the kernel refused a user namespace (errno `e`), in words a user can act on.
std::string why_no_user_namespace(int e);

/// A tmpfs (mode 0755, nosuid, nodev) over the folder `dir`.
Expected<void> mount_tmpfs(const std::string& dir);

enum class BindAccess {
  as_source,   ///< the bind is read-only where its source is
  read_write,  ///< remounted writable (a folder below a read-only `/`, --sandbox)
};

/// The folder open at `fd` (O_PATH is enough) mounted at `to`, recursively. Taking an fd
/// lets the caller open the source before a tmpfs or a read-only `/` hides it.
Expected<void> bind_mount_fd(int fd, const std::string& to, BindAccess access);

/// Every mount of this (private) namespace read-only, recursively (mount_setattr, Linux
/// 5.12+); what is mounted afterwards is not affected.
Expected<void> make_all_mounts_read_only();

}  // namespace tailor
