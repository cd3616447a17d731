// The JSON rendering of a HostReport (`tailor detect --json`); keys are stable for scripts.
#include "probe/probe.h"

namespace tailor::probe {

nlohmann::json to_json(const HostReport& r) {
  using nlohmann::json;
  json j;
  j["os"] = {
      {"name", r.os.name}, {"kernel", r.os.kernel}, {"arch", r.os.arch}, {"glibc", r.os.glibc}};
  j["cpu"] = {{"model", r.cpu.model},
              {"arch", r.cpu.arch},
              {"logical_cores", r.cpu.logical_cores},
              {"physical_cores", r.cpu.physical_cores},
              {"usable_cores", r.cpu.build_cores()},
              {"cores_limited_by", r.cpu.cores_limited_by},
              {"isa_level", r.cpu.isa_level},
              {"features", r.cpu.features},
              {"features_source", r.cpu.features_source}};
  if (r.cpu.arch == "aarch64")
    j["cpu"]["arm"] = {{"midr", r.cpu.midr},
                       {"cores", r.cpu.cores},
                       {"neoverse_class", r.cpu.neoverse_class},
                       {"seen_in", r.cpu.seen_in}};
  j["memory"] = {{"total", r.memory.total},
                 {"available", r.memory.available},
                 {"cgroup_limit", r.memory.cgroup_limit},
                 {"cgroup_usage", r.memory.cgroup_usage},
                 {"usable", r.memory.usable},
                 {"limited_by", r.memory.limited_by},
                 {"swap_total", r.memory.swap_total},
                 {"swap_free", r.memory.swap_free}};
  j["disk"] = {{"path", r.disk.path},
               {"free_bytes", r.disk.free_bytes},
               {"total_bytes", r.disk.total_bytes}};
  j["gpus"] = json::array();
  for (const auto& g : r.gpus)
    j["gpus"].push_back(
        {{"index", g.index},
         {"name", g.name},
         {"compute_capability", g.compute_capability ? g.compute_capability->str() : ""},
         {"memory_bytes", g.memory_bytes},
         {"uuid", g.uuid}});
  j["driver"] = r.driver ? json{{"version", r.driver->version},
                                {"cuda_version",
                                 r.driver->cuda_version ? r.driver->cuda_version->to_string() : ""},
                                {"source", r.driver->source}}
                         : json(nullptr);
  j["cuda_toolkits"] = json::array();
  for (const auto& t : r.cuda_toolkits) {
    json tj = {{"root", t.root},
               {"nvcc", t.nvcc},
               {"version", t.version},
               {"major", t.release.major},
               {"minor", t.release.minor},
               {"cudnn_version", t.cudnn_version},
               {"nccl_version", t.nccl_version},
               {"max_gcc_major", t.max_gcc_major ? json(*t.max_gcc_major) : json(nullptr)},
               {"max_clang_major", t.max_clang_major ? json(*t.max_clang_major) : json(nullptr)},
               {"accepted_host_compilers", t.accepted_host_compilers}};
    j["cuda_toolkits"].push_back(std::move(tj));
  }
  j["compilers"] = json::array();
  for (const auto& c : r.compilers)
    j["compilers"].push_back({{"path", c.path},
                              {"kind", compiler_kind_name(c.kind)},
                              {"version", c.version},
                              {"major", c.major}});
  j["pythons"] = json::array();
  for (const auto& p : r.pythons) {
    json pj = {{"path", p.path}, {"version", p.version}, {"torch", nullptr}};
    if (p.torch)
      pj["torch"] = {
          {"version", p.torch->version},
          {"cuda_version",
           p.torch->cuda_version ? json(p.torch->cuda_version->to_string()) : json(nullptr)},
          {"arch_list", p.torch->arch_list},
          {"cxx11_abi", p.torch->cxx11_abi ? json(*p.torch->cxx11_abi) : json(nullptr)},
          {"path", p.torch->path}};
    if (!p.torch_error.empty()) pj["torch_error"] = p.torch_error;
    j["pythons"].push_back(std::move(pj));
  }
  j["tools"] = json::array();
  for (const auto& t : r.tools)
    j["tools"].push_back({{"name", t.name},
                          {"path", t.path},
                          {"version", t.version},
                          {"jobserver_client", t.jobserver_client}});
  j["notes"] = r.notes;
  return j;
}

}  // namespace tailor::probe
