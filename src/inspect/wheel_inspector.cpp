// inspect_wheel: one pass over the archive, in bounded memory and bounded work.
//
// Every member that RECORD lists with a sha256 is read once: hashed (OpenSSL) and CRC'd
// while it is inflated, and, when it is an ELF file, analyzed. A member that needs no hash
// is only inflated far enough to see whether it is an ELF file. Members are tasks for a
// small pool of threads, largest first, so the biggest library starts at once and the
// small files fill the other cores.
//
// Memory. A deflated member of up to 64 MiB (WheelPassOptions) is inflated whole by libdeflate
// (the fastest inflater) while the whole-member buffers of all threads stay within
// k_whole_budget; a member that does not fit the budget at that moment is streamed
// instead, so no thread ever waits for memory. Larger members are streamed by ISA-L's
// igzip (as fast as libdeflate on libtorch_cuda.so; zlib is a third slower) in 256 KiB
// chunks. A streamed ELF member is also written, chunk by chunk, to an unlinked
// temporary file (sparse: chunks of zeros are skipped) and analyzed through a memory map
// that hands pages back as the fatbin walk passes them (analyze_library_file), so the
// analysis is the very code that reads installed libraries and its results cannot differ.
// Pages of the archive's own map are handed back once a member has been read.
//
// Why spill rather than two passes: the section table of a shared library sits at its
// end, and after patchelf .dynstr often sits after that, so a one-pass header collector
// cannot know which bytes to keep until they have gone by; a second inflate of a 435 MiB
// libtorch_cuda.so would cost as much as the first (most of the pass), while writing it to
// the page cache costs a small fraction, and nothing of it counts in our RSS.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_set>

#include "formats/device_file.h"
#include "formats/elf.h"
#include "formats/wheel.h"
#include "formats/zip.h"
#include "inspect/device_file_report.h"
#include "inspect/inspect_report.h"
#include "inspect/library_classifier.h"
#include "inspect/library_resolver.h"
#include "inspect/wheel_pass.h"
#include "util/base64.h"
#include "util/sha256.h"

namespace tailor::inspect {

namespace {

// Deflated members up to WheelPassOptions::whole_member_bytes (64 MiB) are inflated whole
// by libdeflate as long as the whole buffers of all threads together stay under this.
constexpr uint64_t k_whole_budget = uint64_t{128} << 20;

struct MemberResult {
  std::string sha256_b64;  // empty when the member needed no hash
  std::optional<LibraryReport> library;
  std::optional<DeviceFile> device_file;
};

// Bytes of whole-member buffers in use across threads. take() never waits: a member that
// does not fit is streamed instead.
class WholeBudget {
 public:
  bool take(uint64_t n) {
    uint64_t used = m_used.load();
    do {
      if (used + n > k_whole_budget) return false;
    } while (!m_used.compare_exchange_weak(used, used + n));
    return true;
  }
  void give(uint64_t n) { m_used -= n; }

 private:
  std::atomic<uint64_t> m_used{0};
};

struct PassContext {
  Bytes file;
  LibraryOptions lib_options;
  bool release_pages = false;
  uint64_t whole_max = 0;
  WholeBudget budget;

  // Hands the pages of an archive range back to the kernel (our own private read-only
  // map of the file: a page dropped too eagerly only faults back in from the page cache).
  void release(uint64_t offset, uint64_t size) const {
    if (!release_pages || size == 0) return;
    static const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    uint64_t begin = offset / page * page;
    uint64_t end = std::min<uint64_t>(file.size(), offset + size);
    if (end <= begin) return;
    ::madvise(const_cast<std::byte*>(file.data()) + begin, end - begin, MADV_DONTNEED);
  }
  // The same, widened to the kernel's fault-around window (64 KiB, aligned): a fault maps
  // the cached pages around it too, and a wheel of 16,000 small members (flashinfer-cubin)
  // would otherwise keep most of its 440 MB mapped through its neighbours' faults. A page
  // another thread still reads only faults back in.
  void release_around(uint64_t offset, uint64_t size) const {
    constexpr uint64_t k_window = 64 << 10;
    const uint64_t begin = offset / k_window * k_window;
    release(begin, (offset + size + k_window - 1) / k_window * k_window - begin);
  }
};

std::string digest_b64(Sha256& hash) {
  const Sha256::Digest digest = hash.finish();
  return base64url_nopad_encode(std::as_bytes(std::span(digest)));
}

bool all_zero(Bytes b) {
  return b.empty() ||
         (b[0] == std::byte{0} && std::memcmp(b.data(), b.data() + 1, b.size() - 1) == 0);
}

// An unlinked temporary file that a streamed library is written to, then mapped.
class SpillFile {
 public:
  ~SpillFile() {
    if (m_fd >= 0) ::close(m_fd);
  }
  Expected<void> open() {
    const char* env = std::getenv("TMPDIR");
    std::string dir = env && *env ? env : "/tmp";
    m_fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (m_fd < 0) {  // file systems without O_TMPFILE: create, then unlink at once
      std::string templ = dir + "/tailor-member-XXXXXX";
      m_fd = ::mkostemp(templ.data(), O_CLOEXEC);
      if (m_fd >= 0) ::unlink(templ.c_str());
    }
    if (m_fd < 0)
      return make_error(
          fmt::format("cannot create a temporary file in {}: {}", dir, std::strerror(errno)));
    return {};
  }
  // Writes a chunk at `offset`; chunks of zeros are left as holes.
  bool write(uint64_t offset, Bytes chunk) {
    if (m_error || all_zero(chunk)) return !m_error;
    const std::byte* p = chunk.data();
    size_t left = chunk.size();
    while (left > 0) {
      ssize_t n = ::pwrite(m_fd, p, left, static_cast<off_t>(offset));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        m_error = errno ? errno : EIO;
        return false;
      }
      p += n;
      left -= static_cast<size_t>(n);
      offset += static_cast<uint64_t>(n);
    }
    return true;
  }
  Expected<std::string> finish(uint64_t size) {
    if (!m_error && ::ftruncate(m_fd, static_cast<off_t>(size)) != 0) m_error = errno;
    if (m_error)
      return make_error(fmt::format("cannot write a temporary copy: {}", std::strerror(m_error)));
    return fmt::format("/proc/self/fd/{}", m_fd);
  }

 private:
  int m_fd = -1;
  int m_error = 0;
};

// A spilled member's errors name the member, not the temporary file.
Error renamed(const Error& e, const std::string& spill_path, const std::string& member) {
  std::string message = e.message;
  if (message.starts_with(spill_path)) message = member + message.substr(spill_path.size());
  return make_error(message);
}

// What a member is, from its first bytes: a host ELF file (a library), device code of its
// own (formats/device_file.h), or neither.
enum class MemberKind { other, library, device_file };
MemberKind member_kind(Bytes head, formats::DeviceFileKind& device_kind) {
  device_kind = formats::classify_device_file(head);
  if (device_kind != formats::DeviceFileKind::none) return MemberKind::device_file;
  return formats::looks_like_elf(head) ? MemberKind::library : MemberKind::other;
}

// Analyzes the member's bytes (whole, or a mapped spill) as what its head says it is.
Expected<void> analyze_member(const PassContext& ctx, Bytes bytes, const std::string& name,
                              MemberKind kind, formats::DeviceFileKind device_kind,
                              MemberResult& result) {
  if (kind == MemberKind::library) {
    TAILOR_TRY(lib, analyze_library(bytes, name, ctx.lib_options));
    result.library = std::move(lib);
  } else if (kind == MemberKind::device_file) {
    TAILOR_TRY(file, analyze_device_file(bytes, name, device_kind, ctx.lib_options));
    result.device_file = std::move(file);
  }
  return {};
}

// Analyzes a spilled member; its path in reports and errors is the member's name.
Expected<void> analyze_spilled(const PassContext& ctx, const std::string& spill_path,
                               const std::string& member, MemberKind kind,
                               formats::DeviceFileKind device_kind, MemberResult& result) {
  if (kind == MemberKind::library) {
    auto lib = analyze_library_file(spill_path, ctx.lib_options);
    if (!lib) return renamed(lib.error(), spill_path, member);
    lib->path = member;
    result.library = std::move(*lib);
    return {};
  }
  auto file = analyze_device_file_at(spill_path, device_kind, ctx.lib_options);
  if (!file) return renamed(file.error(), spill_path, member);
  file->path = member;
  result.device_file = std::move(*file);
  return {};
}

Expected<MemberResult> read_member(PassContext& ctx, const formats::ZipEntry& entry,
                                   bool needs_hash) {
  MemberResult result;
  formats::DeviceFileKind device_kind = formats::DeviceFileKind::none;
  if (!needs_hash) {
    // No RECORD hash to check: inflate only far enough to see what it is (the few bytes
    // of a magic; the first 4 KiB where they could start PTX text).
    auto head = formats::peek_member(ctx.file, entry, 64);
    if (!head) return head.error();
    if (formats::may_start_ptx(as_bytes(*head)) && head->size() == 64)
      head = formats::peek_member(ctx.file, entry, formats::k_device_file_head_bytes);
    if (!head) return head.error();
    if (member_kind(as_bytes(*head), device_kind) == MemberKind::other) return result;
  }
  Sha256 hash;
  const bool stored = entry.method == formats::k_zip_stored;
  const bool whole = entry.uncompressed_size <= ctx.whole_max &&
                     (stored || ctx.budget.take(entry.uncompressed_size));
  if (whole) {
    const uint64_t reserved = stored ? 0 : entry.uncompressed_size;
    struct Give {
      WholeBudget& budget;
      uint64_t n;
      ~Give() { budget.give(n); }
    } give{ctx.budget, reserved};
    std::vector<std::byte> buffer;
    TAILOR_TRY(bytes, formats::extract_member(ctx.file, entry, buffer));
    if (needs_hash) {
      hash.update(bytes);
      result.sha256_b64 = digest_b64(hash);
    }
    const MemberKind kind = member_kind(bytes, device_kind);
    if (auto ok = analyze_member(ctx, bytes, entry.name, kind, device_kind, result); !ok)
      return ok.error();
    return result;
  }
  // Streamed: hashed and CRC'd chunk by chunk, the archive's pages handed back as they
  // are consumed. A deflated ELF or fatbin file is also spilled; a stored one is analyzed
  // in place (the analysis touches only its headers). PTX needs only its head.
  std::string head;  // the first bytes, as many as classify_device_file reads
  std::optional<SpillFile> spill;
  Expected<void> spill_error{};
  bool decided = false;
  uint64_t at = 0;
  auto streamed = formats::stream_member(
      ctx.file, entry,
      [&](Bytes chunk) {
        if (needs_hash) hash.update(chunk);
        if (head.size() < formats::k_device_file_head_bytes)
          head.append(as_chars(chunk.first(
              std::min<size_t>(chunk.size(), formats::k_device_file_head_bytes - head.size()))));
        if (!decided && head.size() >= std::min<uint64_t>(64, entry.uncompressed_size)) {
          decided = true;
          formats::DeviceFileKind k = formats::DeviceFileKind::none;
          const MemberKind kind = member_kind(as_bytes(head), k);
          const bool needs_bytes = kind == MemberKind::library ||
                                   k == formats::DeviceFileKind::cubin ||
                                   k == formats::DeviceFileKind::fatbin;
          if (!stored && needs_bytes) {
            spill.emplace();
            spill_error = spill->open();
            if (!spill_error) spill.reset();
          }
        }
        if (spill) spill->write(at, chunk);
        at += chunk.size();
      },
      {}, [&](uint64_t offset, uint64_t size) { ctx.release(offset, size); });
  if (!streamed) return streamed.error();
  if (!spill_error)
    return make_error(fmt::format("member '{}': {}", entry.name, spill_error.error().message));
  if (needs_hash) result.sha256_b64 = digest_b64(hash);
  const MemberKind kind = member_kind(as_bytes(head), device_kind);
  if (kind == MemberKind::other) return result;
  if (device_kind == formats::DeviceFileKind::ptx) {
    TAILOR_TRY(file, analyze_ptx_head(as_bytes(head), entry.name, entry.uncompressed_size));
    result.device_file = std::move(file);
    return result;
  }
  if (stored) {
    auto view = strict_substr(ctx.file, entry.data_offset, entry.compressed_size);
    if (auto ok = analyze_member(ctx, *view, entry.name, kind, device_kind, result); !ok)
      return ok.error();
    return result;
  }
  if (!spill) return result;
  auto spill_path = spill->finish(entry.uncompressed_size);
  if (!spill_path)
    return make_error(fmt::format("member '{}': {}", entry.name, spill_path.error().message));
  if (auto ok = analyze_spilled(ctx, *spill_path, entry.name, kind, device_kind, result); !ok)
    return ok.error();
  return result;
}

// Runs read_member over every member on `threads` threads; the first error stops the rest.
Expected<std::vector<MemberResult>> read_all(PassContext& ctx,
                                             const std::vector<const formats::ZipEntry*>& members,
                                             const std::vector<bool>& needs_hash,
                                             unsigned threads) {
  std::vector<size_t> order(members.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return members[a]->uncompressed_size > members[b]->uncompressed_size;
  });
  std::vector<MemberResult> results(members.size());
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex error_mutex;
  std::optional<std::pair<uint64_t, Error>> first_error;  // lowest offset wins: deterministic
  auto work = [&] {
    while (!failed.load(std::memory_order_relaxed)) {
      size_t k = next.fetch_add(1);
      if (k >= order.size()) return;
      size_t i = order[k];
      auto r = read_member(ctx, *members[i], needs_hash[i]);
      ctx.release_around(
          members[i]->local_header_offset,
          members[i]->data_offset + members[i]->compressed_size - members[i]->local_header_offset);
      if (!r) {
        std::lock_guard lock(error_mutex);
        if (!first_error || members[i]->local_header_offset < first_error->first)
          first_error.emplace(members[i]->local_header_offset, r.error());
        failed = true;
        return;
      }
      results[i] = std::move(*r);
    }
  };
  unsigned n = std::max(1u, std::min<unsigned>(threads, static_cast<unsigned>(members.size())));
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < n; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  if (first_error) return first_error->second;
  return results;
}

std::string strip_padding(std::string s) {
  while (!s.empty() && s.back() == '=') s.pop_back();
  return s;
}

void check_record(const std::vector<formats::RecordRow>& rows, const std::string& record_path,
                  const std::vector<const formats::ZipEntry*>& members,
                  const std::vector<MemberResult>& results, RecordCheck& check) {
  std::map<std::string, const formats::RecordRow*> by_path;
  for (const auto& r : rows) by_path[r.path] = &r;
  std::set<std::string> in_archive;
  const std::string dist_info = record_path.substr(0, record_path.rfind('/') + 1);
  for (size_t i = 0; i < members.size(); ++i) {
    const auto& name = members[i]->name;
    in_archive.insert(name);
    if (name == record_path) continue;  // RECORD cannot hash itself
    auto it = by_path.find(name);
    if (it == by_path.end()) {
      // Signatures of RECORD are not listed in it (PEP 427).
      if (name == dist_info + "RECORD.jws" || name == dist_info + "RECORD.p7s") continue;
      check.unlisted.push_back(name);
      continue;
    }
    const auto& row = *it->second;
    std::vector<std::string> problems;
    if (row.hash_algorithm.empty())
      problems.push_back("no hash in RECORD");
    else if (row.hash_algorithm != "sha256")
      problems.push_back(
          fmt::format("hash algorithm '{}' is not checked (only sha256)", row.hash_algorithm));
    else if (strip_padding(row.hash_value) != results[i].sha256_b64)
      problems.push_back(fmt::format("sha256 differs: RECORD {}, content {}", row.hash_value,
                                     results[i].sha256_b64));
    if (!row.size)
      problems.push_back("no size in RECORD");
    else if (*row.size != members[i]->uncompressed_size)
      problems.push_back(fmt::format("size {} in RECORD, {} in the archive", *row.size,
                                     members[i]->uncompressed_size));
    if (problems.empty())
      ++check.ok;
    else
      check.mismatches.push_back({name, fmt::format("{}", fmt::join(problems, "; "))});
  }
  for (const auto& r : rows)
    if (!in_archive.count(r.path)) check.missing.push_back(r.path);
}

// The .dist-info directory: top level, named after the distribution (else the first one
// with a WHEEL file), with its trailing slash.
Expected<std::string> find_dist_info(const formats::ZipArchive& archive,
                                     const std::string& distribution) {
  std::string dist_info;
  const std::string wanted = formats::normalize_distribution_name(distribution);
  for (const auto& e : archive.entries) {
    auto slash = e.name.find('/');
    if (slash == std::string::npos || e.name.substr(slash + 1) != "WHEEL") continue;
    std::string dir = e.name.substr(0, slash);
    if (dir.size() < 10 || dir.substr(dir.size() - 10) != ".dist-info") continue;
    std::string dist = dir.substr(0, dir.find('-'));
    if (formats::normalize_distribution_name(dist) == wanted || dist_info.empty())
      dist_info = dir + "/";
  }
  if (dist_info.empty()) return make_error("no *.dist-info/WHEEL file in the archive");
  return dist_info;
}

// The .dist-info files the report reads (WHEEL is always there: find_dist_info found it).
struct DistInfoFiles {
  const formats::ZipEntry* wheel = nullptr;
  const formats::ZipEntry* record = nullptr;
  const formats::ZipEntry* metadata = nullptr;
};

// WHEEL's tags, METADATA's name and version, and RECORD's rows into the report. The
// metadata files are read whole, so their declared sizes are capped before they are
// inflated (extract_member refuses output past the declared size).
Expected<void> read_dist_info(Bytes file, const std::string& dist_info, const DistInfoFiles& files,
                              size_t members, WheelReport& w,
                              std::vector<formats::RecordRow>& rows) {
  const formats::WheelLimits limits;
  auto small_text = [&](const formats::ZipEntry& e, uint64_t cap) -> Expected<std::string> {
    if (e.uncompressed_size > cap)
      return make_error(fmt::format("{}: {} bytes, over the limit of {} for this file", e.name,
                                    e.uncompressed_size, cap));
    std::vector<std::byte> buffer;
    auto bytes = formats::extract_member(file, e, buffer);
    if (!bytes) return bytes.error();
    return std::string(as_chars(*bytes));
  };
  TAILOR_TRY(wheel_text, small_text(*files.wheel, limits.max_wheel_file_bytes));
  auto wheel_file = formats::parse_wheel_file(wheel_text);
  if (!wheel_file) return make_error(dist_info + wheel_file.error().message);
  w.tags_from_wheel_file = wheel_file->tags;
  std::set<std::string> a(w.tags_from_name.begin(), w.tags_from_name.end());
  std::set<std::string> b(w.tags_from_wheel_file.begin(), w.tags_from_wheel_file.end());
  w.tags_consistent = a == b;
  if (files.metadata) {
    TAILOR_TRY(text, small_text(*files.metadata, limits.max_metadata_bytes));
    auto meta = formats::parse_metadata(text);
    w.metadata_name = meta.name;
    w.metadata_version = meta.version;
    w.requires_dist = meta.requires_dist;
  }
  if (files.record) {
    TAILOR_TRY(text, small_text(*files.record, limits.record_cap(members)));
    auto parsed = formats::parse_record(text, members + limits.record_extra_rows);
    if (!parsed) return make_error(dist_info + parsed.error().message);
    rows = std::move(*parsed);
    w.record.present = true;
  }
  return {};
}

}  // namespace

std::vector<std::string> WheelReport::target_names() const {
  std::vector<std::string> names;
  for (const auto& t : targets) names.push_back(t.name);
  return names;
}

Expected<WheelReport> inspect_wheel(Bytes file, const std::string& path,
                                    const InspectOptions& options) {
  return inspect_wheel(file, path, options, WheelPassOptions{});
}

Expected<WheelReport> inspect_wheel(Bytes file, const std::string& path,
                                    const InspectOptions& options, const WheelPassOptions& pass) {
  auto fail = [&](const Error& e) { return make_error(path + ": " + e.message); };
  WheelReport w;
  w.path = path;
  w.file_size = file.size();
  auto name = formats::parse_wheel_filename(path);
  if (!name) return fail(name.error());
  w.name = name->distribution;
  w.version = name->version;
  w.local_label = name->local_label;
  w.build = name->build;
  w.tags_from_name = name->tags();
  w.manylinux_claimed = fmt::format("{}", fmt::join(name->platform_tags, "."));

  // The local headers' pages go back once read (pass.release_file_pages): see release_around.
  PassContext ctx;
  ctx.file = file;
  ctx.release_pages = pass.release_file_pages;
  auto archive = formats::parse_zip(
      file, {}, [&](uint64_t offset, uint64_t size) { ctx.release_around(offset, size); });
  if (!archive) return fail(archive.error());

  auto found = find_dist_info(*archive, w.name);
  if (!found) return fail(found.error());
  const std::string dist_info = *found;
  std::vector<const formats::ZipEntry*> members;
  DistInfoFiles files;
  for (const auto& e : archive->entries) {
    if (e.is_directory()) continue;
    members.push_back(&e);
    w.installed_bytes += e.uncompressed_size;
    if (e.name == dist_info + "WHEEL") files.wheel = &e;
    if (e.name == dist_info + "RECORD") files.record = &e;
    if (e.name == dist_info + "METADATA") files.metadata = &e;
  }
  w.members = members.size();
  std::vector<formats::RecordRow> rows;
  if (auto r = read_dist_info(file, dist_info, files, members.size(), w, rows); !r)
    return fail(r.error());
  const formats::ZipEntry* record_entry = files.record;

  // Only members that RECORD lists with a sha256 must be hashed (every byte inflated);
  // the others are inflated only as far as the ELF magic.
  std::vector<bool> needs_hash(members.size(), false);
  if (record_entry) {
    std::unordered_set<std::string_view> hashed;
    for (const auto& r : rows)
      if (r.hash_algorithm == "sha256") hashed.insert(r.path);
    for (size_t i = 0; i < members.size(); ++i)
      needs_hash[i] = members[i] != record_entry && hashed.count(members[i]->name) > 0;
  }
  ctx.lib_options.verify_payloads = options.verify_payloads;
  ctx.whole_max = pass.whole_member_bytes;
  unsigned threads =
      options.threads ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  auto results = read_all(ctx, members, needs_hash, threads);
  if (!results) return fail(results.error());

  if (record_entry) check_record(rows, record_entry->name, members, *results, w.record);

  // Needs are resolved as the loader does: RUNPATH/RPATH from each member's install folder.
  std::vector<std::string> member_names;
  std::vector<LibraryReport> reports;
  std::vector<uint64_t> compressed;
  for (const auto* m : members) member_names.push_back(m->name);
  for (size_t i = 0; i < members.size(); ++i) {
    auto& r = (*results)[i];
    if (r.device_file) {
      r.device_file->member_compressed_bytes = members[i]->compressed_size;
      w.device_files.push_back(std::move(*r.device_file));
    }
    if (!r.library) continue;
    reports.push_back(std::move(*r.library));
    compressed.push_back(members[i]->compressed_size);
  }
  w.libraries = resolve_wheel_libraries(std::move(reports), member_names);
  for (size_t i = 0; i < w.libraries.size(); ++i)
    w.libraries[i].member_compressed_bytes = compressed[i];
  std::sort(w.libraries.begin(), w.libraries.end(),
            [](auto& a, auto& b) { return a.path < b.path; });
  std::sort(w.device_files.begin(), w.device_files.end(),
            [](auto& a, auto& b) { return a.path < b.path; });
  w.targets = target_totals(w.libraries, w.device_files, w.installed_bytes);

  check_wheel_claim(w, name->platform_tags);
  return w;
}

}  // namespace tailor::inspect
