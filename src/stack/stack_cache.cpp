// The stored resolutions and inspections of `tailor stack` (stack_cache.h).
#include "stack/stack_cache.h"

#include <elf.h>
#include <fmt/format.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "formats/device_file.h"
#include "util/files.h"
#include "util/sha256.h"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace tailor::stack {

namespace {
constexpr std::string_view k_resolution_schema = "tailor.stack-resolution/1";
constexpr std::string_view k_inspection_schema = "tailor.stack-inspection/2";

/// Writes `text` beside `path` and renames it over: readers and concurrent writers of the
/// same entry never see half a file.
Expected<void> store_file(const std::string& path, std::string_view text) {
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  if (ec)
    return make_error(
        fmt::format("{}: cannot create: {}", fs::path(path).parent_path().string(), ec.message()));
  TAILOR_TRY(file, AtomicFile::beside(path));
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(file.fd(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return make_error(fmt::format("{}: cannot write: {}", path, errno_text(errno)));
    done += static_cast<size_t>(n);
  }
  return file.commit(0644);
}

std::string age_text(int64_t seconds) {
  if (seconds < 0) seconds = 0;
  if (seconds < 120) return fmt::format("{} s", seconds);
  if (seconds < 2 * 3600) return fmt::format("{} min", seconds / 60);
  if (seconds < 2 * 86400) return fmt::format("{} h", seconds / 3600);
  return fmt::format("{} days", seconds / 86400);
}

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Expected<CommandResult> run_pip(CommandRunner& runner, const CommandSpec& spec) {
  auto r = runner.run(spec);
  if (r.interrupted) return make_error("interrupted");
  if (!r.started)
    return make_error(fmt::format("pip: cannot run {}", spec.argv.empty() ? "" : spec.argv[0]));
  if (r.timed_out) return make_error("pip: timed out");
  return r;
}
}  // namespace

bool is_sha256_hex(std::string_view text) {
  return text.size() == 64 && std::all_of(text.begin(), text.end(), [](char c) {
           return std::isxdigit(static_cast<unsigned char>(c));
         });
}

// ---- resolutions ----------------------------------------------------------------------
std::string resolution_key(const std::vector<std::string>& argv,
                           const std::map<std::string, std::optional<std::string>>& set_env,
                           const std::map<std::string, std::string>& environment) {
  std::map<std::string, std::string> effective;
  for (const auto& [k, v] : environment)
    if (k.starts_with("PIP_")) effective[k] = v;
  for (const auto& [k, v] : set_env) {
    if (v)
      effective[k] = *v;
    else
      effective.erase(k);
  }
  std::string text(k_resolution_schema);
  text += '\0';
  for (const auto& a : argv) text += fmt::format("{}:{}\n", a.size(), a);
  text += "env\n";
  for (const auto& [k, v] : effective)
    text += fmt::format("{}:{}={}:{}\n", k.size(), k, v.size(), v);
  return Sha256::hex_of(text);
}

bool same_fingerprints(std::string_view stored, std::string_view now) {
  auto a = json::parse(stored, nullptr, false), b = json::parse(now, nullptr, false);
  if (a.is_discarded() || b.is_discarded() || !a.is_object() || !b.is_object()) return false;
  for (const char* k : {"pages", "runtime"})
    if (!a.contains(k) || !b.contains(k)) return false;
  return a == b;
}

bool reusable_report(std::string_view report, const std::vector<std::string>& argv) {
  auto j = json::parse(report, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("install") || !j["install"].is_array())
    return false;
  bool no_deps = std::find(argv.begin(), argv.end(), "--no-deps") != argv.end();
  for (const auto& item : j["install"]) {
    if (!item.is_object() || !item.contains("download_info") || !item["download_info"].is_object())
      return false;
    if (item.value("is_direct", false)) return false;
    const auto& di = item["download_info"];
    if (di.contains("dir_info") || di.contains("vcs_info")) return false;
    std::string url = di.value("url", std::string());
    url = url.substr(0, url.find_first_of("#?"));
    if (!url.ends_with(".whl") && !no_deps) return false;
  }
  return true;
}

std::string ResolutionStore::path_of(const std::string& key) const {
  return (fs::path(m_dir) / (key + ".json")).string();
}

std::optional<StoredResolution> ResolutionStore::load(const std::string& key,
                                                      std::string& warning) const {
  warning.clear();
  std::string path = path_of(key);
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  auto text = read_file(path);
  std::string why;
  StoredResolution r;
  if (!text) {
    why = "cannot be read";
  } else {
    auto j = json::parse(*text, nullptr, false);
    if (j.is_discarded() || !j.is_object())
      why = "not JSON";
    else if (j.value("schema", std::string()) != k_resolution_schema)
      why = "not a stored resolution of this tailor";
    else if (j.value("key", std::string()) != key)
      why = "its key differs from its name";
    else if (!j.contains("report") || !j["report"].is_string() || !j.contains("seen") ||
             !j["seen"].is_object() || !j.contains("created") || !j["created"].is_number_integer())
      why = "a field is missing";
    else {
      r.key = key;
      r.report = j["report"].get<std::string>();
      r.seen = j["seen"].dump();
      r.created = j["created"].get<int64_t>();
      return r;
    }
  }
  warning = fmt::format("{}: {}; ignored (pip resolves again)", path, why);
  fs::remove(path, ec);
  return std::nullopt;
}

Expected<void> ResolutionStore::store(const StoredResolution& r) const {
  auto seen = json::parse(r.seen, nullptr, false);
  if (seen.is_discarded() || !seen.is_object())
    return make_error("pip's fingerprints are not a JSON object");
  json j = {{"schema", k_resolution_schema},
            {"key", r.key},
            {"created", r.created},
            {"report", r.report},
            {"seen", seen}};
  return store_file(path_of(r.key), j.dump());
}

Expected<PipResolution> resolve_with_cache(CommandRunner& runner, const CommandSpec& run,
                                           const std::string& report_path,
                                           const std::vector<std::string>& key_argv,
                                           const std::string& scratch,
                                           const PipCacheOptions& options) {
  auto progress = [&](const std::string& line) {
    if (options.progress) options.progress(line);
  };
  auto now = [&] { return options.now ? options.now() : unix_now(); };
  bool caching = !options.dir.empty();
  std::string key = resolution_key(key_argv, run.env, options.environment);
  ResolutionStore store(options.dir);
  std::string seen_path = (fs::path(scratch) / "seen.json").string();
  std::error_code ec;
  if (caching && !options.refresh) {
    std::string warning;
    auto stored = store.load(key, warning);
    if (!warning.empty() && options.warn) options.warn(warning);
    if (stored) {
      std::string stored_path = (fs::path(scratch) / "stored-seen.json").string();
      auto pages = json::parse(stored->seen, nullptr, false);
      size_t n = pages.is_object() && pages.contains("pages") && pages["pages"].is_object()
                     ? pages["pages"].size()
                     : 0;
      progress(fmt::format(
          "checking pip's resolution of {} ago: are the {} index page{} it read unchanged?",
          age_text(now() - stored->created), n, n == 1 ? "" : "s"));
      if (auto w = write_file_atomic(stored_path, stored->seen); w) {
        CommandSpec check = run;
        check.on_line = nullptr;
        check.env["TAILOR_PIP_SEEN"] = seen_path;
        check.env["TAILOR_PIP_CHECK"] = stored_path;
        TAILOR_TRY(r, run_pip(runner, check));
        auto seen_now = r.exit_code == 0 ? read_file(seen_path) : std::nullopt;
        fs::remove(seen_path, ec);
        fs::remove(stored_path, ec);
        if (seen_now && same_fingerprints(stored->seen, *seen_now)) {
          progress("unchanged: the stored resolution holds (--refresh resolves again)");
          return PipResolution{true, stored->report, "", true, stored->created};
        }
        // Stale (or not checkable now): gone, so that a later lookup does not check it again.
        fs::remove(store.path_of(key), ec);
        progress(seen_now ? "the index or pip's settings changed since: pip resolves again"
                          : "could not check it: pip resolves again");
      }
    }
  }
  if (options.stored_only) return PipResolution{};
  CommandSpec spec = run;
  if (caching) spec.env["TAILOR_PIP_SEEN"] = seen_path;
  int64_t started = now();
  TAILOR_TRY(r, run_pip(runner, spec));
  PipResolution out;
  out.resolved_at = started;
  if (r.exit_code != 0) {
    out.output = r.err + r.out;
    fs::remove(seen_path, ec);
    return out;
  }
  auto report = read_file(report_path);
  if (!report) return make_error("pip wrote no report");
  out.ok = true;
  out.report = std::move(*report);
  if (caching) {
    auto seen = read_file(seen_path);
    fs::remove(seen_path, ec);
    if (seen && reusable_report(out.report, key_argv))
      if (auto s = store.store({key, out.report, *seen, started}); !s && options.warn)
        options.warn("cannot store pip's resolution: " + s.error().message);
  }
  return out;
}

// ---- inspections ----------------------------------------------------------------------
namespace {
int note_callback(struct dl_phdr_info* info, size_t, void* data) {
  auto* out = static_cast<std::string*>(data);
  // The first object is the executable itself.
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const auto& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const size_t align = ph.p_align == 8 ? 8 : 4;
    auto pad = [align](size_t n) { return (n + align - 1) / align * align; };
    const auto* p = reinterpret_cast<const unsigned char*>(info->dlpi_addr + ph.p_vaddr);
    size_t size = ph.p_memsz, off = 0;
    while (off + sizeof(ElfW(Nhdr)) <= size) {
      ElfW(Nhdr) nh;
      std::memcpy(&nh, p + off, sizeof nh);
      size_t name_at = off + sizeof nh, desc_at = name_at + pad(nh.n_namesz),
             next = desc_at + pad(nh.n_descsz);
      if (next > size || desc_at > size || nh.n_descsz > size) break;
      if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
          std::memcmp(p + name_at, "GNU", 4) == 0) {
        std::string hex;
        for (size_t k = 0; k < nh.n_descsz; ++k) hex += fmt::format("{:02x}", p[desc_at + k]);
        *out = hex;
        return 1;
      }
      off = next;
    }
  }
  return 1;  // only the executable
}

const std::vector<inspect::NeededKind>& all_needed_kinds() {
  static const std::vector<inspect::NeededKind> kinds = {
      inspect::NeededKind::bundled,      inspect::NeededKind::whitelisted,
      inspect::NeededKind::cuda_runtime, inspect::NeededKind::cuda_driver,
      inspect::NeededKind::torch,        inspect::NeededKind::found,
      inspect::NeededKind::not_found,    inspect::NeededKind::system};
  return kinds;
}
}  // namespace

std::string build_identity() {
  static const std::string id = [] {
    std::string found;
    dl_iterate_phdr(note_callback, &found);
    return found.empty() ? std::string() : "build-id " + found;
  }();
  return id;
}

std::string inspection_to_json(const inspect::WheelReport& wheel, std::string_view build) {
  json libs = json::array();
  for (const auto& lib : wheel.libraries) {
    json targets = json::array(), needed = json::array();
    // The code's header fields too, so that a stored library is judged as a fresh one
    // (inspect's verdicts compare cuda::FatbinCode, never names).
    for (const auto& t : lib.targets)
      targets.push_back(
          {t.name, t.entries, t.code.kind, t.code.arch, t.code.arch_specific, t.code.family});
    for (const auto& n : lib.needed_libraries)
      needed.push_back({n.soname, std::string(inspect::needed_kind_key(n.kind))});
    libs.push_back({{"path", lib.path},
                    {"machine", lib.machine},
                    {"device", lib.has_device_code},
                    {"targets", targets},
                    {"needed", needed},
                    {"cxx11_abi", lib.cxx11_abi ? json(*lib.cxx11_abi) : json(nullptr)}});
  }
  // Cubins, PTX and fatbin files the package loads itself: judged like library code.
  json device_files = json::array();
  for (const auto& f : wheel.device_files) {
    json targets = json::array();
    for (const auto& t : f.targets)
      targets.push_back(
          {t.name, t.entries, t.code.kind, t.code.arch, t.code.arch_specific, t.code.family});
    device_files.push_back({{"path", f.path},
                            {"kind", std::string(formats::device_file_kind_name(f.kind))},
                            {"targets", targets}});
  }
  json j = {{"schema", k_inspection_schema},
            {"build", build},
            {"targets", wheel.target_names()},
            {"libraries", libs},
            {"device_files", device_files}};
  return j.dump();
}

Expected<inspect::WheelReport> inspection_from_json(std::string_view text, std::string_view build,
                                                    const std::string& path, bool* stale) {
  if (stale) *stale = false;
  auto j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return make_error("not JSON");
  if (j.value("schema", std::string()) != k_inspection_schema ||
      j.value("build", std::string()) != build) {
    if (stale) *stale = true;
    return make_error("another tailor's inspection");
  }
  auto target_of = [](const json& t) {
    inspect::TargetStats s;
    s.name = t.at(0).get<std::string>();
    s.entries = t.at(1).get<uint64_t>();
    s.code = {t.at(2).get<uint16_t>(), t.at(3).get<uint32_t>(), t.at(4).get<bool>(),
              t.at(5).get<bool>()};
    return s;
  };
  try {
    inspect::WheelReport w;
    w.path = path;
    for (const auto& t : j.at("targets")) w.targets.push_back({t.get<std::string>()});
    for (const auto& f : j.at("device_files")) {
      inspect::DeviceFile file;
      file.path = f.at("path").get<std::string>();
      const std::string kind = f.at("kind").get<std::string>();
      for (auto k : {formats::DeviceFileKind::cubin, formats::DeviceFileKind::ptx,
                     formats::DeviceFileKind::fatbin})
        if (formats::device_file_kind_name(k) == kind) file.kind = k;
      if (file.kind == formats::DeviceFileKind::none)
        return make_error("unknown device file kind '" + kind + "'");
      for (const auto& t : f.at("targets")) file.targets.push_back(target_of(t));
      w.device_files.push_back(std::move(file));
    }
    for (const auto& l : j.at("libraries")) {
      inspect::InspectedLibrary lib;
      lib.path = l.at("path").get<std::string>();
      lib.machine = l.at("machine").get<std::string>();
      lib.has_device_code = l.at("device").get<bool>();
      for (const auto& t : l.at("targets")) lib.targets.push_back(target_of(t));
      for (const auto& n : l.at("needed")) {
        inspect::NeededLibrary need;
        need.soname = n.at(0).get<std::string>();
        std::string kind = n.at(1).get<std::string>();
        auto k = std::find_if(
            all_needed_kinds().begin(), all_needed_kinds().end(),
            [&](inspect::NeededKind x) { return inspect::needed_kind_key(x) == kind; });
        if (k == all_needed_kinds().end())
          return make_error("unknown needed-library kind '" + kind + "'");
        need.kind = *k;
        lib.needed_libraries.push_back(std::move(need));
      }
      const auto& abi = l.at("cxx11_abi");
      if (!abi.is_null()) lib.cxx11_abi = abi.get<bool>();
      w.libraries.push_back(std::move(lib));
    }
    return w;
  } catch (const json::exception& e) {
    return make_error(std::string("a field is missing or of another type (") + e.what() + ")");
  }
}

std::optional<inspect::WheelReport> InspectionStore::load(const std::string& sha256,
                                                          const std::string& path,
                                                          std::string& warning) const {
  warning.clear();
  if (m_build.empty() || !is_sha256_hex(sha256)) return std::nullopt;
  fs::path file = fs::path(m_dir) / sha256.substr(0, 2) / (sha256 + ".json");
  std::error_code ec;
  if (!fs::exists(file, ec)) return std::nullopt;
  auto text = read_file(file.string());
  bool stale = false;
  auto w = text ? inspection_from_json(*text, m_build, path, &stale)
                : Expected<inspect::WheelReport>(make_error("cannot be read"));
  if (w) return std::move(*w);
  if (!stale)
    warning = fmt::format("{}: {}; ignored (the wheel is inspected again)", file.string(),
                          w.error().message);
  fs::remove(file, ec);
  return std::nullopt;
}

Expected<void> InspectionStore::store(const std::string& sha256,
                                      const inspect::WheelReport& wheel) const {
  if (m_build.empty() || !is_sha256_hex(sha256)) return {};
  return store_file((fs::path(m_dir) / sha256.substr(0, 2) / (sha256 + ".json")).string(),
                    inspection_to_json(wheel, m_build));
}

}  // namespace tailor::stack
