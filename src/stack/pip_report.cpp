// The facts of data/stack/stack.toml, the target's pip tags and marker environment, and
// pip's report and error text.
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <regex>

#include "cuda/cuda_version.h"
#include "cuda/torch_wheels.h"
#include "data/data_files.h"
#include "data/toml_document.h"
#include "formats/wheel.h"
#include "inspect/manylinux_policy.h"
#include "stack/stack.h"
#include "util/strings.h"
#include "util/version.h"

namespace tailor::stack {

namespace {
constexpr std::string_view k_file = "stack/stack.toml";

StackFacts load_facts() {
  auto doc = data::toml_document(k_file);
  StackFacts f;
  f.default_target_glibc = doc["default_target_glibc"].string();
  f.cuda_runtime_prefixes = doc["cuda_runtime_prefixes"].strings();
  f.cuda_runtime_exceptions = doc["cuda_runtime_exceptions"].strings_or_empty();
  f.torch_cxx11_abi_since = doc["torch_cxx11_abi_since"].string();
  for (const auto& n : doc["build_need"].array())
    f.build_needs.push_back({n["requirement"].string(), n["tool"].string(), n["what"].string()});
  return f;
}
}  // namespace

const StackFacts& facts() {
  static const StackFacts f = load_facts();
  return f;
}

std::string pytorch_index_url(const std::optional<cuda::CudaVersion>& cuda) {
  return cuda::pytorch_index_url(cuda);
}

Expected<std::optional<cuda::CudaVersion>> parse_cuda_flag(std::string_view text) {
  if (text.empty()) return std::optional<cuda::CudaVersion>();
  auto v = cuda::parse_cuda_version(text);
  if (!v)
    return make_error(fmt::format("--cuda {}: expected MAJOR.MINOR, e.g. 13.0", std::string(text)));
  return std::optional<cuda::CudaVersion>(*v);
}

bool is_cuda_runtime_package(std::string_view name) {
  const auto& f = facts();
  for (const auto& e : f.cuda_runtime_exceptions)
    if (name == e) return false;
  for (const auto& p : f.cuda_runtime_prefixes)
    if (name.starts_with(p)) return true;
  return false;
}

std::string cuda_runtime_major(std::string_view name, std::string_view version) {
  static const std::regex suffix(R"(-cu(\d{2})$)");
  std::cmatch m;
  if (std::regex_search(name.begin(), name.end(), m, suffix)) return m[1].str();
  auto major = version_major(version);
  if (major && *major >= 13 && *major < 100) return std::to_string(*major);
  return "";
}

std::string python_helper(std::string_view file) {
  auto text = data::file("stack/" + std::string(file));
  if (!text) throw data::DataError("data/stack/" + std::string(file) + ": missing");
  return std::string(*text);
}

std::string Target::gpu_label() const {
  std::vector<std::string> ccs;
  for (const auto& cc : gpus) ccs.push_back(cc.str());
  std::string joined = join(ccs, ", ");
  if (gpu_text.empty() || gpu_text == joined) return joined;
  return fmt::format("{} ({})", gpu_text, joined);
}

std::vector<std::string> pip_platform_tags(const Target& target) {
  std::vector<std::string> tags;
  int glibc_minor = 0;
  if (auto v = parse_version(target.glibc); v && v->major() == 2) glibc_minor = v->minor();
  const auto& policies = inspect::ManylinuxPolicies::get().for_arch(target.platform);
  int lowest = 17;
  for (const auto& p : policies)
    if (p.glibc_major == 2) lowest = std::min(lowest, p.glibc_minor);
  // Newest first, as pip orders a machine's own tags.
  for (int minor = glibc_minor; minor >= lowest; --minor)
    tags.push_back(fmt::format("manylinux_2_{}_{}", minor, target.platform));
  for (const auto& p : policies)
    if (p.glibc_major == 2 && p.glibc_minor <= glibc_minor)
      for (const auto& alias : p.aliases)
        tags.push_back(fmt::format("{}_{}", alias, target.platform));
  tags.push_back("linux_" + target.platform);
  return tags;
}

std::vector<std::string> IndexOptions::args() const {
  std::vector<std::string> out;
  if (no_index) out.push_back("--no-index");
  if (!index_url.empty()) out.insert(out.end(), {"--index-url", index_url});
  for (const auto& u : extra_index_urls) out.insert(out.end(), {"--extra-index-url", u});
  for (const auto& f : find_links) out.insert(out.end(), {"--find-links", f});
  return out;
}

std::string_view kind_key(Kind kind) {
  switch (kind) {
    case Kind::pure:
      return "pure";
    case Kind::native:
      return "native";
    case Kind::cuda:
      return "cuda";
    case Kind::cuda_runtime:
      return "cuda-runtime";
    case Kind::torch:
      return "torch";
    case Kind::source:
      return "sdist";
  }
  return "pure";
}

std::string_view outcome_key(Outcome outcome) {
  switch (outcome) {
    case Outcome::prebuilt:
      return "prebuilt";
    case Outcome::build:
      return "build";
    case Outcome::unsupported:
      return "unsupported";
    case Outcome::installed:
      return "installed";
    case Outcome::unknown:
      return "unknown";
  }
  return "prebuilt";
}

bool StackResult::ok() const {
  return std::none_of(rows.begin(), rows.end(), [](const Row& r) {
    return r.outcome == Outcome::unsupported || r.outcome == Outcome::unknown;
  });
}

namespace {
int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/// The last path part of a URL, percent-decoded ("torch-2.11.0%2Bcu130-...whl" ->
/// "torch-2.11.0+cu130-...whl"); a '/' or NUL that decoding would produce is kept encoded.
std::string file_name_of_url(const std::string& url) {
  std::string path = url.substr(0, url.find_first_of("#?"));
  auto slash = path.rfind('/');
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  std::string out;
  for (size_t i = 0; i < name.size(); ++i) {
    if (name[i] == '%' && i + 2 < name.size()) {
      int hi = hex_value(name[i + 1]), lo = hex_value(name[i + 2]);
      char c = static_cast<char>(hi * 16 + lo);
      if (hi >= 0 && lo >= 0 && c != '/' && c != '\0') {
        out += c;
        i += 2;
        continue;
      }
    }
    out += name[i];
  }
  return out;
}
}  // namespace

Expected<std::vector<ResolvedDist>> parse_pip_report(std::string_view text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return make_error("pip's report is not JSON");
  if (j.value("version", std::string()) != "1")
    return make_error("pip's report has version " + j.value("version", std::string("?")) +
                      ", expected 1");
  if (!j.contains("install") || !j["install"].is_array())
    return make_error("pip's report has no install list");
  std::vector<ResolvedDist> out;
  for (const auto& item : j["install"]) {
    if (!item.is_object() || !item.contains("metadata") || !item.contains("download_info"))
      return make_error("pip's report: an install item without metadata or download_info");
    const auto& md = item["metadata"];
    const auto& di = item["download_info"];
    ResolvedDist d;
    d.name = md.value("name", std::string());
    d.version = md.value("version", std::string());
    if (d.name.empty() || d.version.empty())
      return make_error("pip's report: an item without name or version");
    d.key = formats::normalize_distribution_name(d.name);
    d.url = di.value("url", std::string());
    if (di.contains("archive_info") && di["archive_info"].is_object()) {
      const auto& ai = di["archive_info"];
      if (ai.contains("hashes") && ai["hashes"].is_object() && ai["hashes"].contains("sha256"))
        d.sha256 = ai["hashes"]["sha256"].get<std::string>();
      else if (ai.contains("hash") && ai["hash"].is_string()) {
        std::string h = ai["hash"].get<std::string>();
        if (h.starts_with("sha256=")) d.sha256 = h.substr(7);
      }
    }
    d.filename = file_name_of_url(d.url);
    if (d.filename.empty() || d.filename == "." || d.filename == ".." || d.filename.size() > 255 ||
        d.filename.find('\0') != std::string::npos)
      return make_error(
          fmt::format("pip's report: {} {}: the URL names no usable file", d.name, d.version));
    d.wheel = d.filename.ends_with(".whl");
    d.requested = item.value("requested", false);
    if (md.contains("requires_dist") && md["requires_dist"].is_array())
      for (const auto& r : md["requires_dist"])
        if (r.is_string()) d.requires_dist.push_back(r.get<std::string>());
    out.push_back(std::move(d));
  }
  return out;
}

std::string unsatisfied_requirement(std::string_view err) {
  static const std::regex re(R"(No matching distribution found for ([A-Za-z0-9][A-Za-z0-9._-]*))");
  std::cmatch m;
  if (!std::regex_search(err.begin(), err.end(), m, re)) return "";
  return formats::normalize_distribution_name(m[1].str());
}

std::string pip_error_line(std::string_view err) {
  std::string first;
  for (const auto& line : split_any(err, "\n")) {
    auto t = trim(line);
    if (t.starts_with("ERROR: No matching distribution")) return std::string(t);
    if (first.empty() && t.starts_with("ERROR:")) first = std::string(t);
  }
  if (!first.empty()) return first;
  for (const auto& line : split_any(err, "\n"))
    if (!trim(line).empty()) return std::string(trim(line));
  return "pip failed with no message";
}

}  // namespace tailor::stack
