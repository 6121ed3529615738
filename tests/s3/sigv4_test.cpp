// SigV4 against AWS's published examples (the S3 "Signature Calculations" examples and the
// generic SigV4 test suite); where AWS publishes none (session token, escaped keys), against
// botocore's independent implementation.
#include <vck/s3/sigv4.hpp>
#include <vck/s3/s3_url.hpp>

#include <doctest.h>

using namespace vck::s3;

namespace {
const Credentials s3_example{"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ""};
const SigningScope s3_scope{"20130524T000000Z", "us-east-1", "s3"};

std::string signature_of(const std::string& authorization) {
    return authorization.substr(authorization.find("Signature=") + 10);
}
} // namespace

TEST_CASE("the derived signing key equals AWS's documented example") {
    SigningScope scope{"20150830T123600Z", "us-east-1", "iam"};
    auto k = signing_key("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", scope);
    CHECK(vck::api::to_hex(k.data(), k.size()) == "c4afb1cc5771d871763a393e44b703571b55cc28424d1a5e86da6ed3c154a4b9");
}

TEST_CASE("the get-vanilla request of the SigV4 test suite gets the published signature") {
    SignableRequest r;
    r.method = "GET";
    r.path = "/";
    r.headers = {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", "20150830T123600Z"}};
    r.payload_sha256 = std::string(empty_payload_sha256);
    SigningScope scope{"20150830T123600Z", "us-east-1", "service"};
    Credentials c{"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", ""};
    CHECK(canonical_request(r) ==
          "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\n"
          "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    CHECK(signature(c, scope, canonical_request(r)) == "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
}

TEST_CASE("a ranged GET Object signs as in the S3 documentation example") {
    SignableRequest r;
    r.path = "/test.txt";
    r.headers = {{"Host", "examplebucket.s3.amazonaws.com"}, {"Range", "bytes=0-9"}};
    r.payload_sha256 = std::string(empty_payload_sha256);
    auto auth = sign(r, s3_example, s3_scope);
    CHECK(auth.starts_with("AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
                           "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, Signature="));
    CHECK(signature_of(auth) == "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

TEST_CASE("a bucket listing with query parameters signs as in the S3 documentation example") {
    SignableRequest r;
    r.path = "/";
    r.query = {{"prefix", "J"}, {"max-keys", "2"}};  // unsorted on purpose
    r.headers = {{"Host", "examplebucket.s3.amazonaws.com"}};
    r.payload_sha256 = std::string(empty_payload_sha256);
    CHECK(signature_of(sign(r, s3_example, s3_scope)) ==
          "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
}

TEST_CASE("a session token is sent and signed as x-amz-security-token") {
    SignableRequest r;
    r.path = "/test.txt";
    r.headers = {{"Host", "examplebucket.s3.amazonaws.com"}};
    r.payload_sha256 = std::string(empty_payload_sha256);
    Credentials c = s3_example;
    c.session_token = "SESSIONTOKEN";
    auto auth = sign(r, c, s3_scope);
    CHECK(auth.find("SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token,") != std::string::npos);
    CHECK(signature_of(auth) == "1db744c2885650b493959873e99d1835a31a5b7a627e9b7913836b78175e4332");
    bool sent = false;
    for (auto& [k, v] : r.headers) sent = sent || (k == "x-amz-security-token" && v == "SESSIONTOKEN");
    CHECK(sent);
}

TEST_CASE("a path-style key with spaces and plus signs is signed on its encoded form") {
    SignableRequest r;
    r.path = "/data/" + uri_encode("dir a/f+x.txt", true);
    CHECK(r.path == "/data/dir%20a/f%2Bx.txt");
    r.headers = {{"Host", "127.0.0.1:4568"}};
    r.payload_sha256 = std::string(empty_payload_sha256);
    CHECK(signature_of(sign(r, s3_example, s3_scope)) ==
          "e5709f54004f9d2e2bf0f15e75ec188bb9d13e4507786a88e9b93183f21d43a7");
}

TEST_CASE("query names and values are percent-encoded, '/' included, and sorted") {
    CHECK(canonical_query({{"prefix", "a b/c"}, {"continuation-token", "x=y+"}, {"list-type", "2"}}) ==
          "continuation-token=x%3Dy%2B&list-type=2&prefix=a%20b%2Fc");
    CHECK(canonical_query({{"uploads", ""}}) == "uploads=");
}

TEST_CASE("header values are trimmed and inner whitespace collapsed before signing") {
    SignableRequest r;
    r.headers = {{"Host", "h"}, {"X-Custom", "  a   b  "}};
    CHECK(canonical_request(r).find("x-custom:a b\n") != std::string::npos);
}

TEST_CASE("a presigned URL carries the credential, date, expiry and a signature over the host only") {
    SignableRequest r;
    r.path = "/data/f.bin";
    r.headers = {{"host", "127.0.0.1:4568"}};
    auto q = presign_query(r, s3_example, s3_scope, std::chrono::seconds(3600));
    CHECK(q.find("X-Amz-Algorithm=AWS4-HMAC-SHA256") != std::string::npos);
    CHECK(q.find("X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request") != std::string::npos);
    CHECK(q.find("X-Amz-Expires=3600") != std::string::npos);
    CHECK(q.find("X-Amz-SignedHeaders=host") != std::string::npos);
    CHECK(q.find("X-Amz-Signature=") != std::string::npos);
}

TEST_CASE("credentials come from the AWS_* environment variables and need both halves") {
    setenv("AWS_ACCESS_KEY_ID", "AK", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "SK", 1);
    setenv("AWS_SESSION_TOKEN", "TOK", 1);
    auto c = Credentials::from_environment();
    REQUIRE(c);
    CHECK(c->access_key_id == "AK");
    CHECK(c->session_token == "TOK");
    unsetenv("AWS_SECRET_ACCESS_KEY");
    CHECK_FALSE(Credentials::from_environment());
    unsetenv("AWS_ACCESS_KEY_ID");
    unsetenv("AWS_SESSION_TOKEN");
}

TEST_CASE("amz_date formats UTC as YYYYMMDDTHHMMSSZ") {
    CHECK(amz_date(std::chrono::system_clock::time_point(std::chrono::seconds(1369353600))) == "20130524T000000Z");
}

TEST_CASE("an s3 URL with a trailing slash or no key is a recursive prefix") {
    auto a = S3Url::parse("s3://my-bucket/path/to/");
    CHECK(a.bucket == "my-bucket");
    CHECK(a.key == "path/to/");
    CHECK(a.recursive());
    CHECK(S3Url::parse("s3://my-bucket").recursive());
    auto b = S3Url::parse("s3://my-bucket/path/file.bin");
    CHECK_FALSE(b.recursive());
    CHECK(b.key == "path/file.bin");
}

TEST_CASE("a malformed s3 URL is rejected with the reason") {
    CHECK_THROWS_WITH_AS(S3Url::parse("http://bucket/x"), doctest::Contains("must start with s3://"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(S3Url::parse("s3://B/x"), doctest::Contains("3 to 63"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(S3Url::parse("s3://Bucket/x"), doctest::Contains("lowercase"), std::invalid_argument);
}
