// S3's XML documents, its error mapping, and the include globs.
#include <vck/s3/glob.hpp>
#include <vck/s3/s3_client.hpp>
#include <vck/s3/s3_xml.hpp>

#include <boost/asio/io_context.hpp>

#include <doctest.h>

using namespace vck::s3;

TEST_CASE("a ListObjectsV2 page gives keys, sizes, bare ETags and the continuation token") {
    auto page = parse_list_objects_v2(R"(<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Name>data</Name><Prefix>set/</Prefix><KeyCount>2</KeyCount><MaxKeys>2</MaxKeys>
  <IsTruncated>true</IsTruncated><NextContinuationToken>tok+/=</NextContinuationToken>
  <Contents><Key>set/a.bin</Key><LastModified>2024-01-01T00:00:00.000Z</LastModified>
    <ETag>&quot;9e107d9d372bb6826bd81d3542a419d6&quot;</ETag><Size>43</Size><StorageClass>STANDARD</StorageClass></Contents>
  <Contents><Key>set/b &amp; c.bin</Key><ETag>"abc-2"</ETag><Size>17179869184</Size></Contents>
  <CommonPrefixes><Prefix>set/sub/</Prefix></CommonPrefixes>
</ListBucketResult>)");
    REQUIRE(page.objects.size() == 2);
    CHECK(page.objects[0].key == "set/a.bin");
    CHECK(page.objects[0].size == 43);
    CHECK(page.objects[0].etag == "9e107d9d372bb6826bd81d3542a419d6");
    CHECK(page.objects[0].last_modified == "2024-01-01T00:00:00.000Z");
    CHECK(page.objects[1].key == "set/b & c.bin");
    CHECK(page.objects[1].size == 17179869184ull);
    CHECK(page.objects[1].etag == "abc-2");
    CHECK(page.truncated);
    CHECK(page.next_continuation_token == "tok+/=");
    REQUIRE(page.common_prefixes.size() == 1);
    CHECK(page.common_prefixes[0] == "set/sub/");
}

TEST_CASE("the last ListObjectsV2 page is not truncated and may be empty") {
    auto page = parse_list_objects_v2("<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>");
    CHECK_FALSE(page.truncated);
    CHECK(page.objects.empty());
}

TEST_CASE("a listing that is not XML, has the wrong root, or a bad size is an InvalidResponse") {
    CHECK_THROWS_WITH_AS(parse_list_objects_v2("<html><body>proxy"), doctest::Contains("not valid XML"), S3Error);
    CHECK_THROWS_WITH_AS(parse_list_objects_v2("<Error><Code>x</Code></Error>"),
                         doctest::Contains("no <ListBucketResult>"), S3Error);
    CHECK_THROWS_WITH_AS(
        parse_list_objects_v2("<ListBucketResult><Contents><Key>k</Key><Size>-1</Size></Contents></ListBucketResult>"),
        doctest::Contains("not a number"), S3Error);
    CHECK_THROWS_WITH_AS(parse_list_objects_v2("<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>"),
                         doctest::Contains("NextContinuationToken"), S3Error);
    try {
        parse_list_objects_v2("garbage");
    } catch (const S3Error& e) {
        CHECK(e.kind() == S3ErrorKind::InvalidResponse);
    }
}

TEST_CASE("an S3 Error document gives its code, message and resource") {
    auto e = parse_error(R"(<?xml version="1.0"?><Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message>
<Key>a/b</Key><BucketName>data</BucketName><RequestId>42</RequestId></Error>)");
    REQUIRE(e);
    CHECK(e->code == "NoSuchKey");
    CHECK(e->message == "The specified key does not exist.");
    CHECK(e->key == "a/b");
    CHECK(e->bucket == "data");
    CHECK(e->request_id == "42");
    CHECK_FALSE(parse_error(""));
    CHECK_FALSE(parse_error("<ListBucketResult/>"));
}

TEST_CASE("multipart upload documents are read and written") {
    CHECK(parse_initiate_multipart("<InitiateMultipartUploadResult><Bucket>b</Bucket><Key>k</Key>"
                                   "<UploadId>up-1</UploadId></InitiateMultipartUploadResult>") == "up-1");
    CHECK_THROWS_AS(parse_initiate_multipart("<InitiateMultipartUploadResult/>"), S3Error);
    CHECK(parse_complete_multipart("<CompleteMultipartUploadResult><ETag>\"e-2\"</ETag></CompleteMultipartUploadResult>") ==
          "e-2");
    auto body = complete_multipart_body({{1, "aa"}, {2, "bb"}});
    CHECK(body.find("<Part><PartNumber>1</PartNumber><ETag>\"aa\"</ETag></Part>") != std::string::npos);
    CHECK(body.find("<PartNumber>2</PartNumber>") != std::string::npos);
}

TEST_CASE("a CompleteMultipartUpload answered 200 with an Error body is an error") {
    try {
        parse_complete_multipart("<Error><Code>InternalError</Code><Message>try again</Message></Error>");
        FAIL("no exception");
    } catch (const S3Error& e) {
        CHECK(e.kind() == S3ErrorKind::ServerError);
        CHECK(e.retryable());
    }
}

TEST_CASE("S3 error codes map to kinds, and only throttling, 5xx and transport errors retry") {
    CHECK(kind_from_code("NoSuchBucket", 404) == S3ErrorKind::NoSuchBucket);
    CHECK(kind_from_code("NoSuchKey", 404) == S3ErrorKind::NoSuchKey);
    CHECK(kind_from_code("", 404) == S3ErrorKind::NoSuchKey);
    CHECK(kind_from_code("AccessDenied", 403) == S3ErrorKind::AccessDenied);
    CHECK(kind_from_code("SignatureDoesNotMatch", 403) == S3ErrorKind::BadCredentials);
    CHECK(kind_from_code("InvalidAccessKeyId", 403) == S3ErrorKind::BadCredentials);
    CHECK(kind_from_code("InvalidRange", 416) == S3ErrorKind::InvalidRange);
    CHECK(kind_from_code("SlowDown", 503) == S3ErrorKind::SlowDown);
    CHECK(kind_from_code("", 500) == S3ErrorKind::ServerError);
    CHECK(S3Error(S3ErrorKind::SlowDown, "").retryable());
    CHECK(S3Error(S3ErrorKind::Network, "").retryable());
    CHECK_FALSE(S3Error(S3ErrorKind::NoSuchKey, "").retryable());
    CHECK_FALSE(S3Error(S3ErrorKind::BadCredentials, "").retryable());
}

TEST_CASE("an error response becomes a message that opens with what to check") {
    boost::asio::io_context ioc;
    S3Config cfg;
    cfg.endpoint = "http://127.0.0.1:9";
    S3Client c(ioc.get_executor(), cfg);
    auto e = c.status_error(404, "<Error><Code>NoSuchBucket</Code><Message>The specified bucket does not exist</Message></Error>",
                            "nobucket", "");
    CHECK(e.kind() == S3ErrorKind::NoSuchBucket);
    CHECK(std::string(e.what()).starts_with("bucket \"nobucket\" does not exist at http://127.0.0.1:9"));
    CHECK(std::string(e.what()).find("NoSuchBucket: The specified bucket does not exist") != std::string::npos);
    auto sig = c.status_error(403, "<Error><Code>SignatureDoesNotMatch</Code></Error>", "data", "k");
    CHECK(sig.kind() == S3ErrorKind::BadCredentials);
    CHECK(std::string(sig.what()).find("AWS_SECRET_ACCESS_KEY") != std::string::npos);
    CHECK(c.status_error(404, "", "data", "k").kind() == S3ErrorKind::NoSuchKey);
}

TEST_CASE("retry waits grow with the attempt, are jittered and capped") {
    boost::asio::io_context ioc;
    S3Config cfg;
    cfg.base_backoff = std::chrono::milliseconds(100);
    cfg.max_backoff = std::chrono::milliseconds(1000);
    S3Client c(ioc.get_executor(), cfg);
    for (int i = 0; i < 20; ++i) {
        auto d0 = c.backoff(0).count();
        CHECK(d0 >= 25);
        CHECK(d0 <= 100);
        auto d9 = c.backoff(9).count();
        CHECK(d9 >= 250);
        CHECK(d9 <= 1000);
    }
    CHECK(c.endpoint_url() == "https://s3.us-east-1.amazonaws.com");
}

TEST_CASE("a bad endpoint URL is rejected when the client is made") {
    boost::asio::io_context ioc;
    S3Config cfg;
    cfg.endpoint = "ftp://x";
    CHECK_THROWS_AS(S3Client(ioc.get_executor(), cfg), std::invalid_argument);
}

TEST_CASE("a star matches within one path segment and a double star across them") {
    CHECK(Glob("img/*.jpg").matches("img/a.jpg"));
    CHECK_FALSE(Glob("img/*.jpg").matches("img/sub/a.jpg"));
    CHECK(Glob("img/**/*.jpg").matches("img/sub/deep/a.jpg"));
    CHECK(Glob("img/**/*.jpg").matches("img/a.jpg"));
    CHECK(Glob("**").matches("x/y/z"));
    CHECK(Glob("img/**").matches("img/x/y"));
    CHECK_FALSE(Glob("img/**").matches("other/x"));
}

TEST_CASE("a pattern without a slash matches the last segment at any depth, as aws --include did") {
    CHECK(Glob("*.jpg").matches("a.jpg"));
    CHECK(Glob("*.jpg").matches("dir/sub/a.jpg"));
    CHECK_FALSE(Glob("*.jpg").matches("dir.jpg/a.png"));
}

TEST_CASE("question marks, classes, negated classes and escapes match single characters") {
    CHECK(Glob("part-?.bin").matches("part-7.bin"));
    CHECK_FALSE(Glob("part-?.bin").matches("part-17.bin"));
    CHECK(Glob("shard-[0-4]*").matches("shard-3-of-9"));
    CHECK_FALSE(Glob("shard-[0-4]*").matches("shard-5-of-9"));
    CHECK(Glob("shard-[!0-4]*").matches("shard-5"));
    CHECK(Glob("shard-[^0-4]*").matches("shard-9"));
    CHECK(Glob("[]]x").matches("]x"));
    CHECK(Glob("a\\*b").matches("a*b"));
    CHECK_FALSE(Glob("a\\*b").matches("axb"));
    CHECK_FALSE(Glob("d/?").matches("d//"));
}

TEST_CASE("a malformed glob is rejected naming the pattern") {
    CHECK_THROWS_WITH_AS(Glob("a[bc"), doctest::Contains("invalid glob \"a[bc\": unterminated"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(Glob("a\\"), doctest::Contains("trailing backslash"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(Glob("[z-a]"), doctest::Contains("out of order"), std::invalid_argument);
}

TEST_CASE("many stars against a long non-matching key finish quickly") {
    std::string key(5000, 'a');
    CHECK_FALSE(Glob("*a*a*a*a*a*a*a*a*a*a*b").matches(key));
    CHECK_FALSE(Glob("**/**/**/**/**/x").matches(std::string(2000, '/')));
}

TEST_CASE("no include globs select everything; several select their union") {
    CHECK(matches_any({}, "x"));
    std::vector<Glob> g{Glob("*.a"), Glob("d/*")};
    CHECK(matches_any(g, "q/1.a"));
    CHECK(matches_any(g, "d/2.b"));
    CHECK_FALSE(matches_any(g, "e/2.b"));
}
