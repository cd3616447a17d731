// slim_wheel_input: a wheel's libraries inflated into a private folder, slimmed in
// parallel, and the archive written again beside its destination.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>
#include <thread>

#include "formats/device_file.h"
#include "formats/wheel.h"
#include "formats/zip.h"
#include "formats/zip_writer.h"
#include "slim/slim_inputs.h"
#include "util/mapped_file.h"

namespace tailor::slim::inputs {
namespace fs = std::filesystem;

namespace {

struct WheelWork {
  size_t member = 0;
  std::string temp_in, temp_out;
  FileResult result;
};

// The wheel's dist-info folder (the one holding RECORD) and RECORD's rows.
struct WheelRecord {
  std::string dist_info;
  std::vector<formats::RecordRow> rows;
};

Expected<WheelRecord> read_wheel_record(const std::string& path, Bytes file,
                                        const formats::ZipArchive& zip) {
  WheelRecord out;
  const formats::ZipEntry* record_entry = nullptr;
  for (const auto& e : zip.entries) {
    auto slash = e.name.find('/');
    if (slash == std::string::npos || e.name.substr(slash) != "/RECORD") continue;
    std::string dir = e.name.substr(0, slash);
    if (dir.size() > 10 && dir.ends_with(".dist-info")) {
      out.dist_info = dir;
      record_entry = &e;
    }
  }
  if (!record_entry) return make_error(path + ": no *.dist-info/RECORD: not a wheel");
  formats::WheelLimits limits;
  if (record_entry->uncompressed_size > limits.record_cap(zip.entries.size()))
    return make_error(path + ": RECORD is larger than " +
                      std::to_string(limits.record_cap(zip.entries.size())) + " bytes");
  std::vector<std::byte> buffer;
  TAILOR_TRY(record_bytes, formats::extract_member(file, *record_entry, buffer));
  auto rows =
      formats::parse_record(as_chars(record_bytes), zip.entries.size() + limits.record_extra_rows);
  if (!rows) return make_error(path + ": RECORD: " + rows.error().message);
  out.rows = std::move(*rows);
  return out;
}

// Every member against its RECORD row (its size; its sha256 for members up to
// k_record_hash_limit: the libraries are inflated to be slimmed anyway, the rest are small),
// so a damaged wheel is refused rather than given a RECORD whose other rows are stale.
constexpr uint64_t k_record_hash_limit = uint64_t{256} << 20;

Expected<void> check_record_rows(const std::string& path, Bytes file,
                                 const formats::ZipArchive& zip, const WheelRecord& record) {
  std::map<std::string, const formats::RecordRow*> rows;
  for (const auto& r : record.rows) rows[r.path] = &r;
  for (const auto& e : zip.entries) {
    if (auto c = interrupted_check(); !c) return c.error();
    auto it = rows.find(e.name);
    if (e.is_directory() || it == rows.end()) continue;
    const formats::RecordRow& r = *it->second;
    bool differs = r.size && *r.size != e.uncompressed_size;
    if (!differs && r.hash_algorithm == "sha256" && e.uncompressed_size <= k_record_hash_limit) {
      Sha256 sha;
      TAILOR_TRY_VOID(formats::stream_member(file, e, [&](Bytes piece) { sha.update(piece); }));
      differs = formats::record_digest(sha.finish()) != "sha256=" + r.hash_value;
    }
    if (differs)
      return make_error(fmt::format(
          "{}: member '{}' does not match its RECORD row (line {}): refusing to slim a damaged "
          "wheel (its RECORD would keep the stale row)",
          path, e.name, r.line));
  }
  return {};
}

// The members that may be libraries (by name, then by the ELF magic), each with its
// temporary files in `tmp`.
Expected<std::vector<WheelWork>> wheel_libraries(const std::string& path, Bytes file,
                                                 const formats::ZipArchive& zip, const TempDir& tmp,
                                                 bool dry_run) {
  std::vector<WheelWork> work;
  for (size_t i = 0; i < zip.entries.size(); ++i) {
    const auto& e = zip.entries[i];
    if (e.is_directory() || e.uncompressed_size < 64 || !may_be_library(e.name)) continue;
    auto head = formats::peek_member(file, e, 20);
    if (!head) return make_error(path + ": " + head.error().message);
    if (!head->starts_with(std::string("\x7f"
                                       "ELF",
                                       4)))
      continue;
    // A cubin is device code of its own, not a host library (device_files.h).
    if (formats::classify_device_file(as_bytes(*head)) == formats::DeviceFileKind::cubin) continue;
    WheelWork w;
    w.member = i;
    w.temp_in = tmp.path() + "/" + std::to_string(i) + ".in";
    w.temp_out = dry_run ? std::string() : tmp.path() + "/" + std::to_string(i) + ".out";
    work.push_back(std::move(w));
  }
  return work;
}

// One member inflated into its temporary file and slimmed from there.
Expected<void> slim_member(const std::string& path, Bytes file, const formats::ZipEntry& e,
                           WheelWork& w, const KeepPolicy& policy) {
  {
    int fd = ::open(w.temp_in.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return make_error(w.temp_in + ": " + errno_text(errno));
    Expected<void> werr;
    auto s = formats::stream_member(file, e, [&](Bytes chunk) {
      size_t at = 0;
      while (werr && at < chunk.size()) {
        ssize_t n = ::write(fd, chunk.data() + at, chunk.size() - at);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0)
          werr = make_error(w.temp_in + ": " + errno_text(errno));
        else
          at += static_cast<size_t>(n);
      }
    });
    ::close(fd);
    if (!s) return make_error(path + ": " + s.error().message);
    if (!werr) return werr.error();
  }
  auto r = slim_file(w.temp_in, w.temp_out, policy, false, false);
  if (!r)
    return make_error(
        path + ": " + e.name + ": " +
        r.error().message.substr(std::min(r.error().message.size(), w.temp_in.size() + 2)));
  w.result = std::move(*r);
  if (!w.result.written) ::unlink(w.temp_in.c_str());
  return {};
}

// One member judged as a device code file, when it is one.
struct DeviceWork {
  size_t member = 0;
  bool is_device = false;
  DeviceFileDecision decision;
};

// --device-files: every member outside the dist-info folder that is no library and no
// manifest of its package, told by its first bytes, read whole when it is device code.
Expected<std::vector<DeviceWork>> wheel_device_files(const std::string& path, Bytes file,
                                                     const formats::ZipArchive& zip,
                                                     const WheelRecord& record,
                                                     const std::vector<WheelWork>& libraries,
                                                     const SlimOptions& o) {
  std::set<size_t> library_members;
  for (const auto& w : libraries) library_members.insert(w.member);
  const std::string distribution = distribution_of_dist_info(record.dist_info);
  std::vector<DeviceWork> work;
  for (size_t i = 0; i < zip.entries.size(); ++i) {
    const auto& e = zip.entries[i];
    if (e.is_directory() || e.uncompressed_size == 0 || library_members.count(i) ||
        e.name.starts_with(record.dist_info + "/") || is_package_manifest(distribution, e.name))
      continue;
    work.push_back({i, false, {}});
  }
  auto done = parallel_for(work.size(), o.jobs, [&](size_t k) -> Expected<void> {
    const auto& e = zip.entries[work[k].member];
    auto head = formats::peek_member(file, e, formats::k_device_file_head_bytes);
    if (!head) return make_error(e.name + ": " + head.error().message);
    const auto kind = formats::classify_device_file(as_bytes(*head));
    if (kind == formats::DeviceFileKind::none) return {};
    std::vector<std::byte> buffer;
    auto bytes = formats::extract_member(file, e, buffer);
    if (!bytes) return make_error(e.name + ": " + bytes.error().message);
    TAILOR_TRY(d, judge_device_file(*bytes, kind, e.name, o.policy));
    work[k].decision = std::move(d);
    work[k].is_device = true;
    return {};
  });
  if (!done) return make_error(path + ": " + done.error().message);
  std::erase_if(work, [](const DeviceWork& w) { return !w.is_device; });
  return work;
}

// The new archive: members in their order, slimmed ones deflated again, the rest copied
// compressed; the marker before RECORD; RECORD last.
Expected<void> write_slimmed_wheel(const std::string& path, Bytes file,
                                   const formats::ZipArchive& zip, const WheelRecord& record,
                                   const std::vector<WheelWork>& work, const SlimOptions& o,
                                   const std::string& original_sha, const InputSlim& in,
                                   const std::set<std::string>& removed) {
  std::map<size_t, const WheelWork*> slimmed;
  for (const auto& w : work)
    if (w.result.written) slimmed[w.member] = &w;
  formats::ZipWriteOptions zo;
  zo.level = 6;
  TAILOR_TRY(writer, formats::ZipWriter::create(in.output, zo));
  const std::string marker_name = record.dist_info + "/" + k_slim_marker;
  const std::string record_name = record.dist_info + "/RECORD";
  std::map<std::string, std::string> new_rows;  // path -> "hash,size"
  for (size_t i = 0; i < zip.entries.size(); ++i) {
    if (auto c = interrupted_check(); !c) return c.error();
    const auto& e = zip.entries[i];
    if (e.name == record_name || e.name == marker_name || removed.count(e.name)) continue;
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
  std::string marker = marker_json(o, fs::path(path).filename().string(), original_sha,
                                   marker_files, in.device_packages)
                           .dump(2) +
                       "\n";
  TAILOR_TRY(mm, writer.add({marker_name, marker, 0644}));
  new_rows[marker_name] = formats::record_digest(mm.sha256) + "," + std::to_string(mm.size);
  std::string record_text;
  for (const auto& r : record.rows) {
    if (r.path == record_name || r.path == marker_name || removed.count(r.path)) continue;
    auto n = new_rows.find(r.path);
    if (n != new_rows.end())
      record_text += formats::record_field(r.path) + "," + n->second + "\n";
    else
      record_text += formats::record_field(r.path) + "," +
                     (r.hash_algorithm.empty() ? "" : r.hash_algorithm + "=" + r.hash_value) + "," +
                     (r.size ? std::to_string(*r.size) : "") + "\n";
  }
  record_text += formats::record_field(marker_name) + "," + new_rows[marker_name] + "\n";
  record_text += formats::record_field(record_name) + ",,\n";
  TAILOR_TRY(rm, writer.add({record_name, record_text, 0644}));
  (void)rm;
  return writer.commit();
}

// A dry run's estimate of the slimmed wheel's size: less every device file that would go
// (its compressed bytes and its two headers), less the share of each library's compressed
// bytes that its slim would remove.
uint64_t estimated_wheel_size(uint64_t size, const formats::ZipArchive& zip,
                              const std::vector<WheelWork>& work,
                              const std::set<std::string>& removed) {
  constexpr uint64_t k_headers = 30 + 46;  // local header and central directory record
  uint64_t cut = 0;
  for (const auto& e : zip.entries)
    if (removed.count(e.name)) cut += e.compressed_size + k_headers + 2 * e.name.size();
  for (const auto& w : work) {
    const LibrarySlim& lib = w.result.lib;
    if (lib.size_before == 0 || lib.size_after >= lib.size_before) continue;
    const double share = static_cast<double>(lib.size_before - lib.size_after) /
                         static_cast<double>(lib.size_before);
    cut +=
        static_cast<uint64_t>(static_cast<double>(zip.entries[w.member].compressed_size) * share);
  }
  return size > cut ? size - cut : 0;
}

}  // namespace

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
  TAILOR_TRY(record, read_wheel_record(path, file, *zip));
  TAILOR_TRY_VOID(check_record_rows(path, file, *zip, record));
  for (const auto& e : zip->entries)
    if (e.name == record.dist_info + "/" + k_slim_marker) in.slimmed_before = true;

  // Libraries: inflated, slimmed in parallel.
  in.output = o.dry_run    ? std::string()
              : o.in_place ? path
                           : (fs::path(o.out_dir) / fs::path(path).filename()).string();
  if (!o.dry_run && !o.in_place && fs::exists(in.output) && fs::equivalent(in.output, path))
    return make_error(path + ": --out would overwrite the input; use --in-place to replace it");
  TAILOR_TRY(tmp, TempDir::inside(o.dry_run ? fs::temp_directory_path().string()
                                            : fs::path(in.output).parent_path().string()));
  TAILOR_TRY(work, wheel_libraries(path, file, *zip, tmp, o.dry_run));
  in.libraries_scanned = work.size();
  std::string original_sha;
  std::thread hasher([&] { original_sha = Sha256::hex(Sha256::of(file)); });
  auto done = parallel_for(work.size(), o.jobs, [&](size_t k) {
    return slim_member(path, file, zip->entries[work[k].member], work[k], o.policy);
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
  std::sort(in.files.begin(), in.files.end(),
            [](const auto& a, const auto& b) { return a.path < b.path; });
  in.size_before = file.size();
  in.size_after = file.size();
  {
    struct stat wst {};
    if (::stat(path.c_str(), &wst) == 0) in.disk_before = in.disk_after = disk_bytes(wst);
  }
  std::set<std::string> removed;
  if (o.device_files) {
    TAILOR_TRY(device, wheel_device_files(path, file, *zip, record, work, o));
    in.device_files_scanned = device.size();
    DeviceFilePackage package;
    package.package = distribution_of_dist_info(record.dist_info);
    for (const auto& d : device) {
      add_device_file(package, d.decision);
      if (!d.decision.choice.keep) removed.insert(d.decision.path);
    }
    if (!device.empty()) in.device_packages.push_back(std::move(package));
  }
  if (o.dry_run) in.size_after = estimated_wheel_size(file.size(), *zip, work, removed);
  bool any = !removed.empty() ||
             std::any_of(work.begin(), work.end(), [](const auto& w) { return w.result.written; });
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
  TAILOR_TRY_VOID(
      write_slimmed_wheel(path, file, *zip, record, work, o, original_sha, in, removed));
  in.size_after = fs::file_size(in.output);
  struct stat wst {};
  in.disk_after = ::stat(in.output.c_str(), &wst) == 0 ? disk_bytes(wst) : 0;
  return in;
}

}  // namespace tailor::slim::inputs
