// `tailor slim WHEEL|LIB|VENV|SITE-PACKAGES... (--keep SPEC | --gpu SPEC)`: cut the device
// code these GPUs will never run. Exit 0 when done (or, with --dry-run, planned), 2 for
// bad input or a failure (one error line; inputs untouched, no partial output), 130/143
// when interrupted.
#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "cli/commands.h"
#include "cuda/fatbin_code.h"
#include "cuda/target_request.h"
#include "slim/slim_paths.h"
#include "util/interrupt.h"
#include "util/strings.h"
#include "util/terminal_style.h"
#include "util/text_escape.h"
#include "util/version.h"

namespace tailor::cli {
namespace {

struct SlimArgs {
  std::vector<std::string> paths;
  std::vector<std::string> keep, gpu;  ///< --keep / --gpu, once per flag
  std::string out;
  bool in_place = false, keep_ptx = false, drop_ptx = false, drop_lto = false, dry_run = false,
       json = false, device_files = true;
  unsigned jobs = 0;
};

std::string percent(uint64_t before, uint64_t after) {
  if (before == 0) return "0%";
  double p = 100.0 * (static_cast<double>(before) - static_cast<double>(after)) /
             static_cast<double>(before);
  return fmt::format("{:.1f}%", p);
}

// 1021 -> "1,021".
std::string with_thousands(uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// Every target left in one library, for the table's last column: the targets that run
// on a kept GPU, then the others by reason, then the containers emptied to their header
// ("compute_75 sm_90 sm_90a; LTO IR: lto_50 (10,046 entries in 1 target); emptied: 1,021
// containers").
std::string kept_targets(const slim::LibrarySlim& lib) {
  struct Group {
    std::set<cuda::FatbinCode> codes;  // canonical order: sm_75 < sm_120, SASS before PTX
    uint64_t entries = 0;
  };
  std::map<slim::LeftReason, Group> groups;
  for (const auto& row : lib.left) {
    auto& g = groups[row.reason];
    g.codes.insert(row.code);
    g.entries += row.entries;
  }
  auto list = [&](const Group& g, size_t shown) {
    std::vector<std::string> names;
    for (const auto& c : g.codes) names.push_back(c.name());
    if (names.size() > shown) {
      names.resize(shown);
      names.push_back("...");
    }
    return join(names, " ");
  };
  std::string out;
  if (auto it = groups.find(slim::LeftReason::runs); it != groups.end()) out = list(it->second, 12);
  const std::pair<slim::LeftReason, const char*> others[] = {
      {slim::LeftReason::whole, "kept whole"},
      {slim::LeftReason::link_time_ir, "LTO IR"},
      {slim::LeftReason::relocatable, "relocatable"}};
  for (const auto& [reason, label] : others) {
    auto it = groups.find(reason);
    if (it == groups.end()) continue;
    const auto& g = it->second;
    out += fmt::format("{}{}: {} ({} entr{} in {} target{})", out.empty() ? "" : "; ", label,
                       list(g, 4), with_thousands(g.entries), g.entries == 1 ? "y" : "ies",
                       g.codes.size(), g.codes.size() == 1 ? "" : "s");
  }
  if (lib.containers_emptied)
    out +=
        fmt::format("{}emptied: {} container{}", out.empty() ? "" : "; ",
                    with_thousands(lib.containers_emptied), lib.containers_emptied == 1 ? "" : "s");
  return out.empty() ? "-" : out;
}

// The summary lines that account for every target left in the input's files, one line per
// reason (and detail): "kept:        sm_86 1.2 KiB (runs on 8.6)", "LTO IR:      ...",
// "left:        sm_75 1.1 KiB, sm_80 1.1 KiB in __nv_relfatbin (relocatable device code, not
// slimmed)".
std::string left_lines(const std::vector<slim::TargetLeft>& left) {
  std::string out;
  for (size_t i = 0; i < left.size();) {
    size_t j = i;
    std::vector<std::string> targets;
    for (; j < left.size() && left[j].reason == left[i].reason && left[j].detail == left[i].detail;
         ++j)
      targets.push_back(fmt::format("{} {}", left[j].target, human_bytes(left[j].bytes)));
    const std::string list = join(targets, ", "), detail = terminal_safe(left[i].detail);
    switch (left[i].reason) {
      case slim::LeftReason::runs:
        out += fmt::format("  kept:        {} ({})\n", list, detail);
        break;
      case slim::LeftReason::whole:
        out += fmt::format("  left:        {} (container kept whole: {})\n", list, detail);
        break;
      case slim::LeftReason::link_time_ir:
        out += fmt::format("  LTO IR:      {} ({})\n", list, detail);
        break;
      case slim::LeftReason::relocatable:
        out += fmt::format(
            "  left:        {} in __nv_relfatbin (relocatable device code, not slimmed)\n", list);
        break;
    }
    i = j;
  }
  return out;
}

nlohmann::json left_json(const std::vector<slim::TargetLeft>& left) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& t : left)
    j.push_back({{"target", t.target},
                 {"reason", slim::left_reason_key(t.reason)},
                 {"detail", t.detail},
                 {"entries", t.entries},
                 {"bytes", t.bytes}});
  return j;
}

std::vector<slim::TargetLeft> left_of_input(const slim::InputSlim& in) {
  std::vector<slim::TargetLeft> left;
  for (const auto& f : in.files)
    for (const auto& row : f.lib.left) slim::add_left(left, row);
  return left;
}

// The note on one library's embedded fatbin containers (cuFFT's .data, cuBLASLt's
// .cask_resource): how many, where, and what compacting them in place did.
std::string embedded_note(const slim::SlimmedFile& f) {
  slim::EmbeddedSection all;
  std::vector<std::string> sections;
  for (const auto& e : f.lib.embedded) {
    all.containers += e.containers;
    all.containers_changed += e.containers_changed;
    all.containers_whole += e.containers_whole;
    all.device_before += e.device_before;
    all.device_after += e.device_after;
    sections.push_back(terminal_safe(e.section));
  }
  if (sections.size() > 4) {
    sections.resize(4);
    sections.push_back("...");
  }
  const std::string whole =
      all.containers_whole ? fmt::format("; {} kept whole", with_thousands(all.containers_whole))
                           : "";
  if (all.containers_changed == 0)
    return fmt::format("{}: {} fatbin container{} in {} ({}), none with an entry to remove{}",
                       terminal_safe(f.path), with_thousands(all.containers),
                       all.containers == 1 ? "" : "s", join(sections, ", "),
                       human_bytes(all.device_before), whole);
  return fmt::format(
      "{}: {} fatbin container{} in {}: {} compacted in place, keeping {} address{} ({} -> "
      "{} of "
      "entries; the freed bytes are zeroed, so the file keeps its size){}",
      terminal_safe(f.path), with_thousands(all.containers), all.containers == 1 ? "" : "s",
      join(sections, ", "), with_thousands(all.containers_changed),
      all.containers_changed == 1 ? "its" : "their", all.containers_changed == 1 ? "" : "es",
      human_bytes(all.device_before), human_bytes(all.device_after), whole);
}

// The notes one library adds below its input's table.
void add_library_notes(const slim::SlimmedFile& f, std::vector<std::string>& notes) {
  const auto& l = f.lib;
  if (!l.note.empty()) notes.push_back(terminal_safe(f.path) + ": " + terminal_safe(l.note));
  if (!l.embedded.empty()) notes.push_back(embedded_note(f));
  if (l.containers_ptx_only)
    notes.push_back(fmt::format(
        "{}: {} container{} run{} on a kept GPU only through PTX JIT: PTX kept (first launch "
        "compiles it)",
        terminal_safe(f.path), l.containers_ptx_only, l.containers_ptx_only == 1 ? "" : "s",
        l.containers_ptx_only == 1 ? "s" : ""));
  if (l.containers_whole) {
    std::string first;
    for (const auto& w : l.warnings)
      if (w.find("kept whole: ") != std::string::npos) {
        first = w;
        break;
      }
    notes.push_back(fmt::format("{}: {} container{} kept whole{}", terminal_safe(f.path),
                                l.containers_whole, l.containers_whole == 1 ? "" : "s",
                                first.empty() ? "" : ", e.g. " + terminal_safe(first)));
  }
}

// One input's table of libraries (or the line that says it has none), then the bytes
// removed per target; the libraries' notes are added to `notes`.
std::string library_table(const slim::InputSlim& in, std::vector<std::string>& notes) {
  std::string out;
  std::map<cuda::FatbinCode, uint64_t> removed_per_target;  // canonical order
  size_t name_width = 7;
  for (const auto& f : in.files)
    name_width = std::max(name_width, std::min<size_t>(f.path.size(), 60));
  if (!in.files.empty())
    out += fmt::format("  {:<{}}  {:>10}  {:>10}  {:>14}  {}\n", "library", name_width, "before",
                       "after", "device removed", "kept");
  for (const auto& f : in.files) {
    const auto& l = f.lib;
    for (const auto& t : l.targets) removed_per_target[t.code] += t.removed_bytes;
    std::string shown = terminal_safe(f.path);
    if (shown.size() > 60) shown = "..." + shown.substr(shown.size() - 57);
    out += fmt::format(
        "  {:<{}}  {:>10}  {:>10}  {:>14}  {}\n", shown, name_width, human_bytes(l.size_before),
        human_bytes(l.size_after), l.removed_bytes() ? human_bytes(l.removed_bytes()) : "-",
        l.outcome == slim::SlimOutcome::left_untouched ? "left untouched" : kept_targets(l));
    add_library_notes(f, notes);
  }
  if (in.files.empty())
    out += fmt::format("  no device code in {} ELF file{}\n", in.libraries_scanned,
                       in.libraries_scanned == 1 ? "" : "s");
  std::string removed;
  for (const auto& [t, bytes] : removed_per_target)
    if (bytes)
      removed += fmt::format("{}{} {}", removed.empty() ? "" : ", ", t.name(), human_bytes(bytes));
  if (!removed.empty()) out += "  removed:     " + removed + "\n";
  return out;
}

// One input's totals: containers emptied, its size before and after (apparent, then on
// disk), and the bytes zeroed inside sections.
std::string input_totals(const slim::SlimReport& report, const slim::InputSlim& in) {
  std::string out;
  uint64_t emptied = 0;
  for (const auto& f : in.files) emptied += f.lib.containers_emptied;
  if (emptied)
    out += fmt::format(
        "  emptied:     {} container{} had no code for {}: emptied to {} header; the CUDA "
        "runtime "
        "answers \"no kernel image\" for {} kernels, as it did before this slim{}\n",
        with_thousands(emptied), emptied == 1 ? "" : "s",
        report.devices.empty() ? std::string("the kept GPUs") : join(report.devices, ", "),
        emptied == 1 ? "its" : "their", emptied == 1 ? "its" : "their",
        in.slimmed_before ? " (an earlier tailor slim, which tailor-slim.json records, took that "
                            "code out of the original files)"
                          : "");
  // Apparent sizes, then disk usage (st_blocks): zeros left inside sections keep the
  // size but, punched out, not the blocks.
  const bool disk_known = !report.dry_run && in.disk_before;
  const std::string disk =
      disk_known       ? fmt::format("; on disk {} -> {} (-{})", human_bytes(in.disk_before),
                                     human_bytes(in.disk_after), percent(in.disk_before, in.disk_after))
      : in.disk_before ? fmt::format("; on disk {} now", human_bytes(in.disk_before))
                       : std::string();
  if (in.kind == slim::InputKind::wheel)
    out += fmt::format("  wheel {} -> {}{} (-{}){}; its libraries installed {} -> {} (-{})\n",
                       human_bytes(in.size_before), human_bytes(in.size_after),
                       report.dry_run ? " (estimated)" : "", percent(in.size_before, in.size_after),
                       disk, human_bytes(in.installed_before), human_bytes(in.installed_after),
                       percent(in.installed_before, in.installed_after));
  else
    out += fmt::format("  {} librar{}: {} -> {} (-{}){}\n", in.libraries_scanned,
                       in.libraries_scanned == 1 ? "y" : "ies", human_bytes(in.size_before),
                       human_bytes(in.size_after), percent(in.size_before, in.size_after), disk);
  if (in.zeroed_bytes) {
    std::string where =
        in.kind == slim::InputKind::wheel ? "they compress away in the wheel; a slim in place of "
                                            "the installed files punches them out"
        : report.dry_run                  ? "a slim that writes punches them out of the files"
        : in.punched_bytes                ? fmt::format("punched out of the files: {} less on disk",
                                                        human_bytes(in.punched_bytes))
                                          : "not punched out";
    out += fmt::format("  zeroed:      {} freed inside sections, {} of it in whole pages ({})\n",
                       human_bytes(in.zeroed_bytes), human_bytes(in.punchable_bytes), where);
  }
  return out;
}

// --device-files: per package, the device code files kept and removed, in all and per
// target; the package's facts (how it picks a file, its manifests) and why files stayed go
// to `notes`.
std::string device_file_lines(const slim::SlimReport& report, const slim::InputSlim& in,
                              std::vector<std::string>& notes) {
  if (!report.device_files) return "";
  if (in.device_packages.empty()) return "  device files: none\n";
  auto count = [](uint64_t files, uint64_t bytes) {
    return files ? fmt::format("{} ({})", with_thousands(files), human_bytes(bytes))
                 : std::string("-");
  };
  std::string out = fmt::format("  device files: {:<14}  {:>20}  {:>20}\n", "package / target",
                                report.dry_run ? "would keep" : "kept",
                                report.dry_run ? "would remove" : "removed");
  for (const auto& p : in.device_packages) {
    const std::string name = terminal_safe(p.package);
    out += fmt::format("    {:<24}  {:>20}  {:>20}\n", name, count(p.files_kept, p.bytes_kept),
                       count(p.files_removed, p.bytes_removed));
    for (const auto& t : p.targets)
      out +=
          fmt::format("      {:<22}  {:>20}  {:>20}\n", t.code.name(),
                      count(t.files_kept, t.bytes_kept), count(t.files_removed, t.bytes_removed));
    if (!p.kept_reasons.empty())
      notes.push_back(name + ": kept: " + terminal_safe(join(p.kept_reasons, "; ")));
    if (const auto* facts = slim::device_file_package_facts(p.package)) {
      notes.push_back(name + " picks a file: " + facts->picks);
      notes.push_back(name + ": " + facts->manifests);
    } else if (p.files_removed) {
      notes.push_back(name +
                      ": how it picks a file is not in tailor's data: only files no kept "
                      "GPU can load were removed");
    }
  }
  return out;
}

nlohmann::json device_files_json(const slim::InputSlim& in) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& p : in.device_packages) {
    nlohmann::json targets = nlohmann::json::array();
    for (const auto& t : p.targets)
      targets.push_back({{"target", t.code.name()},
                         {"files_kept", t.files_kept},
                         {"bytes_kept", t.bytes_kept},
                         {"files_removed", t.files_removed},
                         {"bytes_removed", t.bytes_removed}});
    const auto* facts = slim::device_file_package_facts(p.package);
    j.push_back(
        {{"package", p.package},
         {"files_kept", p.files_kept},
         {"bytes_kept", p.bytes_kept},
         {"files_removed", p.files_removed},
         {"bytes_removed", p.bytes_removed},
         {"targets", targets},
         {"removed", p.removed},
         {"kept_reasons", p.kept_reasons},
         {"picks", facts ? nlohmann::json(facts->picks) : nlohmann::json(nullptr)},
         {"manifests", facts ? nlohmann::json(facts->manifests) : nlohmann::json(nullptr)}});
  }
  return j;
}

std::string render_text(const slim::SlimReport& report) {
  std::string out = fmt::format("{} {}{}\n", paint("keep:", Paint::bold), report.policy,
                                report.dry_run ? "  (dry run: nothing written)" : "");
  for (const auto& in : report.inputs) {
    out += fmt::format(
        "\n{} ({}, {:.1f} s){}\n", paint(terminal_safe(in.input), Paint::bold),
        slim::input_kind_key(in.kind), in.seconds,
        in.output.empty() || in.output == in.input ? "" : " -> " + terminal_safe(in.output));
    std::vector<std::string> notes;
    out += library_table(in, notes);
    out += left_lines(left_of_input(in));
    out += device_file_lines(report, in, notes);
    out += input_totals(report, in);
    if (!in.punch_note.empty()) notes.push_back(terminal_safe(in.punch_note));
    size_t shown_notes = 0;
    for (const auto& n : notes) {
      if (++shown_notes > 12) {
        out += fmt::format("  note: ... and {} more (--json lists them all)\n", notes.size() - 12);
        break;
      }
      out += "  note: " + n + "\n";
    }
  }
  return out;
}

nlohmann::json render_json(const slim::SlimReport& report) {
  nlohmann::json j;
  j["schema"] = "tailor.slim/1";
  j["policy"] = report.policy;
  j["dry_run"] = report.dry_run;
  j["device_files"] = report.device_files;
  j["inputs"] = nlohmann::json::array();
  for (const auto& in : report.inputs) {
    nlohmann::json ji{{"input", in.input},
                      {"output", in.output},
                      {"kind", slim::input_kind_key(in.kind)},
                      {"seconds", in.seconds},
                      {"libraries_scanned", in.libraries_scanned},
                      {"bytes_before", in.size_before},
                      {"bytes_after", in.size_after},
                      {"installed_bytes_before", in.installed_before},
                      {"installed_bytes_after", in.installed_after},
                      {"zeroed_bytes", in.zeroed_bytes},
                      {"punchable_bytes", in.punchable_bytes},
                      {"punched_bytes", in.punched_bytes},
                      {"punch_note", in.punch_note}};
    // Disk usage (st_blocks * 512): null where not known (after a dry run).
    ji["disk_bytes_before"] =
        in.disk_before ? nlohmann::json(in.disk_before) : nlohmann::json(nullptr);
    ji["disk_bytes_after"] =
        !report.dry_run && in.disk_after ? nlohmann::json(in.disk_after) : nlohmann::json(nullptr);
    uint64_t emptied = 0;
    for (const auto& f : in.files) emptied += f.lib.containers_emptied;
    ji["containers_emptied"] = emptied;
    ji["files"] = nlohmann::json::array();
    for (const auto& f : in.files) {
      const auto& l = f.lib;
      nlohmann::json jf{{"path", f.path},
                        {"outcome", slim::outcome_key(l.outcome)},
                        {"note", l.note},
                        {"bytes_before", l.size_before},
                        {"bytes_after", l.size_after},
                        {"device_bytes_before", l.device_before},
                        {"device_bytes_after", l.device_after},
                        {"relocatable_device_bytes", l.relocatable_bytes},
                        {"containers", l.containers},
                        {"containers_kept_whole", l.containers_whole},
                        {"containers_emptied", l.containers_emptied},
                        {"containers_ptx_only", l.containers_ptx_only},
                        {"containers_pinned", l.containers_pinned},
                        {"packed", l.packed},
                        {"segment_split", l.split},
                        {"warnings", l.warnings},
                        {"left", left_json(l.left)},
                        {"zeroed_bytes", l.zeroed_bytes},
                        {"punchable_bytes", l.punchable_bytes},
                        {"punched_bytes", l.punched_bytes},
                        {"punch_note", l.punch_note}};
      jf["disk_bytes_before"] =
          l.disk_before ? nlohmann::json(l.disk_before) : nlohmann::json(nullptr);
      jf["disk_bytes_after"] =
          l.disk_after ? nlohmann::json(l.disk_after) : nlohmann::json(nullptr);
      jf["embedded"] = nlohmann::json::array();
      for (const auto& e : l.embedded)
        jf["embedded"].push_back({{"section", e.section},
                                  {"containers", e.containers},
                                  {"containers_changed", e.containers_changed},
                                  {"containers_kept_whole", e.containers_whole},
                                  {"containers_emptied", e.containers_emptied},
                                  {"device_bytes_before", e.device_before},
                                  {"device_bytes_after", e.device_after}});
      jf["targets"] = nlohmann::json::array();
      for (const auto& t : l.targets)
        jf["targets"].push_back({{"target", t.target},
                                 {"kept_entries", t.kept},
                                 {"removed_entries", t.removed},
                                 {"kept_bytes", t.kept_bytes},
                                 {"removed_bytes", t.removed_bytes}});
      ji["files"].push_back(std::move(jf));
    }
    ji["left"] = left_json(left_of_input(in));
    if (report.device_files) {
      ji["device_files_scanned"] = in.device_files_scanned;
      ji["device_files"] = device_files_json(in);
    }
    j["inputs"].push_back(std::move(ji));
  }
  return j;
}

// An input that had device code and keeps none: whatever it was for, it now runs no CUDA code
// on the kept GPUs (a GPU named by mistake, or a package with nothing for it). Still exit 0:
// the slim did what was asked.
std::vector<std::string> nothing_kept_warnings(const slim::SlimReport& report) {
  std::vector<std::string> out;
  for (const auto& in : report.inputs) {
    uint64_t had = 0, kept = 0, files_had = 0, files_kept = 0;
    for (const auto& f : in.files)
      for (const auto& t : f.lib.targets) {
        had += t.kept + t.removed;
        kept += t.kept;
      }
    for (const auto& p : in.device_packages) {
      files_had += p.files_kept + p.files_removed;
      files_kept += p.files_kept;
    }
    if ((had == 0 && files_had == 0) || kept > 0 || files_kept > 0) continue;
    out.push_back(fmt::format(
        "{}: nothing is left for {}: {} of {} fatbin entries and {} of {} device code files "
        "{}; it runs no CUDA code on {}",
        in.input, report.policy, had, had, files_had, files_had,
        report.dry_run ? "would go" : "went",
        report.devices.empty() ? "those GPUs" : join(report.devices, ", ")));
  }
  return out;
}

int run_slim(const SlimArgs& args) {
  // What to keep: the one resolution of --keep (as --arch) and --gpu; no default, the
  // GPUs of the machine that slims are rarely those of the machine that runs.
  cuda::TargetRequest request;
  request.arch = args.keep;
  request.gpu = args.gpu;
  request.arch_flag = "--keep";
  auto resolved = cuda::resolve_target_request(request);
  if (!resolved) return report_error(resolved.error().message);
  const cuda::TargetSet& targets = resolved->targets;
  if (args.keep_ptx && args.drop_ptx)
    return report_error("slim: --keep-ptx and --drop-ptx contradict each other");
  if (args.in_place && !args.out.empty())
    return report_error("slim: --in-place and --out contradict each other");
  if (!args.out.empty())
    if (auto c = check_out_dir(args.out); !c) return report_error(c.error().message);
  slim::SlimOptions o;
  o.policy = slim::keep_policy_for(targets, args.keep_ptx   ? slim::PtxPolicy::keep
                                            : args.drop_ptx ? slim::PtxPolicy::drop
                                                            : slim::PtxPolicy::needed);
  o.policy.lto = args.drop_lto ? slim::LtoPolicy::drop : slim::LtoPolicy::keep;
  o.out_dir = args.out;
  o.in_place = args.in_place;
  o.dry_run = args.dry_run;
  o.jobs = args.jobs;
  o.device_files = args.device_files;
  o.tool = "tailor " + std::string(tailor_version());
  o.on_wait = [](const std::string& m) { std::cerr << "tailor slim: " << m << "\n"; };
  install_interrupt_handlers();
  auto report = slim::slim_paths(args.paths, o);
  if (!report) {
    if (int sig = interrupt_signal()) {
      report_error(
          "slim: interrupted. Nothing half-written was left: a library or wheel being written was "
          "discarded; in an environment, the libraries finished before the signal stay slimmed and "
          "RECORD lists them as they are",
          interrupt_exit_code(sig));
      return interrupt_exit_code(sig);
    }
    return report_error(report.error().message);
  }
  if (args.json)
    std::cout << render_json(*report).dump(2) << "\n";
  else
    std::cout << render_text(*report);
  for (const auto& line : nothing_kept_warnings(*report))
    std::cerr << paint("tailor slim: warning:", Paint::yellow, 2) << " " << terminal_safe(line)
              << "\n";
  return k_exit_ok;
}

}  // namespace

void setup_slim(CLI::App& sub, RunFn& run) {
  auto args = std::make_shared<SlimArgs>();
  sub.add_option("paths", args->paths,
                 "Wheels (.whl), ELF libraries, virtual environments or site-packages folders")
      ->required();
  // One value per flag (repeat it for several): the paths after it stay paths.
  sub.add_option("--keep", args->keep,
                 "Targets to keep, any `tailor arch` spelling (sm_90, 8.6;9.0+PTX, H100, g5g ...); "
                 "repeat it for several")
      ->allow_extra_args(false);
  sub.add_option("--gpu", args->gpu,
                 "GPUs the result must run on (H100, T4G, 9.0 ...); repeat it for several")
      ->allow_extra_args(false);
  sub.add_option("--out", args->out, "Write slimmed wheels and libraries into this folder");
  sub.add_flag("--in-place", args->in_place, "Replace the inputs (required for environments)");
  sub.add_flag("--keep-ptx", args->keep_ptx,
               "Also keep the best PTX for each kept GPU (JIT on later GPUs)");
  sub.add_flag("--drop-ptx", args->drop_ptx,
               "Never keep PTX, even where it is the only code for a kept GPU");
  sub.add_flag("--drop-lto", args->drop_lto,
               "Also remove LTO IR (lto_XY entries, which the driver never loads). Kept by "
               "default: a library such as "
               "cuFFT links it at run time (JIT LTO kernels, LTO callbacks), so dropping it may "
               "break those");
  sub.add_flag("--device-files,!--no-device-files", args->device_files,
               "Device code files of their own (cubins, PTX, fatbin files: flashinfer-cubin's "
               "kernels) that no kept GPU can load go too, with their RECORD rows (the default; "
               "proven on an H200: every file removed is one the driver refuses, every file kept "
               "loads and runs); --no-device-files leaves them alone");
  sub.add_flag("--dry-run", args->dry_run,
               "Show what would go, per library and per target, and write nothing");
  sub.add_flag("--json", args->json, "Machine-readable output");
  sub.add_option("--jobs,-j", args->jobs, "Libraries processed at once (default: one per CPU)");
  sub.callback([&run, args] { run = [args] { return run_slim(*args); }; });
}

}  // namespace tailor::cli
