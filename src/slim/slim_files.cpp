// One library slimmed to a temporary file, re-read and checked against the plan before it
// replaces anything; and the small steps every input driver shares.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>

#include "formats/elf.h"
#include "formats/fatbin.h"
#include "slim/slim_inputs.h"
#include "util/interrupt.h"
#include "util/mapped_file.h"

namespace tailor::slim::inputs {
namespace fs = std::filesystem;

Expected<void> interrupted_check() {
  if (int sig = interrupt_signal())
    return make_error("interrupted by signal " + std::to_string(sig) + "; nothing was replaced");
  return {};
}

namespace {

// SHA-256 of a file read in 4 MiB chunks (a map would keep every page resident).
Expected<Sha256::Digest> hash_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return make_error(path + ": " + errno_text(errno));
  Sha256 sha;
  std::vector<std::byte> buf(4 << 20);
  for (;;) {
    if (auto i = interrupted_check(); !i) {
      ::close(fd);
      return i.error();
    }
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ::close(fd);
      return make_error(path + ": " + errno_text(errno));
    }
    if (n == 0) break;
    sha.update(Bytes(buf.data(), static_cast<size_t>(n)));
  }
  ::close(fd);
  return sha.finish();
}

// Re-reads a written file: it must parse, and its .nv_fatbin and embedded containers must
// hold exactly the entries the plan kept (embedded containers emptied to their header are
// not found by the scan: they hold nothing). Returns the file's sha256 (for RECORD).
Expected<Sha256::Digest> check_written(const std::string& path, const LibrarySlim& plan) {
  {
    TAILOR_TRY(map, MappedFile::open(path));
    Bytes b = map.bytes();
    if (b.size() != plan.size_after)
      return make_error(path + ": the slimmed file has " + std::to_string(b.size()) + " bytes, " +
                        std::to_string(plan.size_after) + " were planned");
    TAILOR_TRY(n, count_device_code(b, /*file_is_mapped=*/true));
    uint64_t want = 0;
    for (const auto& t : plan.targets) want += t.kept;
    const uint64_t embedded_left = plan.embedded_containers() - plan.embedded_emptied();
    if (n.entries != want || n.bytes != plan.device_after ||
        n.fatbin_containers != plan.containers || n.embedded_containers != embedded_left)
      return make_error(path + ": the slimmed file holds " + std::to_string(n.entries) +
                        " fatbin entries in " + std::to_string(n.fatbin_containers) + " + " +
                        std::to_string(n.embedded_containers) +
                        " embedded containers; the plan kept " + std::to_string(want) + " in " +
                        std::to_string(plan.containers) + " + " + std::to_string(embedded_left));
  }
  return hash_file(path);
}

}  // namespace

// Slims `in` to `out` (the same path for in place); a dry run when `out` is empty. A file
// without anything to remove is copied when `copy_unchanged` (an --out folder stays
// complete), else left alone. `punch`: the output stays on disk (not a wheel's member), so
// its zeroed ranges are punched out of it.
Expected<FileResult> slim_file(const std::string& in, const std::string& out,
                               const KeepPolicy& policy, bool copy_unchanged, bool punch) {
  struct stat st {};
  if (::stat(in.c_str(), &st) != 0) return make_error(in + ": " + errno_text(errno));
  if (!S_ISREG(st.st_mode)) return make_error(in + ": not a regular file");
  auto mapped = MappedFile::open(in);
  if (!mapped) return mapped.error();
  std::optional<MappedFile> map(std::move(*mapped));
  FileResult r;
  auto disk_of_input = [&] {
    r.lib.disk_before = disk_bytes(st);
    r.lib.disk_after = r.lib.outcome == SlimOutcome::slimmed ? 0 : r.lib.disk_before;
  };
  if (out.empty()) {
    auto lib = slim_elf(map->bytes(), policy, -1);
    if (!lib) return make_error(in + ": " + lib.error().message);
    r.lib = std::move(*lib);
    disk_of_input();
    return r;
  }
  TAILOR_TRY(temp, AtomicFile::beside(out));
  auto lib = slim_elf(map->bytes(), policy, temp.fd(), /*file_is_mapped=*/true);
  if (!lib) return make_error(in + ": " + lib.error().message);
  r.lib = std::move(*lib);
  disk_of_input();
  if (r.lib.outcome != SlimOutcome::slimmed) {
    if (!copy_unchanged || out == in) return r;
    Bytes b = map->bytes();
    size_t done = 0;
    while (done < b.size()) {
      ssize_t n =
          ::write(temp.fd(), b.data() + done, std::min<size_t>(b.size() - done, size_t{1} << 30));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return make_error(out + ": " + errno_text(errno));
      done += static_cast<size_t>(n);
    }
    r.sha = Sha256::of(b);
  } else {
    map.reset();
    auto sha = check_written(temp.path(), r.lib);
    if (!sha) return sha.error();
    r.sha = *sha;
    if (punch && !r.lib.zeroed.empty()) {
      // The ranges hold zeros the writer wrote: punching them changes no byte the file
      // reads back (the hash just taken stays valid).
      struct stat before {
      }, after{};
      const bool sized = ::fstat(temp.fd(), &before) == 0;
      r.lib.punch_note = punch_zeroed_ranges(temp.fd(), r.lib.zeroed);
      if (sized && ::fstat(temp.fd(), &after) == 0 && disk_bytes(after) < disk_bytes(before))
        r.lib.punched_bytes = disk_bytes(before) - disk_bytes(after);
    }
  }
  if (auto i = interrupted_check(); !i) return i.error();
  if (auto c = temp.commit(st.st_mode); !c) return c.error();
  r.written = true;
  struct stat done {};
  if (::stat(out.c_str(), &done) == 0) r.lib.disk_after = disk_bytes(done);
  return r;
}

// Runs `work(i)` for i in [0, n) on `jobs` threads; the first error wins and stops the rest.
Expected<void> parallel_for(size_t n, unsigned jobs,
                            const std::function<Expected<void>(size_t)>& work) {
  if (jobs == 0) jobs = std::max(1u, std::thread::hardware_concurrency());
  jobs = static_cast<unsigned>(std::min<size_t>(jobs, std::max<size_t>(n, 1)));
  std::atomic<size_t> next{0};
  std::mutex m;
  std::optional<Error> first;
  auto run = [&] {
    for (;;) {
      {
        std::lock_guard lock(m);
        if (first) return;
      }
      if (auto i = interrupted_check(); !i) {
        std::lock_guard lock(m);
        if (!first) first = i.error();
        return;
      }
      size_t i = next++;
      if (i >= n) return;
      auto r = work(i);
      if (!r) {
        std::lock_guard lock(m);
        if (!first) first = r.error();
        return;
      }
    }
  };
  std::vector<std::thread> threads;
  for (unsigned t = 1; t < jobs; ++t) threads.emplace_back(run);
  run();
  for (auto& t : threads) t.join();
  if (first) return *first;
  return {};
}

bool has_elf_magic(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return false;
  struct stat st {};
  char m[4] = {};
  bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= 64 &&
            ::read(fd, m, 4) == 4 &&
            std::memcmp(m,
                        "\x7f"
                        "ELF",
                        4) == 0;
  ::close(fd);
  return ok;
}

formats::DeviceFileKind device_file_kind_at(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return formats::DeviceFileKind::none;
  struct stat st {};
  std::vector<std::byte> head(formats::k_device_file_head_bytes);
  ssize_t n = -1;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) do
      n = ::read(fd, head.data(), head.size());
    while (n < 0 && errno == EINTR);
  ::close(fd);
  if (n <= 0) return formats::DeviceFileKind::none;
  return formats::classify_device_file(Bytes(head.data(), static_cast<size_t>(n)));
}

// Names worth opening: shared libraries and extension modules, and files without a
// dot in their name (executables).
bool may_be_library(std::string_view name) {
  auto slash = name.rfind('/');
  std::string_view base = slash == std::string_view::npos ? name : name.substr(slash + 1);
  return base.find(".so") != std::string_view::npos || base.find('.') == std::string_view::npos;
}

nlohmann::json marker_json(const SlimOptions& o, const std::string& original_name,
                           const std::string& original_sha, const std::vector<SlimmedFile>& files,
                           const std::vector<DeviceFilePackage>& device_packages) {
  nlohmann::json j;
  j["schema"] = "tailor.slim-marker/1";
  j["tool"] = o.tool;
  j["kept"] = o.policy.describe();
  j["devices"] = nlohmann::json::array();
  for (const auto& cc : o.policy.devices) j["devices"].push_back(cc.str());
  j["ptx_policy"] = o.policy.ptx == PtxPolicy::keep   ? "keep"
                    : o.policy.ptx == PtxPolicy::drop ? "drop"
                                                      : "needed";
  if (!original_name.empty()) j["original"] = {{"file", original_name}, {"sha256", original_sha}};
  j["libraries"] = nlohmann::json::array();
  for (const auto& f : files) {
    if (f.lib.outcome != SlimOutcome::slimmed) continue;
    nlohmann::json l{{"path", f.path},
                     {"bytes_before", f.lib.size_before},
                     {"bytes_after", f.lib.size_after},
                     {"device_bytes_removed", f.lib.removed_bytes()},
                     {"containers_emptied", f.lib.containers_emptied}};
    nlohmann::json kept = nlohmann::json::array(), removed = nlohmann::json::array();
    for (const auto& t : f.lib.targets) {
      if (t.kept) kept.push_back(t.target);
      if (t.removed && !t.kept) removed.push_back(t.target);
    }
    l["targets_kept"] = kept;
    l["targets_removed"] = removed;
    // Every target left, and why: what `inspect` will still find in the file.
    l["targets_left"] = nlohmann::json::array();
    for (const auto& t : f.lib.left)
      l["targets_left"].push_back(
          {{"target", t.target}, {"reason", left_reason_key(t.reason)}, {"detail", t.detail}});
    j["libraries"].push_back(std::move(l));
  }
  // Device code files removed (--device-files), per package and target; RECORD no longer
  // lists them.
  if (o.device_files) {
    j["device_files"] = nlohmann::json::array();
    for (const auto& p : device_packages) {
      nlohmann::json targets = nlohmann::json::array();
      for (const auto& t : p.targets)
        targets.push_back({{"target", t.code.name()},
                           {"files_kept", t.files_kept},
                           {"files_removed", t.files_removed},
                           {"bytes_removed", t.bytes_removed}});
      j["device_files"].push_back({{"package", p.package},
                                   {"files_kept", p.files_kept},
                                   {"files_removed", p.files_removed},
                                   {"bytes_removed", p.bytes_removed},
                                   {"targets", targets}});
    }
  }
  return j;
}

void tally(InputSlim& in, const LibrarySlim& lib) {
  in.size_before += lib.size_before;
  in.size_after += lib.size_after;
  in.installed_before += lib.size_before;
  in.installed_after += lib.size_after;
  in.disk_before += lib.disk_before;
  in.disk_after += lib.disk_after;
  in.zeroed_bytes += lib.zeroed_bytes;
  in.punchable_bytes += lib.punchable_bytes;
  in.punched_bytes += lib.punched_bytes;
  if (in.punch_note.empty()) in.punch_note = lib.punch_note;
}

}  // namespace tailor::slim::inputs
