// Times analyze_library over mapped files and prints the target lists in the same shape
// as `cuobjdump --list-elf/--list-ptx` counts, for bench/inspect_vs_cuobjdump.sh:
//   inspect_library_bench [--verify] [--repeat N] LIB...
// Output per library: "LIB <path> ms=<t> targets=<n>" then "TARGET <name> <entries>
// <stored> <uncompressed> <compression,...>" lines, or "ERROR <message>".
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "inspect/library_report.h"

int main(int argc, char** argv) {
  tailor::inspect::LibraryOptions options;
  int repeat = 1;
  std::vector<std::string> paths;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--verify")
      options.verify_payloads = true;
    else if (a == "--repeat" && i + 1 < argc)
      repeat = std::max(1, std::atoi(argv[++i]));
    else
      paths.push_back(a);
  }
  int rc = 0;
  for (const std::string& path : paths) {
    double best_ms = 1e300;
    tailor::Expected<tailor::inspect::LibraryReport> report = tailor::Error{};
    for (int r = 0; r < repeat; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      report = tailor::inspect::analyze_library_file(path, options);
      std::chrono::duration<double, std::milli> dt = std::chrono::steady_clock::now() - t0;
      best_ms = std::min(best_ms, dt.count());
    }
    if (!report) {
      std::printf("ERROR %s\n", report.error().message.c_str());
      rc = 2;
      continue;
    }
    std::printf("LIB %s ms=%.3f targets=%zu cxx11=%s isa=%s\n", path.c_str(), best_ms,
                report->targets.size(),
                report->cxx11_abi ? (*report->cxx11_abi ? "yes" : "no") : "unknown",
                report->x86_isa_level.value_or("-").c_str());
    for (const auto& t : report->targets) {
      std::string comp;
      for (const auto& c : t.compression) comp += (comp.empty() ? "" : ",") + c;
      std::printf("TARGET %s %llu %llu %llu %s\n", t.name.c_str(),
                  static_cast<unsigned long long>(t.entries),
                  static_cast<unsigned long long>(t.stored_bytes),
                  static_cast<unsigned long long>(t.uncompressed_bytes), comp.c_str());
    }
  }
  return rc;
}
