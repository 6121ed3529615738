// Specification of try_decode_list_page: a list page's items and metadata exactly as parsing
// the page and from_json<T> on each item give them (managedFields erased first when asked);
// every page it cannot decode so is left to that path.
#include <vck/api/core_v1.hpp>
#include <vck/client/typed_list_decoder.hpp>

#include <doctest.h>

#include <string>

using namespace vck;
using client::TypedListPage;
namespace json = boost::json;

namespace {

const std::string kPage =
    R"({"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"41","continue":"next-3","remainingItemCount":2},)"
    R"("items":[{"metadata":{"name":"a","namespace":"n","uid":"u-a","managedFields":[{"manager":"m"}],"labels":{"k":"v"}},)"
    R"("spec":{"nodeName":"w1","containers":[{"name":"c","image":"i","ports":[{"containerPort":80}]}]},)"
    R"("status":{"phase":"Running","podIP":"10.0.0.1","conditions":[{"type":"Ready","status":"True","lastProbeTime":null}]}},)"
    R"({"metadata":{"name":"b","namespace":"n"},"spec":{"containers":[]},"extra":{"x":[1,2]}}]})";

/// Parse, erase managedFields when asked, from_json<Pod> per item: the items as JSON.
json::array reference_items(const std::string& text, bool drop) {
    json::array out;
    json::value page = json::parse(text);
    for (auto it : page.at("items").as_array()) {
        if (drop) it.at("metadata").as_object().erase("managedFields");
        out.push_back(api::to_json(api::from_json<api::Pod>(it)));
    }
    return out;
}

json::array items_of(const TypedListPage<api::Pod>& page) {
    json::array out;
    for (const auto& p : page.items) out.push_back(api::to_json(*p));
    return out;
}

} // namespace

TEST_CASE("a page decodes into items and metadata as parse and from_json on each item do") {
    for (bool drop : {false, true}) {
        TypedListPage<api::Pod> page;
        REQUIRE(client::try_decode_list_page(kPage, drop, page));
        CHECK(items_of(page) == reference_items(kPage, drop));
        CHECK(page.metadata.resourceVersion == "41");
        CHECK(page.metadata.continue_ == "next-3");
        CHECK(page.metadata.remainingItemCount == 2);
        CHECK(page.items.at(0)->metadata.unknown.contains("managedFields") == !drop);
    }
}

TEST_CASE("each item of a page keeps its unmodelled fields in an arena of its own") {
    TypedListPage<api::Pod> page;
    REQUIRE(client::try_decode_list_page(kPage, true, page));
    const auto& a = page.items.at(0)->status->unknown;
    const auto& b = page.items.at(1)->unknown;
    CHECK(a.at("podIP") == "10.0.0.1");
    CHECK(b.at("extra") == json::parse(R"({"x":[1,2]})"));
    CHECK(a.storage().is_shared());
    CHECK(a.storage() != b.storage());  // one item kept in a cache does not keep the others' memory
}

TEST_CASE("an empty page, or one without items, decodes to no items") {
    for (const char* text : {R"({"kind":"PodList","metadata":{"resourceVersion":"7"},"items":[]})",
                             R"({"metadata":{"resourceVersion":"7"}})"}) {
        TypedListPage<api::Pod> page;
        REQUIRE(client::try_decode_list_page(text, false, page));
        CHECK(page.items.empty());
        CHECK(page.metadata.resourceVersion == "7");
    }
}

TEST_CASE("pages the fast path cannot decode exactly are left to the DOM") {
    for (const char* text : {R"([])", R"(null)", R"({"items":null})", R"({"items":{}})", R"({"items":[null]})",
                             R"({"items":[{"metadata":{"name":5}}]})", R"({"items":[],"items":[]})",
                             R"({"metadata":{"continue":5},"items":[]})", R"({"metadata":null,"items":[]})",
                             R"({"items":[{"metadata":{"name":"a","name":"b"}}]})", R"({"items":[)", R"({"items":[]} x)"}) {
        TypedListPage<api::Pod> page;
        CHECK_FALSE_MESSAGE(client::try_decode_list_page(text, false, page), text);
    }
}
