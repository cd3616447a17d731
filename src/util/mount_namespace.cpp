#include "util/mount_namespace.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>

#include "util/files.h"
#include "util/strings.h"

namespace tailor {

namespace {

/// Writes `text` into a /proc file in one write(2), as the kernel wants for id maps.
Expected<void> write_proc(const char* path, std::string_view text) {
  int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return make_error(fmt::format("{}: {}", path, errno_text(errno)));
  ssize_t n = ::write(fd, text.data(), text.size());
  int e = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(text.size()))
    return make_error(fmt::format("writing {}: {}", path, errno_text(n < 0 ? e : EIO)));
  return {};
}

/// The first line of a small /proc/sys file, trimmed; empty when unreadable.
std::string sysctl(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return std::string(trim(line));
}

}  // namespace

std::string why_no_user_namespace(int e) {
  std::string why = errno_text(e);
  if (e == EPERM || e == ENOSPC || e == EACCES) {
    if (sysctl("/proc/sys/user/max_user_namespaces") == "0")
      return why + ": user namespaces are disabled here (user.max_user_namespaces = 0)";
    if (sysctl("/proc/sys/kernel/unprivileged_userns_clone") == "0")
      return why +
             ": unprivileged user namespaces are disabled here (kernel.unprivileged_userns_clone = "
             "0)";
    if (sysctl("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1")
      return why +
             ": AppArmor restricts unprivileged user namespaces "
             "(kernel.apparmor_restrict_unprivileged_userns = 1)";
    return why + ": this container or its seccomp filter forbids new namespaces";
  }
  if (e == EINVAL) return why + " (a threaded process cannot enter a user namespace)";
  return why;
}

namespace {

Expected<void> make_mounts_private() {
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    return make_error("making the mounts private: " + errno_text(errno));
  return {};
}

}  // namespace

std::string_view mount_namespace_kind_name(MountNamespaceKind kind) {
  return kind == MountNamespaceKind::mount_only ? "mount" : "user+mount";
}

Expected<MountNamespaceKind> enter_private_mount_namespace() {
  // Root (or CAP_SYS_ADMIN): a mount namespace alone keeps every privilege and id as is.
  // Refused (a container's root without the capability): try as anyone else does.
  if (::unshare(CLONE_NEWNS) == 0) {
    TAILOR_TRY_VOID(make_mounts_private());
    return MountNamespaceKind::mount_only;
  }
  const uid_t uid = ::geteuid();
  const gid_t gid = ::getegid();
  if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0)
    return make_error("unshare(CLONE_NEWUSER|CLONE_NEWNS): " + why_no_user_namespace(errno));
  // The same ids inside as outside: the files the build writes belong to the user, and
  // the program run inside sees its own uid. setgroups must be denied before gid_map.
  TAILOR_TRY_VOID(write_proc("/proc/self/setgroups", "deny"));
  TAILOR_TRY_VOID(write_proc("/proc/self/uid_map", fmt::format("{} {} 1\n", uid, uid)));
  TAILOR_TRY_VOID(write_proc("/proc/self/gid_map", fmt::format("{} {} 1\n", gid, gid)));
  if (auto made = make_mounts_private(); !made) {
    // Ubuntu 23.10+: the namespace is made, but AppArmor gives it no capability.
    if (sysctl("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1")
      return make_error(made.error().message +
                        ": AppArmor restricts unprivileged user namespaces "
                        "(kernel.apparmor_restrict_unprivileged_userns = 1)");
    return made.error();
  }
  return MountNamespaceKind::with_user;
}

Expected<void> mount_tmpfs(const std::string& dir) {
  if (::mount("tmpfs", dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") != 0)
    return make_error(fmt::format("mounting a tmpfs on {}: {}", dir, errno_text(errno)));
  return {};
}

Expected<void> bind_mount_fd(int fd, const std::string& to, BindAccess access) {
  const std::string from = fmt::format("/proc/self/fd/{}", fd);
  if (::mount(from.c_str(), to.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0)
    return make_error(fmt::format("bind-mounting onto {}: {}", to, errno_text(errno)));
  if (access == BindAccess::as_source) return {};
  // The remount must repeat the flags a user namespace locks (nosuid, nodev, ...).
  struct statvfs sv {};
  if (::statvfs(to.c_str(), &sv) != 0)
    return make_error(fmt::format("{}: {}", to, errno_text(errno)));
  if (!(sv.f_flag & ST_RDONLY)) return {};
  unsigned long flags = MS_BIND | MS_REMOUNT;
  if (sv.f_flag & ST_NOSUID) flags |= MS_NOSUID;
  if (sv.f_flag & ST_NODEV) flags |= MS_NODEV;
  if (sv.f_flag & ST_NOEXEC) flags |= MS_NOEXEC;
  if (sv.f_flag & ST_NOATIME) flags |= MS_NOATIME;
  if (sv.f_flag & ST_NODIRATIME) flags |= MS_NODIRATIME;
  if (sv.f_flag & ST_RELATIME) flags |= MS_RELATIME;
  if (::mount(nullptr, to.c_str(), nullptr, flags, nullptr) != 0)
    return make_error(fmt::format("making {} writable: {}", to, errno_text(errno)));
  return {};
}

Expected<void> make_all_mounts_read_only() {
  // glibc 2.28's headers (the release build's) know neither the call nor its struct.
#ifndef SYS_mount_setattr
  constexpr long k_sys_mount_setattr = 442;  // one number on every architecture
#else
  constexpr long k_sys_mount_setattr = SYS_mount_setattr;
#endif
  struct {
    uint64_t attr_set, attr_clr, propagation, userns_fd;
  } attr{1 /* MOUNT_ATTR_RDONLY */, 0, 0, 0};
  constexpr int k_at_recursive = 0x8000;
  if (::syscall(k_sys_mount_setattr, AT_FDCWD, "/", k_at_recursive, &attr, sizeof attr) != 0)
    return make_error("making the file system read-only (mount_setattr, Linux 5.12+): " +
                      errno_text(errno));
  return {};
}

}  // namespace tailor
