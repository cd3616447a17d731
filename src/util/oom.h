// What the kernel says about processes it killed for memory: the out-of-memory kills counted
// in this process's cgroup (v2 memory.events, its own and its ancestors') and the OOM
// killer's lines in the kernel log (/dev/kmsg, where readable: root, no container wall).
// Both are best effort: unreadable is "nothing known", never an error.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace tailor {

/// The sum of `oom_kill` over memory.events of this process's cgroup and its ancestors;
/// nullopt without cgroup v2's memory controller.
std::optional<uint64_t> cgroup_oom_kills();

/// Microseconds since boot on the kernel log's clock (CLOCK_MONOTONIC).
uint64_t kernel_log_now_us();

/// The kernel's last OOM line logged at or after `since_us` ("Out of memory: Killed process
/// 4242 (cc1plus) ..." / "Memory cgroup out of memory: ..."), escaped to one line; "" when
/// there is none or the log cannot be read. Reads at most 16 MiB of /dev/kmsg, never blocks.
std::string kernel_oom_message(uint64_t since_us);

}  // namespace tailor
