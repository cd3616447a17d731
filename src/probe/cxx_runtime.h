// Whether a C++ compiler links the C++ runtime as a shared library. torch's libraries use
// libstdc++.so.6; an extension that carries its own static copy (a relocated gcc whose
// `-lstdc++` finds only libstdc++.a) crashes on the first exception torch throws. Found
// on a GPU machine whose CXX did that: the wheel compiled for minutes and only verification
// refused it. This check costs one small link, before any compile.
#pragma once
#include <optional>
#include <string>

#include "util/process.h"

namespace tailor::probe {

struct CxxRuntime {
  std::string compiler;  ///< as asked (a path, or a name found on PATH)
  bool checked = false;  ///< the test library was linked and read
  bool dynamic = false;  ///< it needs libstdc++.so.6 (or libc++.so.1)
  std::string runtime;   ///< the runtime it needs ("libstdc++.so.6"); empty when none
  std::string detail;    ///< one line: what was found, or why it could not be checked
};

/// Links a one-function shared library that throws (`COMPILER -shared -fPIC`) in `scratch`
/// (a folder that exists) and reads its DT_NEEDED. The compiler may be a command line
/// ("ccache g++"): its words are the argv. Bounded: 60 s.
CxxRuntime check_cxx_runtime(const std::string& compiler, const std::string& scratch,
                             CommandRunner& runner);

/// A compiler pair that links the C++ runtime dynamically, for a build whose compiler (`rt`,
/// checked) links it statically: the system's own /usr/bin/g++ + gcc, else c++ + cc.
struct RuntimeAlternative {
  std::string cxx, cc;
  CxxRuntime runtime;  ///< the check of `cxx`
};
/// Empty when `rt` links dynamically, was not checked, or no system pair links dynamically.
std::optional<RuntimeAlternative> dynamic_runtime_alternative(const CxxRuntime& rt,
                                                              const std::string& scratch,
                                                              CommandRunner& runner);

/// The C++ compiler torch's cpp_extension links with: $CXX (`cxx_env`, may be a command
/// line), else c++ on PATH, else g++.
std::string extension_cxx(const char* cxx_env);

}  // namespace tailor::probe
