// MemoryListWatch: a ListWatch served from memory, for testing reflectors, informers,
// controllers and finalizers without a socket (kube-rs tests its watcher from in-memory
// streams the same way). It behaves as kube-apiserver's list and watch do where a reflector
// can tell, and lets a test cause what a real server does only under stress:
// - every change (put, remove, patch) takes the next resourceVersion, kept in a history per
//   resource; a watch from version N replays the changes after N, then goes on live; a watch
//   with no version starts with a synthetic ADDED per object;
// - compact() forgets the history: a watch from an older version gets an ERROR event with
//   410 Expired (`too old resource version: N (M)`) and ends, as the real server answers;
// - bookmark() sends every open watch that asked for bookmarks a BOOKMARK at the current
//   version; drop_watches() ends every open watch cleanly, as a server timeout does;
// - lists are paginated with limit/continue over a snapshot taken at the first page;
// - fail_next_list()/fail_next_watch() make the next request fail with a given ApiError;
// - remove() of an object with finalizers sets its deletionTimestamp instead, and a patch
//   that empties the finalizers of such an object deletes it, as the API server does;
// - namespaces and label selectors filter lists and watches (a field selector other than
//   metadata.name / metadata.namespace equality is refused with 400).
// Events carry the object's JSON exactly as put (plus resourceVersion), so a test can put an
// object a typed reader cannot decode. Thread-safe: the server side may be driven from the
// test's thread while the executor runs elsewhere; streams are woken on the executor.
#pragma once

#include <vck/api/label_selector.hpp>
#include <vck/api/meta.hpp>
#include <vck/api/resource.hpp>
#include <vck/api/time.hpp>
#include <vck/client/error.hpp>
#include <vck/client/request_options.hpp>
#include <vck/runtime/list_watch.hpp>
#include <vck/sandbox/storage/patch.hpp>

#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace vck::sandbox {

namespace asio = boost::asio;

class MemoryListWatch final : public runtime::ListWatch {
public:
    explicit MemoryListWatch(asio::any_io_executor ex) : ex_(std::move(ex)) {}

    asio::any_io_executor executor() const override { return ex_; }

    // ---- the server's side -------------------------------------------------------------

    /// Creates or replaces the object with `object`'s namespace and name; returns its new
    /// resourceVersion. The object may be anything JSON with metadata.name.
    std::string put(const api::ResourceType& rt, boost::json::value object) {
        std::lock_guard lk(mu_);
        auto key = key_in(object);
        auto& objects = resource(rt).objects;
        auto type = objects.count(key) ? "MODIFIED" : "ADDED";
        return resource_version_in(record_locked(rt, type, std::move(object)));
    }
    template <api::ApiObject T>
    std::string put(const T& object) {
        return put(T::resource, with_type_meta<T>(api::to_json(object)));
    }

    /// Deletes as the API server does: an object with finalizers only gets a
    /// deletionTimestamp (a MODIFIED event); one without is gone (a DELETED event with its
    /// last state at a new version). Returns false when there is no such object.
    bool remove(const api::ResourceType& rt, std::string_view ns, std::string_view name) {
        std::lock_guard lk(mu_);
        auto& objects = resource(rt).objects;
        auto it = objects.find({std::string(ns), std::string(name)});
        if (it == objects.end()) return false;
        auto obj = it->second;
        if (has_finalizers(obj)) {
            auto& meta = obj.as_object()["metadata"].as_object();
            if (!meta.contains("deletionTimestamp")) meta["deletionTimestamp"] = api::format_rfc3339(std::chrono::system_clock::now());
            record_locked(rt, "MODIFIED", std::move(obj));
        } else {
            record_locked(rt, "DELETED", std::move(obj));
        }
        return true;
    }

    /// The stored object, or null.
    boost::json::value get(const api::ResourceType& rt, std::string_view ns, std::string_view name) const {
        std::lock_guard lk(mu_);
        auto r = resources_.find(resource_id(rt));
        if (r == resources_.end()) return nullptr;
        auto it = r->second.objects.find({std::string(ns), std::string(name)});
        return it == r->second.objects.end() ? boost::json::value(nullptr) : it->second;
    }

    /// PATCH as client::Client::patch: JSON patch and merge patch (a strategic merge patch is
    /// applied as a merge patch). A failed `test` is 422, a missing object 404; a patch that
    /// empties the finalizers of an object being deleted deletes it.
    asio::awaitable<boost::json::value> patch(const api::ResourceType& rt, std::string_view ns, std::string_view name,
                                              client::PatchType type, boost::json::value body) {
        co_return patch_now(rt, ns, name, type, std::move(body));
    }
    /// patch() from the server's side, at once.
    boost::json::value patch_now(const api::ResourceType& rt, std::string_view ns, std::string_view name,
                                 client::PatchType type, const boost::json::value& body) {
        std::lock_guard lk(mu_);
        ++patches_;
        std::string path = rt.object_path(ns, name);
        auto& objects = resource(rt).objects;
        auto it = objects.find({std::string(ns), std::string(name)});
        if (it == objects.end())
            throw status_error("PATCH", path, 404, "NotFound",
                               std::string(rt.plural) + " \"" + std::string(name) + "\" not found");
        boost::json::value next;
        try {
            next = type == client::PatchType::Json ? sandbox::apply_json_patch(it->second, body)
                                                   : sandbox::apply_merge_patch(it->second, body);
        } catch (const sandbox::PatchError& e) {
            throw status_error("PATCH", path, 422, "Invalid", e.what());
        }
        bool gone = next.as_object()["metadata"].as_object().contains("deletionTimestamp") && !has_finalizers(next);
        return record_locked(rt, gone ? "DELETED" : "MODIFIED", std::move(next));
    }

    /// Forgets the history: a watch from any version before now gets 410 Expired.
    void compact() {
        std::lock_guard lk(mu_);
        compacted_ = rv_;
        for (auto& [id, r] : resources_) r.history.clear();
    }
    /// Every open watch that allows bookmarks gets a BOOKMARK at the current version.
    void bookmark() {
        std::lock_guard lk(mu_);
        for (auto& w : live_locked()) {
            if (!w->bookmarks) continue;
            boost::json::object meta{{"resourceVersion", std::to_string(rv_)}};
            std::lock_guard wl(w->mu);
            w->push(event_line("BOOKMARK", boost::json::object{{"kind", w->kind}, {"apiVersion", w->api_version},
                                                               {"metadata", std::move(meta)}}));
            wake(w);
        }
    }
    /// Ends every open watch cleanly (its reader sees the end of the stream).
    void drop_watches() {
        std::lock_guard lk(mu_);
        for (auto& w : live_locked()) {
            {
                std::lock_guard wl(w->mu);
                w->ended = true;
            }
            wake(w);
        }
        watches_open_.clear();
    }
    void fail_next_list(client::ApiError e) {
        std::lock_guard lk(mu_);
        list_failures_.push_back(std::move(e));
    }
    void fail_next_watch(client::ApiError e) {
        std::lock_guard lk(mu_);
        watch_failures_.push_back(std::move(e));
    }

    std::string resource_version() const {
        std::lock_guard lk(mu_);
        return std::to_string(rv_);
    }
    /// List pages served, watches opened, watches open now, patches received.
    std::size_t lists() const { std::lock_guard lk(mu_); return lists_; }
    std::size_t watches() const { std::lock_guard lk(mu_); return watches_; }
    std::size_t open_watches() const {
        std::lock_guard lk(mu_);
        return live_locked().size();
    }
    std::size_t patches() const { std::lock_guard lk(mu_); return patches_; }

    // ---- ListWatch ------------------------------------------------------------------------

    asio::awaitable<std::string> list(const api::ResourceType& rt, std::string_view ns,
                                      const client::ListOptions& o) override {
        std::lock_guard lk(mu_);
        ++lists_;
        std::string path = rt.collection_path(ns);
        throw_injected(list_failures_);
        Snapshot snap;
        std::size_t offset = 0;
        if (!o.continue_token.empty()) {
            auto it = snapshots_.find(o.continue_token);
            if (it == snapshots_.end())
                throw status_error("LIST", path, 410, "Expired", "The provided continue parameter is too old");
            snap = it->second;
            snapshots_.erase(it);
            offset = snap.offset;
        } else {
            Filter f = filter(path, ns, o.label_selector, o.field_selector);
            snap.rv = rv_;
            for (const auto& [k, obj] : resource(rt).objects)
                if (f.selects(k, obj)) snap.items.push_back(obj);
        }
        std::size_t limit = o.limit && *o.limit > 0 ? static_cast<std::size_t>(*o.limit) : snap.items.size();
        std::size_t end = std::min(snap.items.size(), offset + limit);
        boost::json::array items;
        for (std::size_t i = offset; i < end; ++i) items.push_back(snap.items[i]);
        boost::json::object meta{{"resourceVersion", std::to_string(snap.rv)}};
        if (end < snap.items.size()) {
            std::string token = "c" + std::to_string(++next_token_);
            snap.offset = end;
            snapshots_[token] = std::move(snap);
            meta["continue"] = token;
        }
        boost::json::object page{{"kind", std::string(rt.kind) + "List"}, {"apiVersion", rt.api_version()},
                                 {"metadata", std::move(meta)}, {"items", std::move(items)}};
        co_return boost::json::serialize(page);
    }

    asio::awaitable<std::unique_ptr<runtime::ByteStream>> watch(const api::ResourceType& rt, std::string_view ns,
                                                       const client::WatchOptions& o) override {
        std::lock_guard lk(mu_);
        ++watches_;
        std::string path = rt.collection_path(ns);
        throw_injected(watch_failures_);
        auto w = std::make_shared<Watch>(ex_);
        w->resource = resource_id(rt);
        w->kind = std::string(rt.kind);
        w->api_version = rt.api_version();
        w->bookmarks = o.allow_bookmarks;
        w->filter = filter(path, ns, o.label_selector, o.field_selector);
        auto& r = resource(rt);
        if (o.resource_version.empty() || o.resource_version == "0") {
            for (const auto& [k, obj] : r.objects)
                if (w->filter.selects(k, obj)) w->push(event_line("ADDED", obj));
        } else {
            std::uint64_t since = 0;
            auto [p, ec] = std::from_chars(o.resource_version.data(), o.resource_version.data() + o.resource_version.size(), since);
            if (ec != std::errc() || p != o.resource_version.data() + o.resource_version.size())
                throw status_error("WATCH", path, 400, "BadRequest",
                                   "invalid resource version \"" + o.resource_version + "\"");
            if (since < compacted_) {
                auto st = boost::json::object{{"kind", "Status"}, {"apiVersion", "v1"}, {"metadata", boost::json::object{}},
                                              {"status", "Failure"},
                                              {"message", "too old resource version: " + std::to_string(since) + " (" +
                                                              std::to_string(compacted_) + ")"},
                                              {"reason", "Expired"}, {"code", 410}};
                w->push(event_line("ERROR", std::move(st)));
                w->ended = true;
                co_return std::make_unique<Reader>(w);
            }
            for (const auto& h : r.history)
                if (h.rv > since && w->filter.selects(h.key, h.object)) w->push(event_line(h.type, h.object));
        }
        watches_open_.push_back(w);
        co_return std::make_unique<Reader>(w);
    }

private:
    using Key = std::pair<std::string, std::string>;  // namespace, name

    struct Filter {
        bool any_namespace = true;
        std::string namespace_;
        std::optional<api::LabelSelector> labels;
        std::optional<std::string> name;
        bool selects(const Key& k, const boost::json::value& obj) const {
            if (!any_namespace && k.first != namespace_) return false;
            if (name && k.second != *name) return false;
            if (!labels) return true;
            const auto* meta = obj.as_object().if_contains("metadata");
            const auto* l = meta && meta->is_object() ? meta->as_object().if_contains("labels") : nullptr;
            return labels->matches(l && l->is_object() ? &l->as_object() : nullptr);
        }
    };

    struct Watch {
        explicit Watch(asio::any_io_executor ex) : timer(ex, std::chrono::steady_clock::time_point::max()) {}
        void push(std::string line) { pending.push_back(std::move(line)); }
        std::string resource, kind, api_version;
        bool bookmarks = false;
        Filter filter;
        std::mutex mu;                    // guards what follows; taken after the server's
        std::deque<std::string> pending;
        std::size_t read_offset = 0;
        bool ended = false, closed = false;
        asio::steady_timer timer;  // waited on by a pending read, cancelled to wake it
    };

    struct Reader final : runtime::ByteStream {
        explicit Reader(std::shared_ptr<Watch> w) : w(std::move(w)) {}
        ~Reader() override { close(); }
        asio::awaitable<std::size_t> read_some(char* data, std::size_t size) override {
            for (;;) {
                {
                    std::lock_guard lk(*mu());
                    if (w->closed) throw client::ApiError(client::ErrorKind::Network, "WATCH", "", "watch closed by the client");
                    if (!w->pending.empty()) {
                        auto& front = w->pending.front();
                        std::size_t n = std::min(size, front.size() - w->read_offset);
                        std::copy_n(front.data() + w->read_offset, n, data);
                        w->read_offset += n;
                        if (w->read_offset == front.size()) {
                            w->pending.pop_front();
                            w->read_offset = 0;
                        }
                        co_return n;
                    }
                    if (w->ended) co_return 0;
                    w->timer.expires_at(std::chrono::steady_clock::time_point::max());
                }
                boost::system::error_code ec;
                co_await w->timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
            }
        }
        void close() override {
            {
                std::lock_guard lk(*mu());
                w->closed = true;
            }
            asio::post(w->timer.get_executor(), [w = w] { w->timer.cancel(); });
        }
        // A Watch has a mutex of its own: a Reader may outlive the MemoryListWatch.
        std::mutex* mu() { return &w->mu; }
        std::shared_ptr<Watch> w;
    };

    struct History {
        std::uint64_t rv;
        std::string type;
        Key key;
        boost::json::value object;
    };
    struct Resource {
        std::map<Key, boost::json::value> objects;
        std::vector<History> history;
    };
    struct Snapshot {
        std::uint64_t rv = 0;
        std::vector<boost::json::value> items;
        std::size_t offset = 0;
    };

    static std::string resource_id(const api::ResourceType& rt) {
        return std::string(rt.group) + "/" + std::string(rt.version) + "/" + std::string(rt.plural);
    }
    Resource& resource(const api::ResourceType& rt) { return resources_[resource_id(rt)]; }

    static Key key_in(const boost::json::value& obj) {
        const auto* o = obj.if_object();
        const auto* meta = o ? o->if_contains("metadata") : nullptr;
        const auto* name = meta && meta->is_object() ? meta->as_object().if_contains("name") : nullptr;
        if (!name || !name->is_string() || name->get_string().empty())
            throw std::invalid_argument("MemoryListWatch: an object needs metadata.name");
        const auto* ns = meta->as_object().if_contains("namespace");
        return {ns && ns->is_string() ? std::string(ns->get_string()) : "", std::string(name->get_string())};
    }
    static bool has_finalizers(const boost::json::value& obj) {
        const auto* f = obj.as_object().at("metadata").as_object().if_contains("finalizers");
        return f && f->is_array() && !f->as_array().empty();
    }
    template <class T>
    static boost::json::value with_type_meta(boost::json::value v) {
        auto& o = v.as_object();
        o["kind"] = std::string(T::resource.kind);
        o["apiVersion"] = T::resource.api_version();
        return v;
    }
    static std::string event_line(std::string_view type, boost::json::value object) {
        boost::json::object ev{{"type", type}, {"object", std::move(object)}};
        return boost::json::serialize(ev) + "\n";
    }
    static client::ApiError status_error(std::string verb, std::string path, int code, std::string reason,
                                         std::string message) {
        api::Status st;
        st.status = "Failure";
        st.code = code;
        st.reason = std::move(reason);
        st.message = std::move(message);
        return client::ApiError(std::move(verb), std::move(path), std::move(st));
    }
    Filter filter(const std::string& path, std::string_view ns, const std::string& labels,
                  const std::string& fields) const {
        Filter f;
        f.any_namespace = ns.empty();
        f.namespace_ = std::string(ns);
        try {
            if (!labels.empty()) f.labels = api::LabelSelector::parse(labels);
        } catch (const api::SelectorError& e) {
            throw status_error("LIST", path, 400, "BadRequest", e.what());
        }
        if (!fields.empty()) {
            auto eq = fields.find('=');
            std::string field = fields.substr(0, eq);
            std::string value = eq == std::string::npos ? "" : fields.substr(eq + 1);
            if (eq == std::string::npos || value.find(',') != std::string::npos ||
                (field != "metadata.name" && field != "metadata.namespace"))
                throw status_error("LIST", path, 400, "BadRequest",
                                   "MemoryListWatch serves only metadata.name= and metadata.namespace= field selectors, not \"" +
                                       fields + "\"");
            if (field == "metadata.name") f.name = value;
            else {
                f.any_namespace = false;
                f.namespace_ = value;
            }
        }
        return f;
    }

    static std::string resource_version_in(const boost::json::value& object) {
        return std::string(object.at("metadata").at("resourceVersion").as_string());
    }

    /// Stores the change at the next version and sends it to the watches that select it;
    /// returns the object as stored.
    boost::json::value record_locked(const api::ResourceType& rt, std::string_view type, boost::json::value object) {
        auto key = key_in(object);
        auto rv = ++rv_;
        auto& o = object.as_object();
        if (!o.contains("kind")) o["kind"] = std::string(rt.kind);
        if (!o.contains("apiVersion")) o["apiVersion"] = rt.api_version();
        o["metadata"].as_object()["resourceVersion"] = std::to_string(rv);
        auto& r = resource(rt);
        if (type == "DELETED") r.objects.erase(key);
        else r.objects[key] = object;
        auto id = resource_id(rt);
        for (auto& w : live_locked()) {
            if (w->resource != id || !w->filter.selects(key, object)) continue;
            {
                std::lock_guard wl(w->mu);
                w->push(event_line(type, object));
            }
            wake(w);
        }
        r.history.push_back(History{rv, std::string(type), std::move(key), object});
        return object;
    }

    /// Watches still open (a closed or ended one is forgotten: pruning changes no observable
    /// state, hence const).
    std::vector<std::shared_ptr<Watch>>& live_locked() const {
        std::erase_if(watches_open_, [](const std::shared_ptr<Watch>& w) {
            std::lock_guard wl(w->mu);
            return w->closed || w->ended;
        });
        return watches_open_;
    }
    /// Throws the first failure queued by fail_next_list()/fail_next_watch(), if any.
    static void throw_injected(std::deque<client::ApiError>& failures) {
        if (failures.empty()) return;
        auto e = std::move(failures.front());
        failures.pop_front();
        throw e;
    }
    static void wake(const std::shared_ptr<Watch>& w) {
        asio::post(w->timer.get_executor(), [w] { w->timer.cancel(); });
    }

    asio::any_io_executor ex_;
    mutable std::mutex mu_;
    std::map<std::string, Resource> resources_;
    mutable std::vector<std::shared_ptr<Watch>> watches_open_;
    std::map<std::string, Snapshot> snapshots_;
    std::deque<client::ApiError> list_failures_, watch_failures_;
    std::uint64_t rv_ = 0, compacted_ = 0, next_token_ = 0;
    std::size_t lists_ = 0, watches_ = 0, patches_ = 0;
};

} // namespace vck::sandbox
