#include "cache/s3_objects.h"

#include <gtest/gtest.h>

namespace tailor::cache {
namespace {

// AWS's own example of a signed GET Object ("Signature Calculations for the Authorization
// Header", Amazon S3 API reference): the same key, date, headers and signature.
TEST(S3Signature, AwsExampleGetObject) {
  HttpRequest r;
  r.method = "GET";
  r.url = "https://examplebucket.s3.amazonaws.com/test.txt";
  r.headers = {{"Range", "bytes=0-9"}};
  auto url = parse_http_url(r.url);
  ASSERT_TRUE(url);
  S3Credentials creds{"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ""};
  sign_s3_request(r, *url, "us-east-1", creds,
                  "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
                  "20130524T000000Z");
  std::string auth;
  for (const auto& [name, value] : r.headers)
    if (name == "Authorization") auth = value;
  EXPECT_EQ(auth,
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
            "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
            "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
  // The secret is in no header.
  for (const auto& [name, value] : r.headers)
    EXPECT_EQ(value.find("wJalrXUtnFEMI"), std::string::npos) << name;
}

TEST(S3Credentials, FromTheEnvironmentTogetherOrNotAtAll) {
  auto none = s3_credentials({});
  ASSERT_TRUE(none);
  EXPECT_FALSE(none->has_value());
  auto both = s3_credentials({{"AWS_ACCESS_KEY_ID", "k"}, {"AWS_SECRET_ACCESS_KEY", "s3cr3t"}});
  ASSERT_TRUE(both && both->has_value());
  EXPECT_EQ((*both)->key_id, "k");
  auto half = s3_credentials({{"AWS_SECRET_ACCESS_KEY", "s3cr3t"}});
  ASSERT_FALSE(half);
  EXPECT_EQ(half.error().message.find("s3cr3t"), std::string::npos);
}

TEST(S3Bucket, PathStyleWithAnEndpointVirtualHostOnAws) {
  S3Location at{"wheels", "team/house", "http://127.0.0.1:9000", ""};
  auto b = S3Bucket::open(at, {});
  ASSERT_TRUE(b);
  EXPECT_EQ(b->url_of("files/sm90/a-1.0+cu130-py3-none-any.whl"),
            "http://127.0.0.1:9000/wheels/team/house/files/sm90/a-1.0%2Bcu130-py3-none-any.whl");
  EXPECT_EQ(b->describe(), "s3://wheels/team/house (endpoint http://127.0.0.1:9000)");
  auto aws = S3Bucket::open({"wheels", "", "", "eu-west-1"}, {});
  ASSERT_TRUE(aws);
  EXPECT_EQ(aws->url_of("wheelhouse.json"),
            "https://wheels.s3.eu-west-1.amazonaws.com/wheelhouse.json");
}

TEST(S3Errors, CodeAndMessageFromTheReply) {
  HttpReply r;
  r.status = 412;
  r.body =
      "<?xml version=\"1.0\"?><Error><Code>PreconditionFailed</Code><Message>At least one"
      "</Message></Error>";
  EXPECT_EQ(s3_error_text(r), "HTTP 412 PreconditionFailed: At least one");
  r.body = "";
  EXPECT_EQ(s3_error_text(r), "HTTP 412");
}

}  // namespace
}  // namespace tailor::cache
