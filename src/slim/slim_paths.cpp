#include "slim/slim_paths.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "formats/elf.h"
#include "formats/fatbin.h"
#include "formats/wheel.h"
#include "formats/zip.h"
#include "formats/zip_writer.h"
#include "util/files.h"
#include "util/interrupt.h"
#include "util/mapped_file.h"
#include "util/sha256.h"

namespace tailor::slim {
namespace fs = std::filesystem;
namespace {

Expected<void> interrupted_check() {
  if (int sig = interrupt_signal()) return make_error("interrupted by signal " + std::to_string(sig) + "; nothing was replaced");
  return {};
}

// A private folder for a wheel's inflated libraries, removed with everything in it.
class TempDir {
public:
  static Expected<TempDir> inside(const std::string& parent) {
    TempDir t;
    t.m_path = (fs::path(parent.empty() ? "." : parent) / ".tailor-slim-XXXXXX").string();
    if (!::mkdtemp(t.m_path.data())) return make_error(parent + ": cannot create a temporary folder: " + errno_text(errno));
    return t;
  }
  TempDir() = default;
  TempDir(TempDir&& o) noexcept : m_path(std::move(o.m_path)) { o.m_path.clear(); }
  TempDir& operator=(TempDir&&) = delete;
  ~TempDir() {
    std::error_code ec;
    if (!m_path.empty()) fs::remove_all(m_path, ec);
  }
  const std::string& path() const { return m_path; }

private:
  std::string m_path;
};

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
    if (n.entries != want || n.bytes != plan.device_after || n.fatbin_containers != plan.containers ||
        n.embedded_containers != embedded_left)
      return make_error(path + ": the slimmed file holds " + std::to_string(n.entries) + " fatbin entries in " +
                        std::to_string(n.fatbin_containers) + " + " + std::to_string(n.embedded_containers) +
                        " embedded containers; the plan kept " + std::to_string(want) + " in " +
                        std::to_string(plan.containers) + " + " + std::to_string(embedded_left));
  }
  return hash_file(path);
}

uint64_t disk_bytes(const struct stat& st) { return static_cast<uint64_t>(st.st_blocks) * 512; }

struct FileResult {
  LibrarySlim lib;
  Sha256::Digest sha{};  // of the output, when written
  bool written = false;
};

// Slims `in` to `out` (the same path for in place); a dry run when `out` is empty. A file
// without anything to remove is copied when `copy_unchanged` (an --out folder stays
// complete), else left alone. `punch`: the output stays on disk (not a wheel's member), so
// its zeroed ranges are punched out of it.
Expected<FileResult> slim_file(const std::string& in, const std::string& out, const KeepPolicy& policy,
                               bool copy_unchanged, bool punch) {
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
      ssize_t n = ::write(temp.fd(), b.data() + done, std::min<size_t>(b.size() - done, size_t{1} << 30));
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
      struct stat before {}, after {};
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
Expected<void> parallel_for(size_t n, unsigned jobs, const std::function<Expected<void>(size_t)>& work) {
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
  bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= 64 && ::read(fd, m, 4) == 4 &&
            std::memcmp(m, "\x7f" "ELF", 4) == 0;
  ::close(fd);
  return ok;
}

// Names worth opening: shared libraries and extension modules, and files without a
// dot in their name (executables).
bool may_be_library(std::string_view name) {
  auto slash = name.rfind('/');
  std::string_view base = slash == std::string_view::npos ? name : name.substr(slash + 1);
  return base.find(".so") != std::string_view::npos || base.find('.') == std::string_view::npos;
}

nlohmann::json marker_json(const SlimOptions& o, const std::string& original_name, const std::string& original_sha,
                           const std::vector<SlimmedFile>& files) {
  nlohmann::json j;
  j["schema"] = "tailor.slim-marker/1";
  j["tool"] = o.tool;
  j["kept"] = o.policy.describe();
  j["devices"] = nlohmann::json::array();
  for (const auto& cc : o.policy.devices) j["devices"].push_back(cc.str());
  j["ptx_policy"] = o.policy.ptx == PtxPolicy::keep ? "keep" : o.policy.ptx == PtxPolicy::drop ? "drop" : "needed";
  if (!original_name.empty()) j["original"] = {{"file", original_name}, {"sha256", original_sha}};
  j["libraries"] = nlohmann::json::array();
  for (const auto& f : files) {
    if (f.lib.outcome != SlimOutcome::slimmed) continue;
    nlohmann::json l{{"path", f.path}, {"bytes_before", f.lib.size_before}, {"bytes_after", f.lib.size_after},
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
      l["targets_left"].push_back({{"target", t.target}, {"reason", left_reason_key(t.reason)}, {"detail", t.detail}});
    j["libraries"].push_back(std::move(l));
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

Expected<InputSlim> slim_library_input(const std::string& path, const SlimOptions& o) {
  InputSlim in;
  in.input = path;
  in.kind = InputKind::library;
  in.libraries_scanned = 1;
  in.output = o.dry_run ? std::string() : o.in_place ? path : (fs::path(o.out_dir) / fs::path(path).filename()).string();
  if (!o.dry_run && !o.in_place && fs::exists(in.output) && fs::equivalent(in.output, path))
    return make_error(path + ": --out would overwrite the input; use --in-place to replace it");
  TAILOR_TRY(r, slim_file(path, in.output, o.policy, true, true));
  tally(in, r.lib);
  in.files.push_back({path, std::move(r.lib)});
  return in;
}

struct WheelWork {
  size_t member = 0;
  std::string temp_in, temp_out;
  FileResult result;
};

Expected<InputSlim> slim_wheel_input(const std::string& path, const SlimOptions& o) {
  InputSlim in;
  in.input = path;
  in.kind = InputKind::wheel;
  TAILOR_TRY(name, formats::parse_wheel_filename(path));
  (void)name;
  TAILOR_TRY(map, MappedFile::open(path));
  const Bytes file = map.bytes();
  auto zip = formats::parse_zip(file);
  if (!zip) return make_error(path + ": " + zip.error().message);
  // The dist-info folder: the one holding RECORD.
  std::string dist_info;
  const formats::ZipEntry* record_entry = nullptr;
  for (const auto& e : zip->entries) {
    auto slash = e.name.find('/');
    if (slash == std::string::npos || e.name.substr(slash) != "/RECORD") continue;
    std::string dir = e.name.substr(0, slash);
    if (dir.size() > 10 && dir.ends_with(".dist-info")) {
      dist_info = dir;
      record_entry = &e;
    }
  }
  if (!record_entry) return make_error(path + ": no *.dist-info/RECORD: not a wheel");
  formats::WheelLimits limits;
  if (record_entry->uncompressed_size > limits.record_cap(zip->entries.size()))
    return make_error(path + ": RECORD is larger than " + std::to_string(limits.record_cap(zip->entries.size())) + " bytes");
  std::vector<std::byte> buffer;
  TAILOR_TRY(record_bytes, formats::extract_member(file, *record_entry, buffer));
  auto rows = formats::parse_record(as_chars(record_bytes), zip->entries.size() + limits.record_extra_rows);
  if (!rows) return make_error(path + ": RECORD: " + rows.error().message);
  std::map<std::string, formats::RecordRow> record;
  for (auto& r : *rows) record[r.path] = r;

  // Libraries: inflated, slimmed in parallel.
  in.output = o.dry_run ? std::string() : o.in_place ? path : (fs::path(o.out_dir) / fs::path(path).filename()).string();
  if (!o.dry_run && !o.in_place && fs::exists(in.output) && fs::equivalent(in.output, path))
    return make_error(path + ": --out would overwrite the input; use --in-place to replace it");
  TAILOR_TRY(tmp, TempDir::inside(o.dry_run ? fs::temp_directory_path().string() : fs::path(in.output).parent_path().string()));
  std::vector<WheelWork> work;
  for (size_t i = 0; i < zip->entries.size(); ++i) {
    const auto& e = zip->entries[i];
    if (e.is_directory() || e.uncompressed_size < 64 || !may_be_library(e.name)) continue;
    auto head = formats::peek_member(file, e, 4);
    if (!head) return make_error(path + ": " + head.error().message);
    if (*head != std::string("\x7f" "ELF", 4)) continue;
    WheelWork w;
    w.member = i;
    w.temp_in = tmp.path() + "/" + std::to_string(i) + ".in";
    w.temp_out = o.dry_run ? std::string() : tmp.path() + "/" + std::to_string(i) + ".out";
    work.push_back(std::move(w));
  }
  in.libraries_scanned = work.size();
  std::string original_sha;
  std::thread hasher([&] { original_sha = Sha256::hex(Sha256::of(file)); });
  auto done = parallel_for(work.size(), o.jobs, [&](size_t k) -> Expected<void> {
    auto& w = work[k];
    const auto& e = zip->entries[w.member];
    {
      int fd = ::open(w.temp_in.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
      if (fd < 0) return make_error(w.temp_in + ": " + errno_text(errno));
      Expected<void> werr;
      auto s = formats::stream_member(file, e, [&](Bytes chunk) {
        size_t at = 0;
        while (werr && at < chunk.size()) {
          ssize_t n = ::write(fd, chunk.data() + at, chunk.size() - at);
          if (n < 0 && errno == EINTR) continue;
          if (n <= 0) werr = make_error(w.temp_in + ": " + errno_text(errno));
          else at += static_cast<size_t>(n);
        }
      });
      ::close(fd);
      if (!s) return make_error(path + ": " + s.error().message);
      if (!werr) return werr.error();
    }
    auto r = slim_file(w.temp_in, w.temp_out, o.policy, false, false);
    if (!r) return make_error(path + ": " + e.name + ": " + r.error().message.substr(std::min(r.error().message.size(), w.temp_in.size() + 2)));
    w.result = std::move(*r);
    if (!w.result.written) ::unlink(w.temp_in.c_str());
    return {};
  });
  hasher.join();
  if (!done) return done.error();
  for (auto& w : work) {
    // A member's disk sizes are those of a temporary file: the wheel's are what counts.
    w.result.lib.disk_before = w.result.lib.disk_after = 0;
    in.installed_before += w.result.lib.size_before;
    in.installed_after += w.result.lib.size_after;
    in.zeroed_bytes += w.result.lib.zeroed_bytes;
    in.punchable_bytes += w.result.lib.punchable_bytes;
    if (w.result.lib.outcome != SlimOutcome::no_device_code)
      in.files.push_back({zip->entries[w.member].name, w.result.lib});
  }
  std::sort(in.files.begin(), in.files.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
  in.size_before = file.size();
  in.size_after = file.size();
  {
    struct stat wst {};
    if (::stat(path.c_str(), &wst) == 0) in.disk_before = in.disk_after = disk_bytes(wst);
  }
  bool any = std::any_of(work.begin(), work.end(), [](const auto& w) { return w.result.written; });
  if (o.dry_run || !any) {
    if (!o.dry_run && !o.in_place) {
      // Nothing to remove: the output is the input, copied.
      std::error_code ec;
      TAILOR_TRY(temp, AtomicFile::beside(in.output));
      if (!fs::copy_file(path, temp.path(), fs::copy_options::overwrite_existing, ec))
        return make_error(in.output + ": " + ec.message());
      if (auto c = temp.commit(0644); !c) return c.error();
    }
    return in;
  }

  // The new archive: members in their order, slimmed ones deflated again, the rest copied
  // compressed; the marker before RECORD; RECORD last.
  std::map<size_t, const WheelWork*> slimmed;
  for (const auto& w : work)
    if (w.result.written) slimmed[w.member] = &w;
  formats::ZipWriteOptions zo;
  zo.level = 6;
  TAILOR_TRY(writer, formats::ZipWriter::create(in.output, zo));
  const std::string marker_name = dist_info + "/" + k_slim_marker;
  const std::string record_name = dist_info + "/RECORD";
  std::map<std::string, std::string> new_rows;  // path -> "hash,size"
  for (size_t i = 0; i < zip->entries.size(); ++i) {
    if (auto c = interrupted_check(); !c) return c.error();
    const auto& e = zip->entries[i];
    if (e.name == record_name || e.name == marker_name) continue;
    if (e.is_directory()) continue;
    const uint32_t mode = formats::normal_mode(file, e);
    auto s = slimmed.find(i);
    if (s != slimmed.end()) {
      TAILOR_TRY(m, writer.add({e.name, formats::ZipFileSource{s->second->temp_out}, mode}));
      new_rows[e.name] = formats::record_digest(m.sha256) + "," + std::to_string(m.size);
      continue;
    }
    auto data = strict_substr(file, e.data_offset, e.compressed_size);
    if (!data) return make_error(path + ": member '" + e.name + "' runs past the archive");
    TAILOR_TRY(m, writer.add_raw({e.name, mode, e.method, e.crc32, e.uncompressed_size, *data}));
    (void)m;
  }
  std::vector<SlimmedFile> marker_files = in.files;
  std::string marker = marker_json(o, fs::path(path).filename().string(), original_sha, marker_files).dump(2) + "\n";
  TAILOR_TRY(mm, writer.add({marker_name, marker, 0644}));
  new_rows[marker_name] = formats::record_digest(mm.sha256) + "," + std::to_string(mm.size);
  std::string record_text;
  for (const auto& r : *rows) {
    if (r.path == record_name || r.path == marker_name) continue;
    auto n = new_rows.find(r.path);
    if (n != new_rows.end()) record_text += formats::record_field(r.path) + "," + n->second + "\n";
    else
      record_text += formats::record_field(r.path) + "," + (r.hash_algorithm.empty() ? "" : r.hash_algorithm + "=" + r.hash_value) +
                     "," + (r.size ? std::to_string(*r.size) : "") + "\n";
  }
  record_text += formats::record_field(marker_name) + "," + new_rows[marker_name] + "\n";
  record_text += formats::record_field(record_name) + ",,\n";
  TAILOR_TRY(rm, writer.add({record_name, record_text, 0644}));
  (void)rm;
  if (auto c = writer.commit(); !c) return c.error();
  in.size_after = fs::file_size(in.output);
  struct stat wst {};
  in.disk_after = ::stat(in.output.c_str(), &wst) == 0 ? disk_bytes(wst) : 0;
  return in;
}

// site-packages folders of an environment: the folder itself when it holds dist-info
// folders, else lib*/python*/site-packages under it.
std::vector<fs::path> site_packages_of(const fs::path& root) {
  std::vector<fs::path> out;
  std::error_code ec;
  auto holds_dist_info = [&](const fs::path& d) {
    for (auto it = fs::directory_iterator(d, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
      if (it->path().extension() == ".dist-info" && fs::is_regular_file(it->path() / "RECORD", ec)) return true;
    return false;
  };
  if (holds_dist_info(root)) return {root};
  for (const char* lib : {"lib", "lib64"}) {
    fs::path l = root / lib;
    if (!fs::is_directory(l, ec)) continue;
    for (auto it = fs::directory_iterator(l, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
      fs::path sp = it->path() / "site-packages";
      if (it->path().filename().string().starts_with("python") && fs::is_directory(sp, ec) && !fs::is_symlink(l, ec)) out.push_back(sp);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

struct EnvFile {
  fs::path dist_info;
  std::string row_path;  // as RECORD names it
  std::string abs;
  FileResult result;
};

Expected<InputSlim> slim_environment_input(const std::string& path, const SlimOptions& o) {
  InputSlim in;
  in.input = path;
  in.kind = InputKind::environment;
  in.output = o.dry_run ? std::string() : path;
  if (!o.dry_run && !o.in_place)
    return make_error(path + ": an environment is slimmed in place: add --in-place (or --dry-run to see what would go)");
  // One slim per environment at a time: two would each rewrite RECORD from what they read.
  struct Lock {
    int fd = -1;
    ~Lock() {
      if (fd >= 0) ::close(fd);
    }
  } lock;
  if (!o.dry_run) {
    lock.fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (lock.fd < 0) return make_error(path + ": " + errno_text(errno));
    bool told = false;
    while (::flock(lock.fd, LOCK_EX | LOCK_NB) != 0) {
      if (errno != EWOULDBLOCK && errno != EINTR) return make_error(path + ": cannot lock: " + errno_text(errno));
      if (auto i = interrupted_check(); !i) return i.error();
      if (!told && o.on_wait) o.on_wait("waiting for another tailor slim of " + path);
      told = true;
      ::usleep(200 * 1000);
    }
  }
  auto sites = site_packages_of(path);
  if (sites.empty())
    return make_error(path + ": not a wheel, an ELF library, a virtual environment or a site-packages folder");
  std::vector<EnvFile> files;
  std::map<fs::path, std::vector<formats::RecordRow>> records;
  std::error_code ec;
  for (const auto& sp : sites) {
    std::vector<fs::path> dists;
    for (auto it = fs::directory_iterator(sp, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
      if (it->path().extension() == ".dist-info") dists.push_back(it->path());
    std::sort(dists.begin(), dists.end());
    for (const auto& d : dists) {
      fs::path rec = d / "RECORD";
      struct stat st {};
      if (::stat(rec.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
      if (static_cast<uint64_t>(st.st_size) > formats::WheelLimits{}.max_record_bytes)
        return make_error(rec.string() + ": larger than " + std::to_string(formats::WheelLimits{}.max_record_bytes >> 20) + " MiB");
      TAILOR_TRY(map, MappedFile::open(rec.string()));
      auto rows = formats::parse_record(as_chars(map.bytes()));
      if (!rows) return make_error(rec.string() + ": " + rows.error().message);
      for (const auto& r : *rows) {
        if (!may_be_library(r.path) || r.path.ends_with("/RECORD")) continue;
        fs::path abs = (sp / r.path).lexically_normal();
        auto rel = abs.lexically_relative(fs::path(path).lexically_normal());
        if (rel.empty() || *rel.begin() == "..") continue;  // outside the environment
        if (!has_elf_magic(abs.string())) continue;
        files.push_back({d, r.path, abs.string(), {}});
      }
      records[d] = std::move(*rows);
    }
  }
  in.libraries_scanned = files.size();
  auto done = parallel_for(files.size(), o.jobs, [&](size_t k) -> Expected<void> {
    auto& f = files[k];
    TAILOR_TRY(r, slim_file(f.abs, o.dry_run ? std::string() : f.abs, o.policy, false, true));
    f.result = std::move(r);
    return {};
  });
  // Files already replaced get their RECORD rows even when another file failed, so RECORD
  // never disagrees with what is on disk.
  std::map<fs::path, std::vector<const EnvFile*>> changed;
  for (const auto& f : files) {
    tally(in, f.result.lib);
    if (f.result.lib.outcome != SlimOutcome::no_device_code)
      in.files.push_back({fs::path(f.abs).lexically_relative(path).string(), f.result.lib});
    if (f.result.written) changed[f.dist_info].push_back(&f);
  }
  std::sort(in.files.begin(), in.files.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
  for (const auto& [dist, list] : changed) {
    std::map<std::string, std::string> new_rows;
    std::vector<SlimmedFile> slimmed_here;
    for (const auto* f : list) {
      new_rows[f->row_path] = formats::record_digest(f->result.sha) + "," + std::to_string(f->result.lib.size_after);
      slimmed_here.push_back({f->row_path, f->result.lib});
    }
    // The marker, merged with an earlier run's.
    std::string marker = marker_json(o, "", "", slimmed_here).dump(2) + "\n";
    if (auto w = write_file_atomic((dist / k_slim_marker).string(), marker); !w) return w.error();
    const std::string marker_row = dist.filename().string() + "/" + k_slim_marker;
    new_rows[marker_row] = formats::record_digest(Sha256::of(std::span<const std::byte>(reinterpret_cast<const std::byte*>(marker.data()), marker.size()))) +
                           "," + std::to_string(marker.size());
    std::string text;
    std::string record_row;
    for (const auto& r : records[dist]) {
      if (r.path == marker_row) continue;
      if (r.path.ends_with(".dist-info/RECORD") && !r.hash_algorithm.size()) {
        record_row = formats::record_field(r.path) + ",,\n";
        continue;
      }
      auto n = new_rows.find(r.path);
      if (n != new_rows.end()) text += formats::record_field(r.path) + "," + n->second + "\n";
      else
        text += formats::record_field(r.path) + "," + (r.hash_algorithm.empty() ? "" : r.hash_algorithm + "=" + r.hash_value) + "," +
                (r.size ? std::to_string(*r.size) : "") + "\n";
    }
    text += formats::record_field(marker_row) + "," + new_rows[marker_row] + "\n";
    text += record_row.empty() ? formats::record_field(dist.filename().string() + "/RECORD") + ",,\n" : record_row;
    if (auto w = write_file_atomic((dist / "RECORD").string(), text); !w) return w.error();
  }
  if (!done) return done.error();
  return in;
}

}  // namespace

std::string punch_zeroed_ranges(int fd, const std::vector<ByteRange>& ranges) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return std::string("holes not punched: ") + errno_text(errno);
  // Whole filesystem blocks only: a partial block would only be zeroed again.
  uint64_t block = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const auto blksize = static_cast<uint64_t>(st.st_blksize);
  if (blksize > block && (blksize & (blksize - 1)) == 0) block = blksize;
  for (const auto& r : ranges) {
    const uint64_t lo = (r.offset + block - 1) / block * block, hi = (r.offset + r.size) / block * block;
    if (hi <= lo) continue;
    int rc;
    do rc = ::fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(lo), static_cast<off_t>(hi - lo));
    while (rc != 0 && errno == EINTR);
    if (rc == 0) continue;
    if (errno == EOPNOTSUPP || errno == ENOSYS)
      return "the filesystem does not punch holes (fallocate: " + errno_text(errno) + "): the freed bytes stay on disk as zeros";
    return "holes not punched (fallocate: " + errno_text(errno) + "): the freed bytes stay on disk as zeros";
  }
  return "";
}

std::string_view input_kind_key(InputKind kind) {
  switch (kind) {
    case InputKind::library: return "library";
    case InputKind::wheel: return "wheel";
    case InputKind::environment: break;
  }
  return "environment";
}

Expected<SlimReport> slim_paths(const std::vector<std::string>& paths, const SlimOptions& o) {
  SlimReport report;
  report.policy = o.policy.describe();
  for (const auto& cc : o.policy.devices) report.devices.push_back(cc.str());
  report.dry_run = o.dry_run;
  if (!o.dry_run && !o.in_place && o.out_dir.empty())
    return make_error("say where the result goes: --out DIR, --in-place, or --dry-run");
  // Every input is looked at before the output folder exists: a wrong path leaves nothing.
  enum class Kind { environment, wheel, library };
  std::vector<Kind> kinds;
  for (const auto& p : paths) {
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0) return make_error(p + ": " + errno_text(errno));
    if (S_ISDIR(st.st_mode)) kinds.push_back(Kind::environment);
    else if (!S_ISREG(st.st_mode)) return make_error(p + ": not a regular file or folder");
    else if (p.ends_with(".whl")) kinds.push_back(Kind::wheel);
    else if (has_elf_magic(p)) kinds.push_back(Kind::library);
    else return make_error(p + ": not a wheel, an ELF library, a virtual environment or a site-packages folder");
  }
  // A folder this run made and left empty goes again when the run fails.
  bool made_out_dir = false;
  if (!o.out_dir.empty()) {
    std::error_code ec;
    made_out_dir = fs::create_directories(o.out_dir, ec);
    if (!fs::is_directory(o.out_dir, ec)) return make_error(o.out_dir + ": cannot create the output folder");
  }
  auto fail = [&](const Error& e) -> Expected<SlimReport> {
    std::error_code ec;
    if (made_out_dir && fs::is_empty(o.out_dir, ec) && !ec) fs::remove(o.out_dir, ec);
    return e;
  };
  for (size_t i = 0; i < paths.size(); ++i) {
    const std::string& p = paths[i];
    auto start = std::chrono::steady_clock::now();
    Expected<InputSlim> r = make_error("");
    switch (kinds[i]) {
      case Kind::environment: r = slim_environment_input(p, o); break;
      case Kind::wheel: r = slim_wheel_input(p, o); break;
      case Kind::library: r = slim_library_input(p, o); break;
    }
    if (!r) return fail(r.error());
    r->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    report.inputs.push_back(std::move(*r));
  }
  return report;
}

}  // namespace tailor::slim
