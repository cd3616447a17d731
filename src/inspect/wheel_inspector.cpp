// inspect_wheel: one pass over the archive. Every member is read once: inflated into
// memory (or streamed when large and not a library), hashed for RECORD while it is hot in
// cache, and, when it is an ELF file, handed to analyze_library. Members are tasks for a
// small pool of threads, largest first, so a 1.5 GB libtorch_cuda.so starts at once and
// the small files fill the other cores.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "formats/elf.h"
#include "formats/wheel.h"
#include "formats/zip.h"
#include "inspect/inspect_report.h"
#include "inspect/library_classifier.h"
#include "inspect/library_resolver.h"
#include "util/base64.h"
#include "util/sha256.h"

namespace tailor::inspect {

namespace {

// Members above this size that are not named like libraries are streamed in chunks, so
// memory stays bounded by the libraries (which must be whole to be analyzed).
constexpr uint64_t k_stream_threshold = uint64_t{64} << 20;

struct MemberResult {
  std::string sha256_b64;
  std::optional<LibraryReport> library;
};

bool named_like_library(const std::string& name) {
  auto slash = name.rfind('/');
  std::string base = slash == std::string::npos ? name : name.substr(slash + 1);
  return base.find(".so") != std::string::npos;
}

std::string digest_b64(Sha256& hash) {
  const Sha256::Digest digest = hash.finish();
  return base64url_nopad_encode(std::as_bytes(std::span(digest)));
}

Expected<MemberResult> read_member(Bytes file, const formats::ZipEntry& entry, const LibraryOptions& lib_options) {
  MemberResult result;
  Sha256 hash;
  std::vector<std::byte> buffer;
  Bytes content;
  if (entry.uncompressed_size > k_stream_threshold && !named_like_library(entry.name)) {
    // Large data file: stream it; keep it only if it turns out to be an ELF file.
    bool is_elf = false, first = true;
    auto streamed = formats::stream_member(file, entry, [&](Bytes chunk) {
      if (first) {
        is_elf = formats::looks_like_elf(chunk);
        first = false;
      }
      hash.update(chunk);
      if (is_elf) buffer.insert(buffer.end(), chunk.begin(), chunk.end());
    });
    if (!streamed) return streamed.error();
    result.sha256_b64 = digest_b64(hash);
    if (!is_elf) return result;
    content = Bytes(buffer.data(), buffer.size());
  } else {
    TAILOR_TRY(bytes, formats::extract_member(file, entry, buffer));
    hash.update(bytes);
    result.sha256_b64 = digest_b64(hash);
    content = bytes;
  }
  if (formats::looks_like_elf(content)) {
    TAILOR_TRY(lib, analyze_library(content, entry.name, lib_options));
    result.library = std::move(lib);
  }
  return result;
}

// Runs read_member over every member on `threads` threads; the first error stops the rest.
Expected<std::vector<MemberResult>> read_all(Bytes file, const std::vector<const formats::ZipEntry*>& members,
                                             const LibraryOptions& lib_options, unsigned threads) {
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
      auto r = read_member(file, *members[i], lib_options);
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
                  const std::vector<const formats::ZipEntry*>& members, const std::vector<MemberResult>& results,
                  RecordCheck& check) {
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
    if (row.hash_algorithm.empty()) problems.push_back("no hash in RECORD");
    else if (row.hash_algorithm != "sha256")
      problems.push_back(fmt::format("hash algorithm '{}' is not checked (only sha256)", row.hash_algorithm));
    else if (strip_padding(row.hash_value) != results[i].sha256_b64)
      problems.push_back(fmt::format("sha256 differs: RECORD {}, content {}", row.hash_value, results[i].sha256_b64));
    if (!row.size) problems.push_back("no size in RECORD");
    else if (*row.size != members[i]->uncompressed_size)
      problems.push_back(fmt::format("size {} in RECORD, {} in the archive", *row.size, members[i]->uncompressed_size));
    if (problems.empty()) ++check.ok;
    else check.mismatches.push_back({name, fmt::format("{}", fmt::join(problems, "; "))});
  }
  for (const auto& r : rows)
    if (!in_archive.count(r.path)) check.missing.push_back(r.path);
}

}  // namespace

std::vector<std::string> WheelReport::target_names() const {
  std::vector<std::string> names;
  for (const auto& t : targets) names.push_back(t.name);
  return names;
}

Expected<WheelReport> inspect_wheel(Bytes file, const std::string& path, const InspectOptions& options) {
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

  auto archive = formats::parse_zip(file);
  if (!archive) return fail(archive.error());

  // The .dist-info directory: top level, named after the distribution.
  std::string dist_info;
  const std::string wanted = formats::normalize_distribution_name(w.name);
  for (const auto& e : archive->entries) {
    auto slash = e.name.find('/');
    if (slash == std::string::npos || e.name.substr(slash + 1) != "WHEEL") continue;
    std::string dir = e.name.substr(0, slash);
    if (dir.size() < 10 || dir.substr(dir.size() - 10) != ".dist-info") continue;
    std::string dist = dir.substr(0, dir.find('-'));
    if (formats::normalize_distribution_name(dist) == wanted || dist_info.empty()) dist_info = dir + "/";
  }
  if (dist_info.empty()) return fail(make_error("no *.dist-info/WHEEL file in the archive"));

  std::vector<const formats::ZipEntry*> members;
  const formats::ZipEntry* wheel_entry = nullptr;
  const formats::ZipEntry* record_entry = nullptr;
  const formats::ZipEntry* metadata_entry = nullptr;
  for (const auto& e : archive->entries) {
    if (e.is_directory()) continue;
    members.push_back(&e);
    w.installed_bytes += e.uncompressed_size;
    if (e.name == dist_info + "WHEEL") wheel_entry = &e;
    if (e.name == dist_info + "RECORD") record_entry = &e;
    if (e.name == dist_info + "METADATA") metadata_entry = &e;
  }
  w.members = members.size();

  auto small_text = [&](const formats::ZipEntry& e) -> Expected<std::string> {
    std::vector<std::byte> buffer;
    auto bytes = formats::extract_member(file, e, buffer);
    if (!bytes) return bytes.error();
    return std::string(as_chars(*bytes));
  };
  auto wheel_text = small_text(*wheel_entry);
  if (!wheel_text) return fail(wheel_text.error());
  auto wheel_file = formats::parse_wheel_file(*wheel_text);
  if (!wheel_file) return fail(make_error(dist_info + wheel_file.error().message));
  w.tags_from_wheel_file = wheel_file->tags;
  {
    std::set<std::string> a(w.tags_from_name.begin(), w.tags_from_name.end());
    std::set<std::string> b(w.tags_from_wheel_file.begin(), w.tags_from_wheel_file.end());
    w.tags_consistent = a == b;
  }
  if (metadata_entry) {
    auto text = small_text(*metadata_entry);
    if (!text) return fail(text.error());
    auto meta = formats::parse_metadata(*text);
    w.metadata_name = meta.name;
    w.metadata_version = meta.version;
  }
  std::vector<formats::RecordRow> rows;
  if (record_entry) {
    auto text = small_text(*record_entry);
    if (!text) return fail(text.error());
    auto parsed = formats::parse_record(*text);
    if (!parsed) return fail(make_error(dist_info + parsed.error().message));
    rows = std::move(*parsed);
    w.record.present = true;
  }

  LibraryOptions lib_options;
  lib_options.verify_payloads = options.verify_payloads;
  unsigned threads = options.threads ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  auto results = read_all(file, members, lib_options, threads);
  if (!results) return fail(results.error());

  if (record_entry) check_record(rows, record_entry->name, members, *results, w.record);

  // Needs are resolved as the loader does: RUNPATH/RPATH from each member's install folder.
  std::vector<std::string> member_names;
  std::vector<LibraryReport> reports;
  std::vector<uint64_t> compressed;
  for (const auto* m : members) member_names.push_back(m->name);
  for (size_t i = 0; i < members.size(); ++i) {
    auto& r = (*results)[i];
    if (!r.library) continue;
    reports.push_back(std::move(*r.library));
    compressed.push_back(members[i]->compressed_size);
  }
  w.libraries = resolve_wheel_libraries(std::move(reports), member_names);
  for (size_t i = 0; i < w.libraries.size(); ++i) w.libraries[i].member_compressed_bytes = compressed[i];
  std::sort(w.libraries.begin(), w.libraries.end(), [](auto& a, auto& b) { return a.path < b.path; });
  w.targets = target_totals(w.libraries, w.installed_bytes);

  auto fit = fit_of_set(w.libraries);
  w.manylinux_needed = fit.tag;
  w.manylinux_limiting = fit.limiting;
  auto claim = check_manylinux_claim(name->platform_tags, fit, w.libraries);
  w.claim_ok = claim.ok;
  w.claim_problem = claim.problem;
  return w;
}

}  // namespace tailor::inspect
