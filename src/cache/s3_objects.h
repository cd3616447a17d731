// Objects in an S3-compatible bucket, read and written by tailor itself (the compiler cache's
// objects are sccache's; the wheelhouse's are these): the same s3:// URL and facts as the
// cache's storage (cache_settings: parse_s3_location, s3_facts), requests over util's HTTP
// client, signed with AWS Signature Version 4 when the environment has keys, and the
// conditional writes S3 has had since 2024 (If-None-Match: * creates only; If-Match: ETag
// replaces only what was read), which is how a read-modify-write stays safe with two writers.
// Credentials come from the environment as for sccache (AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN) and are never part of any text this returns.
#pragma once
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cache/cache_settings.h"
#include "util/expected.h"
#include "util/http_client.h"

namespace tailor::cache {

struct S3Credentials {
  std::string key_id, secret, session_token;
};

/// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN) of `env`; nullopt when
/// neither is set (anonymous requests, for a public bucket). One is set without the other: an
/// error naming the variables, never their values.
Expected<std::optional<S3Credentials>> s3_credentials(
    const std::map<std::string, std::string>& env);

/// Adds x-amz-date, x-amz-content-sha256 (`payload_sha256`, hex) and the SigV4 Authorization
/// header to `request` for `region` and service s3, signing Host and every header it has.
/// `amz_date`: "20130524T000000Z".
void sign_s3_request(HttpRequest& request, const HttpUrl& url, const std::string& region,
                     const S3Credentials& credentials, const std::string& payload_sha256,
                     const std::string& amz_date);

/// A write's condition.
enum class S3Condition { none, absent, etag };

class S3Bucket {
 public:
  /// The bucket of `at` (AWS's host from the facts when it names no endpoint), with the
  /// credentials of `env`.
  static Expected<S3Bucket> open(const S3Location& at,
                                 const std::map<std::string, std::string>& env);
  /// "s3://bucket/prefix (endpoint http://...)", for people: no credentials.
  std::string describe() const;

  /// GET of `rel` (below the prefix): status 200 with the body (at most `max_bytes`; with
  /// `sink`, the body goes there), 404 when absent; another status is an error naming the key
  /// and S3's code.
  Expected<HttpReply> get(const std::string& rel, uint64_t max_bytes,
                          std::function<Expected<void>(Bytes)> sink = {}) const;
  /// PUT of `body` (or the file `body_file` with its sha256 `file_sha256`) at `rel`.
  /// S3Condition::absent sends If-None-Match: * (only when no object is there), etag sends
  /// If-Match: `etag`. Returns the status: 200, or 412 when the condition failed (409 too:
  /// S3 answers a concurrent conditional write so); another status is an error.
  struct Put {
    std::string body, body_file, file_sha256, content_type = "application/octet-stream";
    S3Condition condition = S3Condition::none;
    std::string etag;
    bool public_read = false;                                  ///< x-amz-acl: public-read
    std::vector<std::pair<std::string, std::string>> headers;  ///< more: x-amz-meta-*
  };
  Expected<HttpReply> put(const std::string& rel, const Put& put) const;
  /// HEAD of `rel`: status 200 with the headers (x-amz-meta-* among them), or 404.
  Expected<HttpReply> head(const std::string& rel) const;
  /// The URL of `rel` (unsigned), for messages and plain readers.
  std::string url_of(const std::string& rel) const;

 private:
  Expected<HttpReply> send(HttpRequest request, const std::string& payload_sha256) const;
  std::string failure(const std::string& what, const HttpReply& reply) const;
  std::string m_bucket, m_prefix, m_base, m_region, m_endpoint;
  bool m_virtual_host = false;
  std::optional<S3Credentials> m_credentials;
};

/// S3's <Code> and <Message> of an error reply, "HTTP 403" when it has none.
std::string s3_error_text(const HttpReply& reply);

}  // namespace tailor::cache
