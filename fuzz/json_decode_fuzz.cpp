// libFuzzer target, differential: decode_json<T> (api/json_decoder.hpp, the SAX fast path with
// its DOM fallback) against its reference from_json<T>(parse(text)) (api/json.hpp), for
// VolumeManager and Pod. Contract: both give the same object (compared as re-serialised JSON)
// or both raise DecodeError with the same message; the fast path alone (try_decode_json)
// never accepts a document from_json refuses, nor decodes one differently. Nothing else is
// thrown.
#include "fuzz_check.hpp"

#include <vck/api/core_v1.hpp>
#include <vck/api/json_decoder.hpp>
#include <vck/api/volume_manager.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace {

struct Outcome {
    std::optional<std::string> json;  // the object, re-serialised
    std::string error;                // DecodeError::what() otherwise
};

template <class T>
std::string reserialise(const T& v) {
    return boost::json::serialize(vck::api::to_json(v));
}

template <class T>
void differential(std::string_view text) {
    using namespace vck::api;
    Outcome ref;
    try {
        ref.json = reserialise(from_json<T>(parse(text)));
    } catch (const DecodeError& e) {
        ref.error = e.what();
    }

    T fast{};
    if (try_decode_json(text, fast)) {
        vck::fuzz::check(ref.json.has_value(), "try_decode_json accepted a document from_json refuses", ref.error);
        vck::fuzz::check(reserialise(fast) == *ref.json, "try_decode_json and from_json decode differently",
                         reserialise(fast) + "\n" + *ref.json);
    }

    Outcome got;
    try {
        got.json = reserialise(decode_json<T>(text));
    } catch (const DecodeError& e) {
        got.error = e.what();
    }
    vck::fuzz::check(got.json.has_value() == ref.json.has_value(), "decode_json and from_json disagree on success",
                     got.json ? *got.json : got.error);
    if (ref.json) vck::fuzz::check(*got.json == *ref.json, "decode_json and from_json decode differently", *got.json + "\n" + *ref.json);
    else vck::fuzz::check(got.error == ref.error, "decode_json and from_json raise different errors", got.error + "\n" + ref.error);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    differential<vck::api::VolumeManager>(text);
    differential<vck::api::Pod>(text);
    return 0;
}
