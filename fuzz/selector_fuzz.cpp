// libFuzzer target: the text forms of quantities (api/quantity.hpp), label selectors
// (api/label_selector.hpp) and field selectors (sandbox/storage/field_selector.hpp, the sandbox's
// list/watch fieldSelector), each fed the whole input. Contracts:
// - quantity_value accepts only resource.Quantity's grammar (checked against a regular
//   expression of it) and never returns a NaN or an infinity;
// - LabelSelector::parse returns or throws SelectorError; to_string() parses back equal and is
//   a fixed point;
// - FieldSelector::parse returns or throws SelectorError; to_string() parses back equal.
#include "fuzz_check.hpp"

#include <vck/api/label_selector.hpp>
#include <vck/api/quantity.hpp>
#include <vck/sandbox/storage/field_selector.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <regex>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);

    static const std::regex grammar(R"([+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?)");
    auto q = vck::api::quantity_value(text);
    if (q) {
        vck::fuzz::check(std::isfinite(*q), "quantity_value returned a non-finite value", text);
        vck::fuzz::check(std::regex_match(text.begin(), text.end(), grammar), "quantity_value accepted text outside the grammar", text);
    }

    try {
        auto s = vck::api::LabelSelector::parse(text);
        auto canonical = s.to_string();
        vck::api::LabelSelector back;
        try {
            back = vck::api::LabelSelector::parse(canonical);
        } catch (const vck::api::SelectorError& e) {
            vck::fuzz::fail("a label selector's to_string() does not parse", canonical + "\n" + e.what());
        }
        vck::fuzz::check(back == s, "a label selector's to_string() parses to another selector", canonical);
        vck::fuzz::check(back.to_string() == canonical, "a label selector's to_string() is not canonical", canonical);
    } catch (const vck::api::SelectorError&) {
    }

    try {
        auto s = vck::sandbox::FieldSelector::parse(text);
        auto again = s.to_string();
        vck::sandbox::FieldSelector back;
        try {
            back = vck::sandbox::FieldSelector::parse(again);
        } catch (const vck::api::SelectorError& e) {
            vck::fuzz::fail("a field selector's to_string() does not parse", again + "\n" + e.what());
        }
        vck::fuzz::check(back == s, "a field selector's to_string() parses to another selector", again);
    } catch (const vck::api::SelectorError&) {
    }
    return 0;
}
