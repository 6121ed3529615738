// ListWatchServing: the store's reads as kube-apiserver serves them.
// - list: label and field selectors (the fields each resource supports, as the real server
//   refuses others), pagination by limit with opaque continue tokens and remainingItemCount,
//   and resourceVersion semantics: "" the newest state, "0" the whole list as a watch cache
//   would serve it, N with Exact (or a limit) the state at N rebuilt from the change log, 410
//   Expired when the log no longer covers N or a continuation;
// - watch: "" or "0" starts with ADDED events of the current state, N replays the changes
//   after N (or holds one ERROR 410 event when the log no longer covers N); then the watch
//   is attached to the hub for live changes.
// Items are served in the version the request names (built-in list items carry no kind).
// Used under ObjectStore's lock.
#pragma once

#include <vck/api/label_selector.hpp>
#include <vck/api/meta.hpp>
#include <vck/client/base64.hpp>
#include <vck/sandbox/storage/event_conversion.hpp>
#include <vck/sandbox/storage/field_selector.hpp>
#include <vck/sandbox/storage/store_state.hpp>

#include <boost/json.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vck::sandbox {

namespace list_watch_detail {

namespace json = boost::json;

// Continue tokens are unpadded base64url, as the apiserver writes them.
inline std::string url_safe(std::string b64) {
    for (auto& c : b64) c = c == '+' ? '-' : c == '/' ? '_' : c;
    while (!b64.empty() && b64.back() == '=') b64.pop_back();
    return b64;
}
inline std::optional<std::string> from_url_safe(std::string s) {
    for (auto& c : s) c = c == '-' ? '+' : c == '_' ? '/' : c;
    while (s.size() % 4) s += '=';
    return client::base64_decode(s);
}
/// A resourceVersion parameter, or nullopt when it is not a number.
inline std::optional<std::int64_t> parse_rv(std::string_view s) {
    if (s.empty() || s.size() > 18) return std::nullopt;
    std::int64_t n = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return std::nullopt;
        n = n * 10 + (c - '0');
    }
    return n;
}
/// Field selectors each built-in resource supports besides metadata.name/namespace.
inline const std::vector<std::string>& extra_selectable_fields(std::string_view group, std::string_view plural) {
    static const std::map<std::string, std::vector<std::string>, std::less<>> fields = {
        {"/pods", {"spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
                   "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName"}},
        {"/secrets", {"type"}},
        {"/namespaces", {"status.phase"}},
        {"/nodes", {"spec.unschedulable"}},
        {"/events", {"involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
                     "involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath",
                     "reason", "reportingComponent", "source", "type"}},
        {"/persistentvolumeclaims", {}},
    };
    static const std::vector<std::string> none;
    auto it = fields.find(std::string(group) + "/" + std::string(plural));
    return it == fields.end() ? none : it->second;
}

} // namespace list_watch_detail

class ListWatchServing {
public:
    explicit ListWatchServing(StoreState& state) : s(state) {}

    /// The list document ({kind: <Kind>List, apiVersion, metadata, items}).
    json::value list(const ResourceInfo& r, const std::string& ns_in, const StoreListOptions& opts) const {
        using namespace stored_object;
        const std::string ns = r.namespaced ? ns_in : "";
        auto sel = parse_selection(r, opts.label_selector, opts.field_selector);
        std::int64_t limit = opts.limit > 0 ? opts.limit : 0;
        std::int64_t at = s.rv;  // the revision listed
        std::string start;
        if (!opts.continue_token.empty()) {
            auto [rv, key] = decode_continue(opts.continue_token);
            start = key;
            if (rv > 0) {
                if (!s.log.covers(rv)) {
                    auto st = store_status::expired(
                        "The provided continue parameter is too old to display a consistent list result. You can "
                        "start a new list without the continue parameter, or use the continue token in this "
                        "response to retrieve the remainder of the results. Continuing with the provided token "
                        "results in an inconsistent list - objects that were created, modified, or deleted between "
                        "the time the first chunk was returned and now may show up in the list.");
                    st.metadata.continue_ = encode_continue(-1, key);
                    throw StoreError(std::move(st));
                }
                at = rv;
            }
        } else if (opts.resource_version == "0") {
            limit = 0;  // served from the watch cache: the whole list, as the real server does
        } else if (!opts.resource_version.empty()) {
            auto n = list_watch_detail::parse_rv(opts.resource_version);
            if (!n)
                throw StoreError(store_status::bad_request("invalid resource version: " + opts.resource_version));
            if (*n > s.rv) throw StoreError(store_status::too_large_resource_version(*n, s.rv));
            bool exact = opts.resource_version_match == "Exact" || (opts.resource_version_match.empty() && limit > 0);
            if (exact) {
                if (!s.log.covers(*n))
                    throw StoreError(store_status::expired("too old resource version: " + std::to_string(*n) + " (" +
                                                           std::to_string(s.log.compacted_rv()) + ")"));
                at = *n;
            }
        }

        static const StoreState::Bucket empty_bucket;
        auto bit = s.data.find(r.storage_key());
        const StoreState::Bucket& current = bit == s.data.end() ? empty_bucket : bit->second;
        StoreState::Bucket snapshot;
        const StoreState::Bucket* view = &current;
        if (at < s.rv) {
            snapshot = current;
            s.log.for_each_after_newest_first(at, [&](const StoreChange& c) {
                if (c.storage_key != r.storage_key()) return;
                auto key = object_key(c.namespace_, c.name);
                if (c.type == "ADDED") snapshot.erase(key);
                else snapshot[key] = *c.previous;
            });
            view = &snapshot;
        }

        std::string lo = ns.empty() ? std::string() : ns + "/";
        auto in_scope = [&](const std::string& key) { return lo.empty() || key.starts_with(lo); };
        auto it = view->lower_bound(std::max(lo, start));
        json::array items;
        std::string last;
        for (; it != view->end() && in_scope(it->first); ++it) {
            if (limit > 0 && static_cast<std::int64_t>(items.size()) >= limit) break;
            if (!sel.matches(it->second)) continue;
            json::value item = StoreState::served(it->second, r);
            if (!r.custom) {
                item.get_object().erase("kind");
                item.get_object().erase("apiVersion");
            }
            items.push_back(std::move(item));
            last = it->first;
        }
        json::object md{{"resourceVersion", std::to_string(at)}};
        if (it != view->end() && in_scope(it->first) && limit > 0) {
            md["continue"] = encode_continue(at, last + std::string(1, '\0'));
            if (sel.everything()) {
                std::int64_t remaining = 0;
                for (auto rest = it; rest != view->end() && in_scope(rest->first); ++rest) ++remaining;
                md["remainingItemCount"] = remaining;
            }
        }
        return json::object{{"kind", r.list_kind}, {"apiVersion", r.api_version()}, {"metadata", std::move(md)},
                            {"items", std::move(items)}};
    }

    /// A watch of r in ns (all namespaces when empty), attached to the hub.
    std::shared_ptr<Watch> watch(const ResourceInfo& r, const std::string& ns, const StoreWatchOptions& opts) {
        using namespace stored_object;
        auto sel = std::make_shared<const Selection>(parse_selection(r, opts.label_selector, opts.field_selector));
        WatchFilter f;
        f.storage_key = r.storage_key();
        f.namespace_ = r.namespaced ? ns : "";
        f.api_version = r.api_version();
        f.kind = r.kind;
        if (!sel->everything()) f.matches = [sel](const json::value& o) { return sel->matches(o); };
        f.bookmarks = opts.allow_bookmarks;
        auto w = s.hub.make(f);
        if (opts.resource_version.empty() || opts.resource_version == "0") {
            auto b = s.data.find(r.storage_key());
            if (b != s.data.end()) {
                std::string lo = f.namespace_.empty() ? std::string() : f.namespace_ + "/";
                for (auto it = b->second.lower_bound(lo); it != b->second.end() && (lo.empty() || it->first.starts_with(lo)); ++it)
                    if (!f.matches || f.matches(it->second))
                        w->push(HubEvent{"ADDED", std::make_shared<const json::value>(StoreState::served(it->second, r))},
                                false);
            }
        } else {
            auto n = list_watch_detail::parse_rv(opts.resource_version);
            if (!n) throw StoreError(store_status::bad_request("invalid resource version: " + opts.resource_version));
            if (!s.log.covers(*n)) {
                auto st = store_status::expired("too old resource version: " + std::to_string(*n) + " (" +
                                                std::to_string(s.log.compacted_rv()) + ")");
                w->close(HubEvent{"ERROR", std::make_shared<const json::value>(api::to_json(st))});
                return w;
            }
            s.log.for_each_after(*n, [&](const StoreChange& c) {
                if (auto e = event_for(w->filter(), c)) w->push(std::move(*e), false);
            });
        }
        s.hub.attach(w);
        return w;
    }

private:
    struct Selection {
        api::LabelSelector labels;
        FieldSelector fields;
        bool event_source = false;  // selects on an Event's "source" label (not a plain path)
        bool matches(const json::value& obj) const {
            const auto* m = stored_object::meta(obj);
            const json::object* lbl = nullptr;
            if (m)
                if (const auto* l = m->if_contains("labels")) lbl = l->if_object();
            if (!labels.matches(lbl)) return false;
            return event_source ? fields.matches(event_selectable_fields(obj)) : fields.matches(obj);
        }
        bool everything() const { return labels.empty() && fields.empty(); }
    };

    static Selection parse_selection(const ResourceInfo& r, const std::string& label_text, const std::string& field_text) {
        Selection sel;
        try {
            sel.labels = api::LabelSelector::parse(label_text);
            sel.fields = FieldSelector::parse(field_text);
        } catch (const api::SelectorError& e) {
            throw StoreError(store_status::bad_request(e.what()));
        }
        const bool events_v1 = r.group == "events.k8s.io" && r.plural == "events";
        if (events_v1) {
            // Its labels name the core ones the storage selects on.
            for (const auto& f : sel.fields.fields())
                if (!events_v1_field_label(f)) throw StoreError(store_status::bad_request("field label not supported: " + f));
            sel.fields = sel.fields.renamed([](const std::string& f) { return *events_v1_field_label(f); });
        }
        const auto& extra = list_watch_detail::extra_selectable_fields(r.storage_group(), r.plural);
        for (const auto& f : sel.fields.fields()) {
            if (f == "metadata.name" || f == "metadata.namespace") continue;
            if (std::find(extra.begin(), extra.end(), f) != extra.end()) continue;
            if (r.custom)
                throw StoreError(store_status::bad_request(go::quote(f) + " is not a known field selector: only " +
                                                           "\"metadata.name\", \"metadata.namespace\""));
            throw StoreError(store_status::bad_request("field label not supported: " + f));
        }
        const auto fs = sel.fields.fields();
        sel.event_source = r.storage_group().empty() && r.plural == "events" &&
                           std::find(fs.begin(), fs.end(), "source") != fs.end();
        return sel;
    }

    static std::string encode_continue(std::int64_t rv, const std::string& start) {
        json::object t{{"v", "meta.k8s.io/v1"}, {"rv", rv}, {"start", start}};
        return list_watch_detail::url_safe(client::base64_encode(json::serialize(t)));
    }

    static std::pair<std::int64_t, std::string> decode_continue(const std::string& token) {
        auto bad = [](const std::string& why) {
            return StoreError(store_status::bad_request("continue key is not valid: " + why));
        };
        auto raw = list_watch_detail::from_url_safe(token);
        if (!raw) throw bad("illegal base64 data");
        boost::system::error_code ec;
        auto v = json::parse(*raw, ec);
        if (ec || !v.is_object()) throw bad("the token is not a JSON object");
        const auto& o = v.get_object();
        const auto* ver = o.if_contains("v");
        if (!ver || !ver->is_string() || ver->get_string() != "meta.k8s.io/v1")
            throw bad("server does not recognize this encoded key version");
        const auto* rv = o.if_contains("rv");
        const auto* start = o.if_contains("start");
        if (!rv || !rv->is_int64() || !start || !start->is_string()) throw bad("incorrect encoded start resourceVersion");
        return {rv->get_int64(), std::string(start->get_string())};
    }

    StoreState& s;  // the store's state, named short: nearly every line uses it
};

} // namespace vck::sandbox
