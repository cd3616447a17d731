#include "outputs/wheel_modules.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "formats/wheel.h"
#include "formats/zip.h"
#include "util/mapped_file.h"
#include "util/strings.h"

namespace tailor::outputs {
namespace {

/// The PEP 503 name without its separators: FooBar, foo_bar and Foo-Bar are one name.
std::string squashed(std::string_view name) {
  std::string out = formats::normalize_distribution_name(name);
  std::erase(out, '-');
  return out;
}

bool is_metadata_folder(std::string_view first) {
  return first.ends_with(".dist-info") || first.ends_with(".data");
}

/// "foo.cpython-311-x86_64-linux-gnu.so", "foo.abi3.so", "foo.so" -> "foo"; "foo.py" -> "foo".
std::string module_of_file(std::string_view file) {
  if (file.ends_with(".py")) return std::string(file.substr(0, file.size() - 3));
  if (file.ends_with(".so")) return std::string(file.substr(0, file.find('.')));
  return {};
}

}  // namespace

bool is_python_identifier(std::string_view name) {
  if (name.empty() || name.size() > 200 || std::isdigit(static_cast<unsigned char>(name[0])))
    return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

Expected<std::vector<std::string>> wheel_top_level_names(const std::string& wheel_path) {
  TAILOR_TRY(file, MappedFile::open(wheel_path));
  TAILOR_TRY(zip, formats::parse_zip(file.bytes()));
  std::set<std::string> packages, modules, namespaces;
  const formats::ZipEntry* top_level = nullptr;
  for (const auto& e : zip.entries) {
    if (e.is_directory()) continue;
    const std::string& name = e.name;
    size_t slash = name.find('/');
    if (slash == std::string::npos) {
      if (std::string m = module_of_file(name); is_python_identifier(m)) modules.insert(m);
      continue;
    }
    std::string_view first = std::string_view(name).substr(0, slash);
    std::string_view rest = std::string_view(name).substr(slash + 1);
    if (is_metadata_folder(first)) {
      if (rest == "top_level.txt" && first.ends_with(".dist-info")) top_level = &e;
      continue;
    }
    if (!is_python_identifier(first)) continue;
    if (rest == "__init__.py")
      packages.insert(std::string(first));
    else if (rest.ends_with(".py") || rest.ends_with(".so"))
      namespaces.insert(std::string(first));
  }
  std::set<std::string> names;
  if (top_level && top_level->uncompressed_size <= 64 * 1024) {
    std::vector<std::byte> buffer;
    if (auto text = formats::extract_member(file.bytes(), *top_level, buffer)) {
      std::string_view t(reinterpret_cast<const char*>(text->data()), text->size());
      for (auto line : split_any(t, "\n")) {
        std::string n(trim(line));
        // A dotted line names a subpackage; its top-level package is what imports.
        n = n.substr(0, n.find('.'));
        n = n.substr(0, n.find('/'));
        if (is_python_identifier(n)) names.insert(n);
      }
    }
  }
  if (names.empty()) {
    names.insert(packages.begin(), packages.end());
    names.insert(modules.begin(), modules.end());
  }
  if (names.empty()) names.insert(namespaces.begin(), namespaces.end());
  return std::vector<std::string>(names.begin(), names.end());
}

std::vector<std::string> import_names_to_check(const std::vector<std::string>& names,
                                               std::string_view distribution) {
  std::vector<std::string> same, rest;
  const std::string dist = squashed(distribution);
  static const std::set<std::string> k_not_the_package = {
      "test",      "tests",      "doc",     "docs",    "example", "examples",
      "benchmark", "benchmarks", "testing", "scripts", "tools",   "setup"};
  for (const auto& n : names) {
    if (squashed(n) == dist)
      same.push_back(n);
    else if (!n.starts_with("_") && !k_not_the_package.count(std::string(to_lower(n))))
      rest.push_back(n);
  }
  if (!same.empty()) return same;
  if (!rest.empty()) return rest;
  std::vector<std::string> out;
  for (const auto& n : names)
    if (!k_not_the_package.count(std::string(to_lower(n)))) out.push_back(n);
  return out;
}

}  // namespace tailor::outputs
