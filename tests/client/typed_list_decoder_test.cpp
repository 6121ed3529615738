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

TEST_CASE("each item keeps a large unmodelled part in an arena of its own, and a small one on the heap") {
    auto page_of = [](std::size_t extra_bytes) {
        std::string items;
        for (int i = 0; i < 3; ++i)
            items += (i ? "," : "") + std::string(R"({"metadata":{"name":"p)") + std::to_string(i) + R"("},"extra":")" +
                     std::string(extra_bytes, 'x') + R"("})";
        return R"({"metadata":{"resourceVersion":"1"},"items":[)" + items + "]}";
    };
    TypedListPage<api::Pod> large, small;
    REQUIRE(client::try_decode_list_page(page_of(2000), false, large));
    REQUIRE(client::try_decode_list_page(page_of(10), false, small));
    for (int i = 0; i < 3; ++i) {
        CHECK(large.items.at(i)->unknown.at("extra").as_string().size() == 2000);
        CHECK(large.items.at(i)->unknown.storage().is_shared());  // an arena
        CHECK(small.items.at(i)->unknown.at("extra").as_string() == std::string(10, 'x'));
    }
    // One item kept in a cache does not keep the others' memory.
    CHECK(large.items.at(0)->unknown.storage() != large.items.at(1)->unknown.storage());
    CHECK(large.items.at(1)->unknown.storage() != large.items.at(2)->unknown.storage());
    // The first item tells the decoder that the type's unmodelled part is small.
    CHECK(small.items.at(0)->unknown.storage().is_shared());
    CHECK_FALSE(small.items.at(1)->unknown.storage().is_shared());
    CHECK_FALSE(small.items.at(2)->unknown.storage().is_shared());
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
