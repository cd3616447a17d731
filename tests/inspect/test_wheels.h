// Wheels made in the test by Python's zipfile from the build-time fixture libraries
// (tests/fixtures/README.md), shared by the inspect tests.
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/fixtures.h"
#include "util/process.h"

namespace fs = std::filesystem;

/// One counter for every test file of the binary, so wheels never share a folder.
inline int next_wheel_number() {
  static int counter = 0;
  return ++counter;
}

namespace {

const fs::path k_fixtures = fs::path(TAILOR_BINARY_DIR) / "fixtures";

inline fs::path temp_dir() {
  static fs::path dir = [] {
    auto d = fs::temp_directory_path() / ("tailor_wheel_test_" + std::to_string(::getpid()));
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

// Writes a wheel named from `tag`: files maps archive names to fixture .so files (or, when
// the value starts with "text:", to literal content). `tamper` names RECORD damage.
const char* k_make_wheel = R"(
import sys, json, zipfile, hashlib, base64
out, spec = sys.argv[1], json.loads(sys.argv[2])
name, version, tag = spec['name'], spec['version'], spec['tag']
di = f"{name}-{version}.dist-info"
files = {}
for arc, src in spec['files'].items():
    files[arc] = src[5:].encode() if src.startswith('text:') else open(src, 'rb').read()
files[f"{di}/WHEEL"] = f"Wheel-Version: 1.0\nGenerator: tailor-test\nRoot-Is-Purelib: false\nTag: {spec.get('wheel_tag', tag)}\n".encode()
files[f"{di}/METADATA"] = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode()
rows = []
for arc, data in files.items():
    h = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).decode().rstrip('=')
    rows.append([arc, 'sha256=' + h, str(len(data))])
t = spec.get('tamper', [])
if 'hash' in t: rows[0][1] = 'sha256=' + 'A' * 43
if 'size' in t: rows[1][2] = str(int(rows[1][2]) + 1)
if 'missing' in t: rows.append([f'{name}/ghost.py', 'sha256=AAAA', '3'])
if 'unlisted' in t: files[f'{name}/extra.txt'] = b'not in RECORD'
rows.append([f"{di}/RECORD", '', ''])
files[f"{di}/RECORD"] = ''.join(','.join(r) + '\n' for r in rows).encode()
with zipfile.ZipFile(out, 'w', zipfile.ZIP_DEFLATED) as z:
    for arc, data in files.items():
        stored = arc in spec.get('stored', [])
        z.writestr(arc, data, compress_type=zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED)
)";

inline std::string json_string(const std::string& s) { return nlohmann::json(s).dump(); }

inline std::string make_wheel(const std::string& version, const std::string& tag,
                              const std::vector<std::pair<std::string, std::string>>& files,
                              const std::vector<std::string>& tamper = {},
                              const std::string& wheel_tag = "", const std::string& name = "demo",
                              const std::vector<std::string>& stored = {}) {
  nlohmann::json spec;
  spec["stored"] = stored;
  spec["name"] = name;
  spec["version"] = version;
  spec["tag"] = tag;
  if (!wheel_tag.empty()) spec["wheel_tag"] = wheel_tag;
  spec["tamper"] = tamper;
  nlohmann::json f = nlohmann::json::object();
  for (auto& [arc, src] : files) f[arc] = src;
  spec["files"] = f;
  fs::path dir = temp_dir() / std::to_string(next_wheel_number());
  fs::create_directories(dir);
  fs::path out = dir / (name + "-" + version + "-" + tag + ".whl");
  fs::path py = temp_dir() / "make_wheel.py";
  std::ofstream(py) << k_make_wheel;
  auto r = tailor::run_command({"python3", py.string(), out.string(), spec.dump()},
                               std::chrono::seconds(60));
  EXPECT_TRUE(r.ok()) << r.err;
  return out.string();
}

inline bool have_fixtures(std::initializer_list<const char*> names) {
  for (auto n : names)
    if (!fs::exists(k_fixtures / n)) return false;
  return true;
}

#define REQUIRE_FIXTURES(...)                            \
  if (!have_fixtures({__VA_ARGS__}))                     \
  GTEST_SKIP() << "fixtures not built in " << k_fixtures \
               << " (needs nvcc and the tailor_fixtures target)"

inline std::string fixture(const char* name) { return (k_fixtures / name).string(); }

}  // namespace
