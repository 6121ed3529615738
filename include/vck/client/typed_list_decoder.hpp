// TypedListPage<T> and try_decode_list_page: a list page's JSON text ({"metadata": {...},
// "items": [...]}) decoded straight into shared T items and the ListMeta, with no DOM of the
// items (api/json_decoder.hpp; each item is a root object, so it gets its own arena and,
// with drop_managed_fields, its managedFields skipped unread). A fast path only: a page it
// cannot decode exactly (not an object, items that are not an array of objects T takes,
// odd metadata, repeated keys) returns false, and the caller decodes the page through the
// DOM, which gives the same items or the same errors. decode_list_page is both paths
// together: what a list page's text becomes, for the client and for any list-and-watch
// (runtime/list_watch.hpp) alike; parse_list_page is the DOM path for untyped lists.
#pragma once

#include <vck/api/json.hpp>
#include <vck/api/json_decoder.hpp>
#include <vck/api/meta.hpp>
#include <vck/client/error.hpp>
#include <vck/client/undecodable_object.hpp>

#include <boost/json/monotonic_resource.hpp>

#include <algorithm>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace vck::client {

template <class T>
struct TypedListPage {
    std::vector<std::shared_ptr<T>> items;
    api::ListMeta metadata;
};

namespace detail {

template <class T>
struct ListEnvelope {
    TypedListPage<T>* page;
    bool has_items = false, has_metadata = false;

    static bool object_begin(api::sax::Handler& h, void* t) {
        h.push(api::sax::Frame{&frame, t});
        return true;
    }
    static bool key(api::sax::Handler&, api::sax::Frame& f, std::string_view k) {
        auto& e = *static_cast<ListEnvelope*>(f.target);
        bool& seen = k == "items" ? e.has_items : e.has_metadata;
        if (k != "items" && k != "metadata") {
            f.member = api::sax::kSkip;  // apiVersion, kind
            return true;
        }
        if (seen) return false;
        seen = true;
        f.member = k == "items" ? 0 : 1;
        return true;
    }
    static bool child(api::sax::Handler&, api::sax::Frame& f, bool is_null, api::sax::Sink& out, bool& skip) {
        auto& e = *static_cast<ListEnvelope*>(f.target);
        if (f.member == api::sax::kSkip) {
            skip = true;
            return true;
        }
        if (is_null) return false;
        if (f.member == 0) out = api::sax::Sink{&items_sink, &e};
        else out = api::sax::Sink{api::sax::sink_ops<api::ListMeta>(), &e.page->metadata};
        return true;
    }

    static bool items_begin(api::sax::Handler& h, void* t) {
        h.push(api::sax::Frame{&items_frame, t});
        return true;
    }
    static bool item(api::sax::Handler& h, api::sax::Frame& f, bool is_null, api::sax::Sink& out, bool&) {
        if (is_null) return false;
        auto& items = static_cast<ListEnvelope*>(f.target)->page->items;
        items.push_back(std::make_shared<T>());
        out = api::sax::Sink{api::sax::sink_ops<T>(), items.back().get()};
        h.set_child_flags(api::sax::kRootObject);
        return true;
    }

    static constexpr api::sax::FrameOps frame{&key, &child};
    static constexpr api::sax::SinkOps sink{&object_begin};
    static constexpr api::sax::FrameOps items_frame{nullptr, &item};
    static constexpr api::sax::SinkOps items_sink{nullptr, &items_begin};
};

} // namespace detail

/// The fast path alone: true when `page` holds exactly what parsing the text and decoding
/// each item with from_json<T> (managedFields erased first with `drop_managed_fields`) gives;
/// false for anything it leaves to that path, with `page` then partly written.
template <class T>
bool try_decode_list_page(std::string_view text, bool drop_managed_fields, TypedListPage<T>& page) {
    detail::ListEnvelope<T> env{&page};
    boost::json::basic_parser<api::sax::Handler> p(boost::json::parse_options{});
    p.handler().start(api::sax::Sink{&detail::ListEnvelope<T>::sink, &env}, drop_managed_fields);
    boost::system::error_code ec;
    auto n = p.write_some(false, text.data(), text.size(), ec);
    return !ec && n == text.size() && !p.handler().failed();
}

/// The arena size for a list page's DOM: it takes roughly as many bytes as the text, so one
/// block usually holds it.
inline std::size_t list_page_arena_size(std::string_view body) {
    return std::max<std::size_t>(body.size() + body.size() / 2, 4096);
}

/// A list page's DOM (in `arena`), read from `path`: a Decode ApiError when the text is not
/// JSON, an api::DecodeError when it is not an object.
inline boost::json::value parse_list_page(std::string_view plural, std::string_view body, const std::string& path,
                                          boost::json::monotonic_resource& arena) {
    boost::system::error_code ec;
    auto page = boost::json::parse(body, ec, boost::json::storage_ptr(&arena));
    if (ec) throw ApiError(ErrorKind::Decode, "GET", path, "response is not JSON: " + ec.message());
    if (!page.is_object()) throw api::DecodeError("", "list of " + std::string(plural) + " is not a JSON object");
    return page;
}

/// A list page's text decoded into shared T items: the fast path, or when it declines, the
/// DOM with from_json<T> on each item; an item T rejects goes to
/// on_undecodable(UndecodableObject&&) and is left out of the page. The page's metadata
/// strings are read leniently on the DOM path.
template <class T, class OnUndecodable>
TypedListPage<T> decode_list_page(std::string_view plural, std::string_view body, const std::string& path,
                                  bool drop_managed_fields, OnUndecodable&& on_undecodable) {
    TypedListPage<T> page;
    if (try_decode_list_page(body, drop_managed_fields, page)) return page;
    page = TypedListPage<T>{};
    boost::json::monotonic_resource arena(list_page_arena_size(body));
    boost::json::value dom = parse_list_page(plural, body, path, arena);
    if (auto* items = dom.get_object().if_contains("items"); items && items->is_array())
        for (auto& it : items->get_array()) {
            if (drop_managed_fields) api::erase_managed_fields(it);
            try {
                page.items.push_back(std::make_shared<T>(api::from_json<T>(it)));
            } catch (const api::DecodeError& e) {
                on_undecodable(UndecodableObject(it, e));
            }
        }
    page.metadata.resourceVersion = api::string_at(dom, {"metadata", "resourceVersion"});
    page.metadata.continue_ = api::string_at(dom, {"metadata", "continue"});
    return page;
}

} // namespace vck::client
