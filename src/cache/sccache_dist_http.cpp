// `tailor dist`'s requests to the scheduler: its status and token checks over util's bounded
// HTTP client (http, or https through OpenSSL), and the JSON they answer; the scheduler's URL
// is read by util's one URL parser (parse_http_url).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>

#include "cache/sccache_dist.h"
#include "util/http_client.h"
#include "util/strings.h"

namespace tailor::cache::dist {
using namespace std::chrono_literals;

namespace {

uint64_t json_u64(const nlohmann::json& obj, const char* key) {
  if (!obj.is_object() || !obj.contains(key)) return 0;
  const auto& v = obj[key];
  return v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0)
             ? v.get<uint64_t>()
             : 0;
}

std::string strip_slash(std::string s) {
  while (!s.empty() && s.back() == '/') s.pop_back();
  return s;
}

}  // namespace

Expected<SchedulerStatus> parse_scheduler_status_json(std::string_view text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("num_servers"))
    return make_error("the scheduler's status is not the JSON status object");
  return SchedulerStatus{json_u64(j, "num_servers"), json_u64(j, "num_cpus"),
                         json_u64(j, "in_progress")};
}

Expected<SchedulerStatus> parse_sccache_dist_status(std::string_view text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || j.empty())
    return make_error("sccache --dist-status: not JSON");
  if (j.contains("SchedulerStatus") && j["SchedulerStatus"].is_array() &&
      j["SchedulerStatus"].size() == 2)
    return parse_scheduler_status_json(j["SchedulerStatus"][1].dump());
  auto [kind, value] = *j.items().begin();
  std::string why = value.is_array() && !value.empty() ? value.back().dump() : value.dump();
  if (why.size() >= 2 && why.front() == '"') why = why.substr(1, why.size() - 2);
  return make_error(fmt::format("sccache --dist-status: {}: {}", kind, why));
}

Expected<HttpReply> http_request(const std::string& base_url, const std::string& method,
                                 const std::string& path, const std::vector<std::string>& headers,
                                 std::chrono::milliseconds timeout) {
  HttpRequest r;
  r.method = method;
  r.url = strip_slash(base_url) + path;
  r.timeout = timeout;
  r.max_body = 64 * 1024;
  for (const auto& h : headers) {
    auto colon = h.find(':');
    std::string value = colon == std::string::npos ? "" : h.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.erase(0, 1);
    r.headers.emplace_back(h.substr(0, colon), value);
  }
  TAILOR_TRY(reply, http_send(r));
  return HttpReply{reply.status, std::move(reply.body)};
}

Expected<SchedulerStatus> scheduler_status(const std::string& scheduler_url) {
  TAILOR_TRY(reply, http_request(scheduler_url, "GET", "/api/v1/scheduler/status",
                                 {"Accept: application/json"}, 5s));
  if (reply.status != 200)
    return make_error(
        fmt::format("{}: status request answered HTTP {}", scheduler_url, reply.status));
  return parse_scheduler_status_json(reply.body);
}

Expected<bool> scheduler_accepts_token(const std::string& scheduler_url, const std::string& token) {
  TAILOR_TRY(reply, http_request(scheduler_url, "POST", "/api/v1/scheduler/alloc_job",
                                 {"Authorization: Bearer " + token}, 5s));
  if (reply.status == 401) return false;
  if (reply.status == 400) return true;
  return make_error(fmt::format("{}: an empty job request answered HTTP {} (expected 400 or 401)",
                                scheduler_url, reply.status));
}

}  // namespace tailor::cache::dist
