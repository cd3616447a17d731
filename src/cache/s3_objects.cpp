#include "cache/s3_objects.h"

#include <fmt/format.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <ctime>

#include "util/sha256.h"
#include "util/strings.h"

namespace tailor::cache {

namespace {

std::string hmac(const std::string& key, const std::string& text) {
  unsigned char out[32];
  unsigned int len = sizeof out;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(text.data()), text.size(), out, &len);
  return std::string(reinterpret_cast<const char*>(out), len);
}

std::string trim(std::string s) {
  while (!s.empty() && s.back() == ' ') s.pop_back();
  while (!s.empty() && s.front() == ' ') s.erase(0, 1);
  return s;
}

std::string amz_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

// The text between <tag> and </tag> in an S3 error reply, at most 200 characters.
std::string xml_field(const std::string& body, const std::string& tag) {
  auto a = body.find("<" + tag + ">");
  if (a == std::string::npos) return {};
  a += tag.size() + 2;
  auto b = body.find("</" + tag + ">", a);
  if (b == std::string::npos) return {};
  std::string v = body.substr(a, std::min<size_t>(b - a, 200));
  for (char& c : v)
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  return v;
}

}  // namespace

Expected<std::optional<S3Credentials>> s3_credentials(
    const std::map<std::string, std::string>& env) {
  auto get = [&](const char* name) {
    auto it = env.find(name);
    return it == env.end() ? std::string() : it->second;
  };
  S3Credentials c{get("AWS_ACCESS_KEY_ID"), get("AWS_SECRET_ACCESS_KEY"), get("AWS_SESSION_TOKEN")};
  if (c.key_id.empty() && c.secret.empty()) return std::optional<S3Credentials>();
  if (c.key_id.empty() || c.secret.empty())
    return make_error(
        "S3 credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are set together or not at "
        "all");
  return std::optional<S3Credentials>(std::move(c));
}

void sign_s3_request(HttpRequest& r, const HttpUrl& url, const std::string& region,
                     const S3Credentials& creds, const std::string& payload_sha256,
                     const std::string& amz_date) {
  r.headers.emplace_back("x-amz-date", amz_date);
  r.headers.emplace_back("x-amz-content-sha256", payload_sha256);
  if (!creds.session_token.empty())
    r.headers.emplace_back("x-amz-security-token", creds.session_token);
  bool default_port =
      (url.scheme == "http" && url.port == "80") || (url.scheme == "https" && url.port == "443");
  std::map<std::string, std::string> canon = {
      {"host", url.host + (default_port ? "" : ":" + url.port)}};
  for (const auto& [name, value] : r.headers) canon[to_lower(name)] = trim(value);
  std::string headers, signed_names;
  for (const auto& [name, value] : canon) {
    headers += name + ":" + value + "\n";
    signed_names += (signed_names.empty() ? "" : ";") + name;
  }
  // The target is already encoded (S3 signs the path as sent); the query's pairs sorted.
  std::string path = url.target.substr(0, url.target.find('?'));
  std::string query;
  if (auto q = url.target.find('?'); q != std::string::npos) {
    auto pairs = split_any(url.target.substr(q + 1), "&");
    for (auto& p : pairs)
      if (p.find('=') == std::string::npos) p += "=";
    std::sort(pairs.begin(), pairs.end());
    query = join(pairs, "&");
  }
  const std::string canonical = fmt::format("{}\n{}\n{}\n{}\n{}\n{}", r.method, path, query,
                                            headers, signed_names, payload_sha256);
  const std::string day = amz_date.substr(0, 8);
  const std::string scope = day + "/" + region + "/s3/aws4_request";
  const std::string to_sign =
      fmt::format("AWS4-HMAC-SHA256\n{}\n{}\n{}", amz_date, scope, Sha256::hex_of(canonical));
  std::string key = hmac("AWS4" + creds.secret, day);
  key = hmac(key, region);
  key = hmac(key, "s3");
  key = hmac(key, "aws4_request");
  r.headers.emplace_back(
      "Authorization",
      fmt::format("AWS4-HMAC-SHA256 Credential={}/{}, SignedHeaders={}, Signature={}", creds.key_id,
                  scope, signed_names, hex_bytes(hmac(key, to_sign))));
}

Expected<S3Bucket> S3Bucket::open(const S3Location& at,
                                  const std::map<std::string, std::string>& env) {
  S3Bucket b;
  b.m_bucket = at.bucket;
  b.m_prefix = at.prefix;
  b.m_endpoint = at.endpoint;
  const S3Facts& facts = s3_facts();
  if (!at.endpoint.empty()) {
    std::string e = at.endpoint;
    while (!e.empty() && e.back() == '/') e.pop_back();
    b.m_base = e + "/" + at.bucket;  // path style: what S3-compatible servers all take
    b.m_region = at.region.empty() ? facts.endpoint_region : at.region;
  } else {
    std::string host = at.region.empty() ? facts.aws_host : facts.aws_region_host;
    if (auto r = host.find("{region}"); r != std::string::npos) host.replace(r, 8, at.region);
    b.m_base = "https://" + at.bucket + "." + host;
    b.m_virtual_host = true;
    b.m_region = at.region.empty() ? facts.aws_default_region : at.region;
  }
  TAILOR_TRY(creds, s3_credentials(env));
  b.m_credentials = std::move(creds);
  // The base is checked once here, so no request fails on it later.
  if (auto url = parse_http_url(b.m_base); !url) return make_error(url.error().message);
  return b;
}

std::string S3Bucket::describe() const {
  std::string out = "s3://" + m_bucket + (m_prefix.empty() ? "" : "/" + m_prefix);
  if (!m_endpoint.empty()) out += " (endpoint " + m_endpoint + ")";
  return out;
}

std::string S3Bucket::url_of(const std::string& rel) const {
  std::string key = m_prefix.empty() ? rel : m_prefix + "/" + rel;
  return m_base + "/" + uri_encode(key, true);
}

Expected<HttpReply> S3Bucket::send(HttpRequest r, const std::string& payload_sha256) const {
  TAILOR_TRY(url, parse_http_url(r.url));
  if (m_credentials) sign_s3_request(r, url, m_region, *m_credentials, payload_sha256, amz_now());
  auto reply = http_send(r);
  if (!reply) return make_error(describe() + ": " + reply.error().message);
  return reply;
}

std::string S3Bucket::failure(const std::string& what, const HttpReply& reply) const {
  std::string line = fmt::format("{}: {}: {}", describe(), what, s3_error_text(reply));
  if (reply.status == 403 && !m_credentials)
    line += " (no S3 credentials in the environment: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)";
  return line;
}

Expected<HttpReply> S3Bucket::get(const std::string& rel, uint64_t max_bytes,
                                  std::function<Expected<void>(Bytes)> sink) const {
  HttpRequest r;
  r.url = url_of(rel);
  r.max_body = max_bytes;
  r.sink = std::move(sink);
  r.timeout = std::chrono::minutes(10);
  TAILOR_TRY(reply, send(std::move(r), Sha256::hex_of("")));
  // A missing bucket answers 404 too: only a missing key is "absent".
  if (reply.status == 200 ||
      (reply.status == 404 && reply.body.find("<Code>NoSuchBucket<") == std::string::npos))
    return reply;
  return make_error(failure("GET " + rel, reply));
}

Expected<HttpReply> S3Bucket::head(const std::string& rel) const {
  HttpRequest r;
  r.method = "HEAD";
  r.url = url_of(rel);
  TAILOR_TRY(reply, send(std::move(r), Sha256::hex_of("")));
  if (reply.status == 200 || reply.status == 404) return reply;
  return make_error(failure("HEAD " + rel, reply));
}

Expected<HttpReply> S3Bucket::put(const std::string& rel, const Put& p) const {
  HttpRequest r;
  r.method = "PUT";
  r.url = url_of(rel);
  r.body = p.body;
  r.body_file = p.body_file;
  r.timeout = std::chrono::minutes(10);
  r.max_body = 64 * 1024;
  r.headers.emplace_back("Content-Type", p.content_type);
  if (p.condition == S3Condition::absent) r.headers.emplace_back("If-None-Match", "*");
  if (p.condition == S3Condition::etag) r.headers.emplace_back("If-Match", p.etag);
  if (p.public_read) r.headers.emplace_back("x-amz-acl", "public-read");
  for (const auto& h : p.headers) r.headers.push_back(h);
  TAILOR_TRY(reply,
             send(std::move(r), p.body_file.empty() ? Sha256::hex_of(p.body) : p.file_sha256));
  if (reply.status == 200 || reply.status == 412 || reply.status == 409) return reply;
  return make_error(failure("PUT " + rel, reply));
}

std::string s3_error_text(const HttpReply& reply) {
  std::string code = xml_field(reply.body, "Code"), message = xml_field(reply.body, "Message");
  if (code.empty()) return fmt::format("HTTP {}", reply.status);
  return fmt::format("HTTP {} {}{}", reply.status, code, message.empty() ? "" : ": " + message);
}

}  // namespace tailor::cache
