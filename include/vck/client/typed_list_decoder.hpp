// TypedListPage<T> and try_decode_list_page: a list page's JSON text ({"metadata": {...},
// "items": [...]}) decoded straight into shared T items and the ListMeta, with no DOM of the
// items (api/json_decoder.hpp; each item is a root object, so it gets its own arena and,
// with drop_managed_fields, its managedFields skipped unread). A fast path only: a page it
// cannot decode exactly (not an object, items that are not an array of objects T takes,
// odd metadata, repeated keys) returns false, and the caller decodes the page through the
// DOM, which gives the same items or the same errors.
#pragma once

#include <vck/api/json_decoder.hpp>
#include <vck/api/meta.hpp>

#include <memory>
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

} // namespace vck::client
