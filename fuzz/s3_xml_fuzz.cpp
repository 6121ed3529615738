// libFuzzer target: S3's XML documents (listing, error, multipart results) from arbitrary
// bytes. The parsers must either return or throw S3Error — never crash, leak or overflow.
#include <vck/s3/s3_xml.hpp>

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    try {
        auto page = vck::s3::parse_list_objects_v2(text);
        for (const auto& o : page.objects)
            if (o.key.empty()) __builtin_trap();  // the parser promises non-empty keys
    } catch (const vck::s3::S3Error&) {
    }
    (void)vck::s3::parse_error(text);
    try {
        (void)vck::s3::parse_initiate_multipart(text);
    } catch (const vck::s3::S3Error&) {
    }
    try {
        (void)vck::s3::parse_complete_multipart(text);
    } catch (const vck::s3::S3Error&) {
    }
    return 0;
}
