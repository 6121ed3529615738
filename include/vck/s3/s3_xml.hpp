// The XML documents S3 sends and receives, read and written with pugixml: ListBucketResult
// (ListObjectsV2), Error, InitiateMultipartUploadResult, CompleteMultipartUploadResult and the
// CompleteMultipartUpload request body.
// Guarantee: any input either parses into the documented fields or throws S3Error
// (InvalidResponse) naming what was wrong; no input makes the parser crash or loop.
#pragma once

#include <vck/s3/s3_error.hpp>

#include <pugixml.hpp>

#include <charconv>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vck::s3 {

struct ObjectInfo {
    std::string key;
    std::uint64_t size = 0;
    std::string etag;  // without the surrounding quotes
    std::string last_modified;
};

struct ListPage {
    std::vector<ObjectInfo> objects;
    std::vector<std::string> common_prefixes;
    bool truncated = false;
    std::string next_continuation_token;
};

/// An S3 <Error> document.
struct ErrorBody {
    std::string code;
    std::string message;
    std::string bucket;
    std::string key;
    std::string request_id;
};

/// S3 quotes ETags ("\"abc\""); compare them bare.
inline std::string unquote_etag(std::string_view e) {
    if (e.size() >= 2 && e.front() == '"' && e.back() == '"') e = e.substr(1, e.size() - 2);
    else if (e.size() >= 12 && e.substr(0, 6) == "&quot;" && e.substr(e.size() - 6) == "&quot;")
        e = e.substr(6, e.size() - 12);
    return std::string(e);
}

namespace detail {

inline pugi::xml_document load_xml(std::string_view text, std::string_view what) {
    pugi::xml_document doc;
    auto r = doc.load_buffer(text.data(), text.size(), pugi::parse_default, pugi::encoding_utf8);
    if (!r)
        throw S3Error(S3ErrorKind::InvalidResponse, "the " + std::string(what) + " response is not valid XML (" +
                                                        r.description() + " at byte " + std::to_string(r.offset) + ")");
    return doc;
}

inline pugi::xml_node root(const pugi::xml_document& doc, const char* name, std::string_view what) {
    auto n = doc.child(name);
    if (!n)
        throw S3Error(S3ErrorKind::InvalidResponse, "the " + std::string(what) + " response has no <" + name +
                                                        "> element (root is <" + doc.first_child().name() + ">)");
    return n;
}

inline std::uint64_t parse_size(std::string_view s, std::string_view key) {
    std::uint64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc{} || p != s.data() + s.size())
        throw S3Error(S3ErrorKind::InvalidResponse, "the listing gives object \"" + std::string(key) +
                                                        "\" a size that is not a number: \"" + std::string(s) + "\"");
    return v;
}

} // namespace detail

inline ListPage parse_list_objects_v2(std::string_view xml) {
    auto doc = detail::load_xml(xml, "ListObjectsV2");
    auto r = detail::root(doc, "ListBucketResult", "ListObjectsV2");
    ListPage page;
    std::string_view truncated = r.child_value("IsTruncated");
    page.truncated = truncated == "true";
    page.next_continuation_token = r.child_value("NextContinuationToken");
    if (page.truncated && page.next_continuation_token.empty())
        throw S3Error(S3ErrorKind::InvalidResponse,
                      "the listing says it is truncated but gives no NextContinuationToken");
    for (auto c : r.children("Contents")) {
        ObjectInfo o;
        o.key = c.child_value("Key");
        if (o.key.empty()) throw S3Error(S3ErrorKind::InvalidResponse, "the listing has an object without a <Key>");
        o.size = detail::parse_size(c.child_value("Size"), o.key);
        o.etag = unquote_etag(c.child_value("ETag"));
        o.last_modified = c.child_value("LastModified");
        page.objects.push_back(std::move(o));
    }
    for (auto p : r.children("CommonPrefixes")) page.common_prefixes.emplace_back(p.child_value("Prefix"));
    return page;
}

/// nullopt when the body is not an S3 <Error> document (e.g. empty, as for HEAD).
inline std::optional<ErrorBody> parse_error(std::string_view xml) {
    pugi::xml_document doc;
    if (xml.empty() || !doc.load_buffer(xml.data(), xml.size(), pugi::parse_default, pugi::encoding_utf8))
        return std::nullopt;
    auto e = doc.child("Error");
    if (!e) return std::nullopt;
    ErrorBody b;
    b.code = e.child_value("Code");
    b.message = e.child_value("Message");
    b.bucket = e.child_value("BucketName");
    b.key = e.child_value("Key");
    b.request_id = e.child_value("RequestId");
    return b;
}

inline std::string parse_initiate_multipart(std::string_view xml) {
    auto doc = detail::load_xml(xml, "CreateMultipartUpload");
    auto r = detail::root(doc, "InitiateMultipartUploadResult", "CreateMultipartUpload");
    std::string id = r.child_value("UploadId");
    if (id.empty()) throw S3Error(S3ErrorKind::InvalidResponse, "the CreateMultipartUpload response has no UploadId");
    return id;
}

/// The ETag of the completed object. S3 may answer 200 with an <Error> body here; that
/// throws S3Error of the error's kind.
inline std::string parse_complete_multipart(std::string_view xml) {
    if (auto e = parse_error(xml))
        throw S3Error(kind_from_code(e->code, 200), "completing the multipart upload failed: " + e->code + ": " + e->message,
                      e->code, 200);
    auto doc = detail::load_xml(xml, "CompleteMultipartUpload");
    auto r = detail::root(doc, "CompleteMultipartUploadResult", "CompleteMultipartUpload");
    return unquote_etag(r.child_value("ETag"));
}

/// The CompleteMultipartUpload request body for (part number, ETag) pairs in order.
inline std::string complete_multipart_body(const std::vector<std::pair<int, std::string>>& parts) {
    pugi::xml_document doc;
    auto r = doc.append_child("CompleteMultipartUpload");
    r.append_attribute("xmlns") = "http://s3.amazonaws.com/doc/2006-03-01/";
    for (const auto& [n, etag] : parts) {
        auto p = r.append_child("Part");
        p.append_child("PartNumber").text().set(n);
        p.append_child("ETag").text().set(("\"" + etag + "\"").c_str());
    }
    std::ostringstream out;
    doc.save(out, "", pugi::format_raw);
    return out.str();
}

} // namespace vck::s3
