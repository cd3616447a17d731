#include "probe/cxx_runtime.h"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "formats/elf.h"
#include "util/mapped_file.h"
#include "util/strings.h"

namespace tailor::probe {

namespace fs = std::filesystem;

std::optional<RuntimeAlternative> dynamic_runtime_alternative(const CxxRuntime& rt,
                                                              const std::string& scratch,
                                                              CommandRunner& runner) {
  if (!rt.checked || rt.dynamic) return std::nullopt;
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const auto& [cxx, cc] : {std::pair<std::string, std::string>{"/usr/bin/g++", "/usr/bin/gcc"},
                                {"/usr/bin/c++", "/usr/bin/cc"}}) {
    if (!fs::exists(cxx, ec) || !fs::exists(cc, ec)) continue;
    if (fs::equivalent(cxx, rt.compiler, ec)) continue;
    CxxRuntime other = check_cxx_runtime(cxx, scratch, runner);
    if (other.checked && other.dynamic) return RuntimeAlternative{cxx, cc, std::move(other)};
  }
  return std::nullopt;
}

std::string extension_cxx(const char* cxx_env) {
  if (cxx_env && !trim(cxx_env).empty()) return std::string(trim(cxx_env));
  if (!find_in_path("c++").empty()) return "c++";
  return "g++";
}

CxxRuntime check_cxx_runtime(const std::string& compiler, const std::string& scratch,
                             CommandRunner& runner) {
  CxxRuntime r;
  r.compiler = compiler;
  std::vector<std::string> argv = split_any(compiler, " \t");
  if (argv.empty()) {
    r.detail = "no C++ compiler given";
    return r;
  }
  const fs::path dir = fs::path(scratch) / fmt::format("tailor-cxx-runtime-{}", ::getpid());
  std::error_code ec;
  fs::create_directories(dir, ec);
  const fs::path src = dir / "throws.cpp", lib = dir / "libthrows.so";
  {
    std::ofstream out(src);
    out << "#include <stdexcept>\n#include <string>\n"
           "extern \"C\" int tailor_throws(int n) {\n"
           "  try { if (n > 0) throw std::runtime_error(std::to_string(n)); } catch (const "
           "std::exception& e) { return 1; }\n"
           "  return 0;\n}\n";
    if (!out) {
      r.detail = fmt::format("could not write {}", src.string());
      fs::remove_all(dir, ec);
      return r;
    }
  }
  CommandSpec spec;
  spec.argv = argv;
  for (const std::string& a :
       std::vector<std::string>{"-shared", "-fPIC", "-O0", src.string(), "-o", lib.string()})
    spec.argv.push_back(a);
  spec.timeout = std::chrono::seconds(60);
  CommandResult cr = runner.run(spec);
  if (!cr.ok()) {
    std::string why = std::string(trim(cr.err.empty() ? cr.out : cr.err));
    if (auto nl = why.find('\n'); nl != std::string::npos) why = why.substr(0, nl);
    r.detail = !cr.started    ? fmt::format("{} could not be run", argv[0])
               : cr.timed_out ? fmt::format("{} took over 60 s to link a test library", compiler)
                              : fmt::format("{} could not link a test library: {}", compiler, why);
    fs::remove_all(dir, ec);
    return r;
  }
  auto mapped = MappedFile::open(lib.string());
  auto elf = mapped ? formats::parse_elf(mapped->bytes())
                    : Expected<formats::ElfFile>(make_error(mapped.error().message));
  if (!elf) {
    r.detail =
        fmt::format("the test library of {} could not be read: {}", compiler, elf.error().message);
    fs::remove_all(dir, ec);
    return r;
  }
  r.checked = true;
  for (const auto& n : elf->needed)
    if (n == "libstdc++.so.6" || n == "libc++.so.1") r.runtime = n;
  r.dynamic = !r.runtime.empty();
  r.detail =
      r.dynamic
          ? fmt::format("{} links {} as a shared library", compiler, r.runtime)
          : fmt::format(
                "{} links the C++ runtime statically (its test library needs no libstdc++.so.6)",
                compiler);
  fs::remove_all(dir, ec);
  return r;
}

}  // namespace tailor::probe
