#include "inspect/render.h"
#include "util/text_escape.h"

namespace tailor::inspect {

namespace {

using nlohmann::json;

json library_json(const InspectedLibrary& lib) {
  json j;
  j["path"] = lib.path;
  j["machine"] = lib.machine;
  j["file_size"] = lib.file_size;
  j["soname"] = lib.soname;
  j["has_device_code"] = lib.has_device_code;
  j["device_code_bytes"] = lib.device_code_bytes;
  j["targets"] = lib.target_names();
  json stats = json::array();
  for (const auto& t : lib.targets)
    stats.push_back({{"name", t.name},
                     {"entries", t.entries},
                     {"stored_bytes", t.stored_bytes},
                     {"uncompressed_bytes", t.uncompressed_bytes},
                     {"compression", t.compression}});
  j["target_stats"] = stats;
  // Containers the library keeps in its own sections (counted in targets above).
  json embedded = json::array();
  for (const auto& e : lib.embedded) {
    json targets = json::array();
    for (const auto& t : e.targets)
      targets.push_back({{"name", t.name},
                         {"entries", t.entries},
                         {"stored_bytes", t.stored_bytes},
                         {"uncompressed_bytes", t.uncompressed_bytes},
                         {"compression", t.compression}});
    embedded.push_back({{"section", e.section},
                        {"containers", e.containers},
                        {"bytes", e.bytes},
                        {"target_stats", targets}});
  }
  j["embedded_fatbins"] = embedded;
  json needed = json::array();
  for (const auto& n : lib.needed_libraries) {
    json e{{"soname", n.soname}, {"kind", std::string(needed_kind_key(n.kind))}};
    if (!n.wheels.empty()) e["wheels"] = n.wheels;
    if (!n.systems.empty()) e["system_packages"] = n.systems;
    if (!n.what.empty()) e["what"] = n.what;
    if (!n.resolved.empty()) e["resolved"] = n.resolved;
    if (!n.via.empty()) e["via"] = n.via;
    if (!n.note.empty()) e["note"] = n.note;
    needed.push_back(e);
  }
  j["needed"] = needed;
  j["runpath"] = lib.runpath;
  j["rpath"] = lib.rpath;
  j["loader_warnings"] = lib.loader_warnings;
  j["runtime_warnings"] = lib.runtime_warnings;
  json needs = json::array();
  for (const auto& v : lib.version_needs)
    needs.push_back({{"file", v.file}, {"versions", v.versions}});
  j["version_needs"] = needs;
  j["manylinux"] = lib.manylinux.tag;
  j["manylinux_limiting"] = lib.manylinux.limiting;
  j["cxx11_abi"] = lib.cxx11_abi ? json(*lib.cxx11_abi) : json(nullptr);
  j["x86_isa_level"] = lib.x86_isa_level ? json(*lib.x86_isa_level) : json(nullptr);
  j["payloads_verified"] = lib.payloads_verified;
  if (lib.member_compressed_bytes) j["member_compressed_bytes"] = lib.member_compressed_bytes;
  return j;
}

json stats_json(const TargetStats& t) {
  return {{"name", t.name},
          {"entries", t.entries},
          {"stored_bytes", t.stored_bytes},
          {"uncompressed_bytes", t.uncompressed_bytes},
          {"compression", t.compression}};
}

// A device code file: its kind and targets; "manylinux" says it is no host library rather
// than inventing a tag.
json device_file_json(const DeviceFile& f) {
  json j;
  j["path"] = f.path;
  j["kind"] = std::string(formats::device_file_kind_name(f.kind));
  j["file_size"] = f.file_size;
  json names = json::array(), stats = json::array();
  for (const auto& t : f.targets) {
    names.push_back(t.name);
    stats.push_back(stats_json(t));
  }
  j["targets"] = names;
  j["target_stats"] = stats;
  j["manylinux"] = "not a host library";
  if (f.member_compressed_bytes) j["member_compressed_bytes"] = f.member_compressed_bytes;
  return j;
}

// The device code files grouped per folder and target, as the text summary shows them.
json device_folders_json(const std::vector<DeviceFile>& files) {
  json out = json::array();
  for (const auto& f : device_folders(files)) {
    json targets = json::array();
    for (const auto& t : f.targets) {
      json row = stats_json(t);
      row["files"] = t.files;
      targets.push_back(row);
    }
    out.push_back({{"folder", f.folder},
                   {"files", f.files},
                   {"bytes", f.bytes},
                   {"cubin", f.cubins},
                   {"ptx", f.ptx},
                   {"fatbin", f.fatbins},
                   {"target_stats", targets}});
  }
  return out;
}

json device_files_json(const std::vector<DeviceFile>& files) {
  json out = json::array();
  for (const auto& f : files) out.push_back(device_file_json(f));
  return out;
}

json wheel_json(const WheelReport& w) {
  json j;
  j["path"] = w.path;
  j["file_size"] = w.file_size;
  j["name"] = w.name;
  j["version"] = w.version;
  j["local_label"] = w.local_label;
  j["build"] = w.build;
  j["tags_from_name"] = w.tags_from_name;
  j["tags_from_wheel_file"] = w.tags_from_wheel_file;
  j["tags_consistent"] = w.tags_consistent;
  j["metadata"] = {{"name", w.metadata_name}, {"version", w.metadata_version}};
  j["members"] = w.members;
  j["installed_bytes"] = w.installed_bytes;
  json mism = json::array();
  for (const auto& m : w.record.mismatches) mism.push_back({{"path", m.path}, {"what", m.what}});
  j["record"] = {{"present", w.record.present},
                 {"passed", w.record.passed()},
                 {"ok", w.record.ok},
                 {"mismatches", mism},
                 {"unlisted", w.record.unlisted},
                 {"missing", w.record.missing}};
  j["targets"] = w.target_names();
  json totals = json::array();
  for (const auto& t : w.targets)
    totals.push_back({{"name", t.name},
                      {"libraries", t.libraries},
                      {"entries", t.entries},
                      {"stored_bytes", t.stored_bytes},
                      {"uncompressed_bytes", t.uncompressed_bytes},
                      {"compression", t.compression},
                      {"share", t.share}});
  j["target_totals"] = totals;
  j["manylinux"] = w.manylinux_needed;
  j["manylinux_limiting"] = w.manylinux_limiting;
  j["manylinux_claimed"] = w.manylinux_claimed;
  j["claim_ok"] = w.claim_ok;
  j["claim_problem"] = w.claim_problem;
  j["claim_ok_without_other_gpu"] = w.claim_ok_without_other_gpu;
  j["claim_problem_without_other_gpu"] = w.claim_problem_without_other_gpu;
  j["other_gpu_libraries"] = json::array();
  for (const auto& lib : w.other_gpu_libraries)
    j["other_gpu_libraries"].push_back({{"path", lib.path}, {"platform", lib.platform}});
  json libs = json::array();
  for (const auto& lib : w.libraries) libs.push_back(library_json(lib));
  j["libraries"] = libs;
  j["device_files"] = device_files_json(w.device_files);
  j["device_folders"] = device_folders_json(w.device_files);
  return j;
}

}  // namespace

nlohmann::json to_json(const InspectReport& report, const Verdicts* verdicts) {
  json j;
  j["schema"] = "tailor.inspect/1";
  json libs = json::array();
  for (const auto& lib : report.libraries) libs.push_back(library_json(lib));
  j["libraries"] = libs;
  j["device_files"] = device_files_json(report.device_files);
  j["device_folders"] = device_folders_json(report.device_files);
  json wheels = json::array();
  for (const auto& w : report.wheels) wheels.push_back(wheel_json(w));
  j["wheels"] = wheels;
  j["targets"] = report.targets_union();
  if (!report.skipped.empty()) j["skipped"] = report.skipped;
  if (verdicts) {
    json items = json::array();
    for (const auto& v : verdicts->items) {
      json i{{"check", std::string(verdict_check_key(v.check))},
             {"library", v.library},
             {"pass", v.pass}};
      if (v.check == VerdictCheck::gpu) {
        i["device"] = v.device.str();
        i["gpu_names"] = v.gpu_names;
        i["mode"] = v.mode;
        i["via"] = v.via;
        if (!v.reason.empty()) i["reason"] = v.reason;
        json covering = json::array();
        for (const auto& c : v.covering)
          covering.push_back({{"target", c.target}, {"entries", c.entries}});
        i["covering"] = covering;
      } else {
        i["missing"] = v.missing;
        if (v.check == VerdictCheck::exact) i["extra"] = v.extra;
      }
      items.push_back(i);
    }
    j["verdicts"] = {
        {"pass", verdicts->pass()}, {"items", items}, {"problems", verdicts->problems}};
  }
  // Names from the input (DT_NEEDED, zip members) may hold bytes that are not UTF-8: they
  // become "\\xNN" text (util/text_escape.h), so dump() never throws.
  escape_json_strings(j);
  return j;
}

}  // namespace tailor::inspect
