#include "wheelhouse/wheelhouse_entry.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>

#include "formats/wheel.h"
#include "formats/zip.h"
#include "inspect/inspect_report.h"
#include "inspect/wheel_provenance.h"
#include "util/mapped_file.h"
#include "util/sha256.h"
#include "util/strings.h"

namespace tailor::wheelhouse {

namespace fs = std::filesystem;

namespace {

bool is_alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

bool is_hex64(std::string_view s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// A wheel file name as it may appear in a page and a path: PEP 427's characters only.
bool safe_file_name(std::string_view name) {
  if (name.empty() || name.front() == '.' || !name.ends_with(".whl")) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return is_alnum(c) || c == '.' || c == '_' || c == '-' || c == '+' || c == '!';
  });
}

// The number in a target's name ("sm_90a" -> 90), for the order of a target set.
int target_number(std::string_view name) {
  int n = 0;
  for (char c : name)
    if (c >= '0' && c <= '9') n = n * 10 + (c - '0');
  return n;
}

Expected<std::string> member_text(Bytes file, const formats::ZipEntry& e, uint64_t max_bytes,
                                  const std::string& path) {
  if (e.uncompressed_size > max_bytes)
    return make_error(fmt::format("{}: {} is {} bytes, over the {} accepted", path, e.name,
                                  e.uncompressed_size, max_bytes));
  std::vector<std::byte> buffer;
  auto bytes = formats::extract_member(file, e, buffer);
  if (!bytes) return make_error(fmt::format("{}: {}", path, bytes.error().message));
  return std::string(reinterpret_cast<const char*>(bytes->data()), bytes->size());
}

}  // namespace

bool valid_project_name(std::string_view name) {
  if (name.empty() || !is_alnum(name.front()) || !is_alnum(name.back())) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return is_alnum(c) || c == '.' || c == '_' || c == '-'; });
}

Expected<std::string> target_set_name(const std::vector<std::string>& targets) {
  std::vector<std::string> names;
  for (const auto& t : targets) {
    std::string n;
    for (char c : t) {
      if (c == '_') continue;
      if (!is_alnum(c) || n.size() > 32)
        return make_error(fmt::format("'{}' is not a GPU target name", t));
      n += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    if (n.empty()) return make_error(fmt::format("'{}' is not a GPU target name", t));
    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  }
  if (names.empty()) return std::string("cpu");
  std::sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
    int na = target_number(a), nb = target_number(b);
    return na != nb ? na < nb : a < b;
  });
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : "-") + n;
  return out;
}

namespace {

// The targets a tailor-built wheel is filed under: its provenance's, unless `tailor slim` has
// cut its device code since (tailor-slim.json): then what the code still holds, as inspect
// reads it, and a wheel slimmed down to no device code is refused (an index of its targets
// would serve GPUs it has no kernels for).
Expected<std::vector<std::string>> held_targets(Bytes file, const formats::ZipArchive& archive,
                                                const std::string& path,
                                                const std::vector<std::string>& claimed) {
  if (!inspect::find_dist_info_member(archive, formats::k_tailor_slim_marker)) return claimed;
  auto report = inspect::inspect_wheel(file, path);
  if (!report) return make_error(report.error().message);
  std::vector<std::string> held = report->target_names();
  if (held.empty())
    return make_error(fmt::format(
        "{}: no CUDA device code left (built for {}, slimmed since: {}): no GPU target set to "
        "file it under; publish the wheel as built, or slim it for GPUs it has code for",
        path, join(claimed, ", "), formats::k_tailor_slim_marker));
  return held;
}

}  // namespace

Expected<WheelCandidate> read_candidate(const std::string& path, ForeignWheels foreign) {
  const std::string file = fs::path(path).filename().string();
  std::error_code exists_ec;
  if (!fs::exists(fs::symlink_status(path, exists_ec)))
    return make_error(fmt::format("{}: no such file", path));
  if (!safe_file_name(file))
    return make_error(fmt::format(
        "{}: not a wheel file name (NAME-VERSION-PYTHON-ABI-PLATFORM.whl, letters, digits and "
        "._-+! only)",
        path));
  auto name = formats::parse_wheel_filename(file);
  if (!name) return make_error(fmt::format("{}: {}", path, name.error().message));
  if (!valid_project_name(name->distribution))
    return make_error(fmt::format("{}: '{}' is not a project name", path, name->distribution));
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    return make_error(fmt::format("{}: not a regular file", path));
  TAILOR_TRY(map, MappedFile::open(path));
  auto archive = formats::parse_zip(map.bytes());
  if (!archive)
    return make_error(fmt::format("{}: not a wheel: {}", path, archive.error().message));

  WheelCandidate c;
  c.path = path;
  WheelEntry& e = c.entry;
  e.file = file;
  e.project = formats::normalize_distribution_name(name->distribution);
  e.version = name->version;
  e.size = map.bytes().size();
  e.sha256 = Sha256::hex(Sha256::of(map.bytes()));

  const formats::ZipEntry* metadata = inspect::find_dist_info_member(*archive, "METADATA");
  if (!metadata) return make_error(fmt::format("{}: no METADATA in its dist-info", path));
  TAILOR_TRY(text,
             member_text(map.bytes(), *metadata, formats::WheelLimits{}.max_metadata_bytes, path));
  auto meta = formats::parse_metadata(text);
  if (formats::normalize_distribution_name(meta.name) != e.project)
    return make_error(fmt::format("{}: METADATA names the project '{}', the file name '{}'", path,
                                  meta.name, name->distribution));
  e.requires_python = meta.requires_python;
  e.metadata_sha256 = Sha256::hex(
      Sha256::of(std::span(reinterpret_cast<const std::byte*>(text.data()), text.size())));
  c.metadata = std::move(text);

  auto provenance = inspect::read_wheel_provenance(map.bytes(), *archive, path);
  if (provenance) {
    e.provenance = nlohmann::json::parse(provenance->text, nullptr, false);
    if (formats::normalize_distribution_name(provenance->package) != e.project)
      return make_error(fmt::format("{}: the provenance names the package '{}', the file name '{}'",
                                    path, provenance->package, name->distribution));
    TAILOR_TRY(held, held_targets(map.bytes(), *archive, path, provenance->targets));
    e.targets = std::move(held);
  } else if (foreign == ForeignWheels::allowed) {
    auto report = inspect::inspect_wheel(map.bytes(), path);
    if (!report) return make_error(report.error().message);
    e.targets = report->target_names();
    e.foreign = true;
  } else {
    return make_error(provenance.error().message + " (--allow-foreign publishes it anyway)");
  }
  auto set = target_set_name(e.targets);
  if (!set) return make_error(fmt::format("{}: {}", path, set.error().message));
  e.target_set = *set;
  return c;
}

nlohmann::json to_json(const WheelEntry& e) {
  nlohmann::json j = {{"file", e.file},       {"project", e.project},
                      {"version", e.version}, {"target_set", e.target_set},
                      {"targets", e.targets}, {"sha256", e.sha256},
                      {"size", e.size},       {"metadata_sha256", e.metadata_sha256},
                      {"foreign", e.foreign}};
  if (!e.requires_python.empty()) j["requires_python"] = e.requires_python;
  if (!e.provenance.is_null()) j["provenance"] = e.provenance;
  return j;
}

Expected<WheelEntry> entry_from_json(const nlohmann::json& j, const std::string& where) {
  auto bad = [&](const std::string& why) { return make_error(fmt::format("{}: {}", where, why)); };
  if (!j.is_object()) return bad("a wheel entry is not an object");
  WheelEntry e;
  auto str = [&](const char* key, std::string& out) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_string()) return false;
    out = it->get<std::string>();
    return true;
  };
  if (!str("file", e.file) || !safe_file_name(e.file))
    return bad("a wheel entry's file is not a wheel name");
  if (!str("project", e.project) || !valid_project_name(e.project))
    return bad(e.file + ": project is not a project name");
  if (!str("version", e.version)) return bad(e.file + ": no version");
  if (!str("sha256", e.sha256) || !is_hex64(e.sha256))
    return bad(e.file + ": sha256 is not 64 hex digits");
  if (!str("metadata_sha256", e.metadata_sha256) || !is_hex64(e.metadata_sha256))
    return bad(e.file + ": metadata_sha256 is not 64 hex digits");
  str("requires_python", e.requires_python);
  if (auto t = j.find("targets"); t != j.end() && t->is_array())
    for (const auto& v : *t)
      if (v.is_string()) e.targets.push_back(v.get<std::string>());
  auto set = target_set_name(e.targets);
  if (!set) return bad(e.file + ": " + set.error().message);
  if (!str("target_set", e.target_set) || e.target_set != *set)
    return bad(e.file + ": target_set does not match its targets");
  if (auto s = j.find("size"); s != j.end() && s->is_number_unsigned()) e.size = s->get<uint64_t>();
  if (auto f = j.find("foreign"); f != j.end() && f->is_boolean()) e.foreign = f->get<bool>();
  if (auto p = j.find("provenance"); p != j.end() && p->is_object()) e.provenance = *p;
  return e;
}

}  // namespace tailor::wheelhouse
