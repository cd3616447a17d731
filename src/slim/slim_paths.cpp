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
#include <set>
#include <thread>

#include "formats/elf.h"
#include "formats/fatbin.h"
#include "formats/wheel.h"
#include "formats/zip.h"
#include "formats/zip_writer.h"
#include "slim/slim_inputs.h"
#include "util/files.h"
#include "util/interrupt.h"
#include "util/mapped_file.h"
#include "util/sha256.h"

namespace tailor::slim {
namespace fs = std::filesystem;
using namespace inputs;

namespace {

Expected<InputSlim> slim_library_input(const std::string& path, const SlimOptions& o) {
  InputSlim in;
  in.input = path;
  in.kind = InputKind::library;
  in.libraries_scanned = 1;
  in.output = o.dry_run    ? std::string()
              : o.in_place ? path
                           : (fs::path(o.out_dir) / fs::path(path).filename()).string();
  if (!o.dry_run && !o.in_place && fs::exists(in.output) && fs::equivalent(in.output, path))
    return make_error(path + ": --out would overwrite the input; use --in-place to replace it");
  TAILOR_TRY(r, slim_file(path, in.output, o.policy, true, true));
  tally(in, r.lib);
  in.files.push_back({path, std::move(r.lib)});
  return in;
}

// site-packages folders of an environment: the folder itself when it holds dist-info
// folders, else lib*/python*/site-packages under it.
std::vector<fs::path> site_packages_of(const fs::path& root) {
  std::vector<fs::path> out;
  std::error_code ec;
  auto holds_dist_info = [&](const fs::path& d) {
    for (auto it = fs::directory_iterator(d, ec); !ec && it != fs::directory_iterator();
         it.increment(ec))
      if (it->path().extension() == ".dist-info" && fs::is_regular_file(it->path() / "RECORD", ec))
        return true;
    return false;
  };
  if (holds_dist_info(root)) return {root};
  for (const char* lib : {"lib", "lib64"}) {
    fs::path l = root / lib;
    if (!fs::is_directory(l, ec)) continue;
    for (auto it = fs::directory_iterator(l, ec); !ec && it != fs::directory_iterator();
         it.increment(ec)) {
      fs::path sp = it->path() / "site-packages";
      if (it->path().filename().string().starts_with("python") && fs::is_directory(sp, ec) &&
          !fs::is_symlink(l, ec))
        out.push_back(sp);
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

/// One slim per environment at a time: two would each rewrite RECORD from what they read.
/// Held on the environment's folder until the slim ends.
struct EnvironmentLock {
  int fd = -1;
  EnvironmentLock() = default;
  EnvironmentLock(const EnvironmentLock&) = delete;
  EnvironmentLock& operator=(const EnvironmentLock&) = delete;
  ~EnvironmentLock() {
    if (fd >= 0) ::close(fd);
  }

  // Waits for another slim of the same environment to end (said once through on_wait).
  Expected<void> acquire(const std::string& path, const SlimOptions& o) {
    fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return make_error(path + ": " + errno_text(errno));
    bool told = false;
    while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      if (errno != EWOULDBLOCK && errno != EINTR)
        return make_error(path + ": cannot lock: " + errno_text(errno));
      if (auto i = interrupted_check(); !i) return i.error();
      if (!told && o.on_wait) o.on_wait("waiting for another tailor slim of " + path);
      told = true;
      ::usleep(200 * 1000);
    }
    return {};
  }
};

/// A file a RECORD lists that may be device code of its own (--device-files), and what it
/// came to.
struct EnvDeviceFile {
  fs::path dist_info;
  std::string row_path;
  std::string abs;
  bool is_device = false;
  DeviceFileDecision decision;
};

/// The environment's libraries with device code that its dist-infos' RECORDs name, and
/// those RECORDs' rows, by dist-info folder; with --device-files, the other files they name.
struct EnvironmentFiles {
  std::vector<EnvFile> files;
  std::vector<EnvDeviceFile> device;
  std::map<fs::path, std::vector<formats::RecordRow>> records;
};

// Every installed ELF library inside the environment that a RECORD lists, in dist-info order
// (and with `device_files` every other file it lists but manifests: device_files.h).
Expected<EnvironmentFiles> environment_files(const std::string& path,
                                             const std::vector<fs::path>& sites,
                                             bool device_files) {
  EnvironmentFiles env;
  std::error_code ec;
  for (const auto& sp : sites) {
    std::vector<fs::path> dists;
    for (auto it = fs::directory_iterator(sp, ec); !ec && it != fs::directory_iterator();
         it.increment(ec))
      if (it->path().extension() == ".dist-info") dists.push_back(it->path());
    std::sort(dists.begin(), dists.end());
    for (const auto& d : dists) {
      fs::path rec = d / "RECORD";
      struct stat st {};
      if (::stat(rec.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
      if (static_cast<uint64_t>(st.st_size) > formats::WheelLimits{}.max_record_bytes)
        return make_error(rec.string() + ": larger than " +
                          std::to_string(formats::WheelLimits{}.max_record_bytes >> 20) + " MiB");
      TAILOR_TRY(map, MappedFile::open(rec.string()));
      auto rows = formats::parse_record(as_chars(map.bytes()));
      if (!rows) return make_error(rec.string() + ": " + rows.error().message);
      const std::string distribution = distribution_of_dist_info(d.string());
      for (const auto& r : *rows) {
        if (r.path.ends_with("/RECORD")) continue;
        fs::path abs = (sp / r.path).lexically_normal();
        auto rel = abs.lexically_relative(fs::path(path).lexically_normal());
        if (rel.empty() || *rel.begin() == "..") continue;  // outside the environment
        const bool library =
            may_be_library(r.path) && has_elf_magic(abs.string()) && !is_cubin_file(abs.string());
        if (library)
          env.files.push_back({d, r.path, abs.string(), {}});
        else if (device_files && !r.path.ends_with(".dist-info/" + std::string(k_slim_marker)) &&
                 !is_package_manifest(distribution, r.path))
          env.device.push_back({d, r.path, abs.string(), false, {}});
      }
      env.records[d] = std::move(*rows);
    }
  }
  return env;
}

// One dist-info after a slim of its libraries: the marker (merged with an earlier run's)
// written, and RECORD rewritten with the slimmed files' and the marker's rows.
Expected<void> update_dist_info(const fs::path& dist, const std::vector<const EnvFile*>& list,
                                const std::vector<formats::RecordRow>& old_rows,
                                const SlimOptions& o, const DeviceFilePackage* device) {
  std::set<std::string> removed;
  if (device) removed.insert(device->removed.begin(), device->removed.end());
  std::map<std::string, std::string> new_rows;
  std::vector<SlimmedFile> slimmed_here;
  for (const auto* f : list) {
    new_rows[f->row_path] =
        formats::record_digest(f->result.sha) + "," + std::to_string(f->result.lib.size_after);
    slimmed_here.push_back({f->row_path, f->result.lib});
  }
  std::vector<DeviceFilePackage> device_here;
  if (device) device_here.push_back(*device);
  std::string marker = marker_json(o, "", "", slimmed_here, device_here).dump(2) + "\n";
  if (auto w = write_file_atomic((dist / k_slim_marker).string(), marker); !w) return w.error();
  const std::string marker_row = dist.filename().string() + "/" + k_slim_marker;
  new_rows[marker_row] = formats::record_digest(Sha256::of(std::span<const std::byte>(
                             reinterpret_cast<const std::byte*>(marker.data()), marker.size()))) +
                         "," + std::to_string(marker.size());
  std::string text;
  std::string record_row;
  for (const auto& r : old_rows) {
    if (r.path == marker_row || removed.count(r.path)) continue;
    if (r.path.ends_with(".dist-info/RECORD") && !r.hash_algorithm.size()) {
      record_row = formats::record_field(r.path) + ",,\n";
      continue;
    }
    auto n = new_rows.find(r.path);
    if (n != new_rows.end())
      text += formats::record_field(r.path) + "," + n->second + "\n";
    else
      text += formats::record_field(r.path) + "," +
              (r.hash_algorithm.empty() ? "" : r.hash_algorithm + "=" + r.hash_value) + "," +
              (r.size ? std::to_string(*r.size) : "") + "\n";
  }
  text += formats::record_field(marker_row) + "," + new_rows[marker_row] + "\n";
  text += record_row.empty() ? formats::record_field(dist.filename().string() + "/RECORD") + ",,\n"
                             : record_row;
  if (auto w = write_file_atomic((dist / "RECORD").string(), text); !w) return w.error();
  return {};
}

// --device-files over an environment: every candidate told by its first bytes and, when it
// is device code, read whole and judged; what no kept GPU loads is removed (not in a dry
// run). `by_dist` gets each dist-info's tally, whose `removed` lists the RECORD rows of the
// files really gone (update_dist_info drops them, also after a failure); `in` the same,
// paths as shown.
Expected<void> remove_device_files(EnvironmentFiles& env, const SlimOptions& o, InputSlim& in,
                                   std::map<fs::path, DeviceFilePackage>& by_dist) {
  auto& files = env.device;
  TAILOR_TRY_VOID(parallel_for(files.size(), o.jobs, [&](size_t k) -> Expected<void> {
    auto& f = files[k];
    const std::string shown = fs::path(f.abs).lexically_relative(in.input).string();
    auto kind = device_file_kind_at(f.abs);
    if (kind == formats::DeviceFileKind::none) return {};
    TAILOR_TRY(map, MappedFile::open(f.abs));
    TAILOR_TRY(d, judge_device_file(map.bytes(), kind, f.abs, o.policy));
    d.path = shown;
    f.decision = std::move(d);
    f.is_device = true;
    return {};
  }));
  std::map<fs::path, DeviceFilePackage> shown;
  for (const auto& f : files) {
    if (!f.is_device) continue;
    ++in.device_files_scanned;
    auto& package = shown[f.dist_info];
    package.package = distribution_of_dist_info(f.dist_info.string());
    add_device_file(package, f.decision);
  }
  for (auto& [dist, package] : shown) {
    by_dist[dist] = package;
    by_dist[dist].removed.clear();  // filled below as files go
    in.device_packages.push_back(std::move(package));
  }
  if (o.dry_run) return {};
  for (const auto& f : files) {
    if (!f.is_device || f.decision.choice.keep) continue;
    if (::unlink(f.abs.c_str()) != 0 && errno != ENOENT)
      return make_error(f.abs + ": cannot remove: " + errno_text(errno));
    by_dist[f.dist_info].removed.push_back(f.row_path);
  }
  return {};
}

Expected<InputSlim> slim_environment_input(const std::string& path, const SlimOptions& o) {
  InputSlim in;
  in.input = path;
  in.kind = InputKind::environment;
  in.output = o.dry_run ? std::string() : path;
  if (!o.dry_run && !o.in_place)
    return make_error(
        path +
        ": an environment is slimmed in place: add --in-place (or --dry-run to see what would go)");
  EnvironmentLock lock;
  if (!o.dry_run) TAILOR_TRY_VOID(lock.acquire(path, o));
  auto sites = site_packages_of(path);
  if (sites.empty())
    return make_error(
        path + ": not a wheel, an ELF library, a virtual environment or a site-packages folder");
  TAILOR_TRY(env, environment_files(path, sites, o.device_files));
  std::error_code marker_ec;
  for (const auto& [dist, rows] : env.records)
    if (fs::exists(dist / k_slim_marker, marker_ec)) in.slimmed_before = true;
  auto& files = env.files;
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
  std::sort(in.files.begin(), in.files.end(),
            [](const auto& a, const auto& b) { return a.path < b.path; });
  std::map<fs::path, DeviceFilePackage> device;
  if (done && o.device_files) done = remove_device_files(env, o, in, device);
  std::set<fs::path> dists;
  for (const auto& [dist, list] : changed) dists.insert(dist);
  for (const auto& [dist, package] : device)
    if (!package.removed.empty()) dists.insert(dist);
  for (const auto& dist : dists) {
    auto d = device.find(dist);
    TAILOR_TRY_VOID(update_dist_info(dist, changed[dist], env.records[dist], o,
                                     d == device.end() ? nullptr : &d->second));
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
    const uint64_t lo = (r.offset + block - 1) / block * block,
                   hi = (r.offset + r.size) / block * block;
    if (hi <= lo) continue;
    int rc;
    do
      rc = ::fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(lo),
                       static_cast<off_t>(hi - lo));
    while (rc != 0 && errno == EINTR);
    if (rc == 0) continue;
    if (errno == EOPNOTSUPP || errno == ENOSYS)
      return "the filesystem does not punch holes (fallocate: " + errno_text(errno) +
             "): the freed bytes stay on disk as zeros";
    return "holes not punched (fallocate: " + errno_text(errno) +
           "): the freed bytes stay on disk as zeros";
  }
  return "";
}

std::string_view input_kind_key(InputKind kind) {
  switch (kind) {
    case InputKind::library:
      return "library";
    case InputKind::wheel:
      return "wheel";
    case InputKind::environment:
      break;
  }
  return "environment";
}

Expected<SlimReport> slim_paths(const std::vector<std::string>& paths, const SlimOptions& o) {
  SlimReport report;
  report.policy = o.policy.describe();
  for (const auto& cc : o.policy.devices) report.devices.push_back(cc.str());
  report.dry_run = o.dry_run;
  report.device_files = o.device_files;
  if (!o.dry_run && !o.in_place && o.out_dir.empty())
    return make_error("say where the result goes: --out DIR, --in-place, or --dry-run");
  // Every input is looked at before the output folder exists: a wrong path leaves nothing.
  enum class Kind { environment, wheel, library };
  std::vector<Kind> kinds;
  for (const auto& p : paths) {
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0) return make_error(p + ": " + errno_text(errno));
    if (S_ISDIR(st.st_mode))
      kinds.push_back(Kind::environment);
    else if (!S_ISREG(st.st_mode))
      return make_error(p + ": not a regular file or folder");
    else if (p.ends_with(".whl"))
      kinds.push_back(Kind::wheel);
    else if (auto device = device_file_kind_at(p); device != formats::DeviceFileKind::none)
      return make_error(p + ": a " + std::string(formats::device_file_kind_name(device)) +
                        " file, device code of its own: slim removes such files from the wheels "
                        "and environments that ship them (--device-files)");
    else if (has_elf_magic(p))
      kinds.push_back(Kind::library);
    else
      return make_error(
          p + ": not a wheel, an ELF library, a virtual environment or a site-packages folder");
  }
  // A folder this run made and left empty goes again when the run fails.
  bool made_out_dir = false;
  if (!o.out_dir.empty()) {
    std::error_code ec;
    made_out_dir = fs::create_directories(o.out_dir, ec);
    if (!fs::is_directory(o.out_dir, ec))
      return make_error(o.out_dir + ": cannot create the output folder");
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
      case Kind::environment:
        r = slim_environment_input(p, o);
        break;
      case Kind::wheel:
        r = slim_wheel_input(p, o);
        break;
      case Kind::library:
        r = slim_library_input(p, o);
        break;
    }
    if (!r) return fail(r.error());
    r->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    report.inputs.push_back(std::move(*r));
  }
  return report;
}

}  // namespace tailor::slim
