// Lister<T> and CacheReader: read-only access to informers' caches for reconcilers (client-go's
// listers, controller-runtime's cache reader). Guarantees: get(ns, name) is the cached object
// or null; list(ns, selector) is every cached object in namespace `ns` ("" = all) whose labels
// the selector matches, in key order; both hand out immutable snapshots
// (shared_ptr<const T>) and nothing here can change a cache. list() starts from the store's
// indexes (a label the selector requires to equal one value, else the namespace) and filters
// the rest, so it costs the matching candidates, not the whole cache. A cache that has not
// synced answers from what it has so far (has_synced() tells).
#pragma once

#include <vck/api/label_selector.hpp>
#include <vck/runtime/informer.hpp>
#include <vck/runtime/shared_informer_factory.hpp>

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace vck::runtime {

template <KubeObject T>
class Lister {
public:
    using ObjectPtr = std::shared_ptr<const T>;

    explicit Lister(std::shared_ptr<Informer<T>> informer)
        : informer_(informer ? std::move(informer) : throw std::invalid_argument("lister: no informer")) {}

    ObjectPtr get(std::string_view ns, std::string_view name) const {
        return store().lookup(KeyView{ns, name});
    }
    ObjectPtr get(const ObjectKey& key) const { return store().get(key); }

    std::vector<ObjectPtr> list(std::string_view ns = {}, const api::LabelSelector& selector = {}) const {
        if (selector.selects_nothing()) return {};
        std::vector<ObjectPtr> candidates;
        if (auto label = indexed_label(selector)) {
            candidates = store().by_index(label_index(label->first), label->second);
        } else if (!ns.empty()) {
            candidates = store().by_index(namespace_index, ns);
        } else {
            candidates = store().list();
        }
        if (selector.empty()) return candidates;  // the namespace index or the whole cache
        std::erase_if(candidates, [&](const ObjectPtr& o) {
            return (!ns.empty() && key_view_of(*o).namespace_ != ns) || !matches(selector, *o);
        });
        return candidates;
    }
    /// list() with the selector's text form ("app=web,tier in (a,b)"); SelectorError if malformed.
    std::vector<ObjectPtr> list(std::string_view ns, std::string_view selector) const {
        return list(ns, api::LabelSelector::parse(selector));
    }

    bool has_synced() const { return informer_->has_synced(); }

private:
    const Store<T>& store() const { return informer_->store(); }

    /// A label the selector requires to have exactly one value: its {key, value}.
    static std::optional<std::pair<std::string, std::string>> indexed_label(const api::LabelSelector& s) {
        using Op = api::LabelSelector::Op;
        for (const auto& r : s.requirements())
            if ((r.op == Op::Equals || r.op == Op::In) && r.values.size() == 1) return std::pair{r.key, *r.values.begin()};
        return std::nullopt;
    }

    static bool matches(const api::LabelSelector& s, const T& obj) {
        if constexpr (TypedObject<T>) {
            return s.matches(obj.metadata.labels);
        } else {
            const auto* labels = detail::meta_field(obj, "labels");
            return s.matches(labels ? labels->if_object() : nullptr);
        }
    }

    std::shared_ptr<Informer<T>> informer_;  // only ever read through store()
};

/// Listers of a SharedInformerFactory's informers: a reconciler holds one to read any type's
/// cache (asking for a type makes its informer, which the factory starts with the others).
class CacheReader {
public:
    explicit CacheReader(SharedInformerFactory& f) : factory_(&f) {}

    template <api::ApiObject T>
    Lister<T> lister() const {
        return Lister<T>(factory_->informer<T>());
    }
    /// Untyped objects of `rt`.
    Lister<boost::json::value> lister(const api::ResourceType& rt) const {
        return Lister<boost::json::value>(factory_->informer<boost::json::value>(rt));
    }

    template <api::ApiObject T>
    std::shared_ptr<const T> get(std::string_view ns, std::string_view name) const {
        return lister<T>().get(ns, name);
    }
    template <api::ApiObject T>
    std::vector<std::shared_ptr<const T>> list(std::string_view ns = {}, const api::LabelSelector& selector = {}) const {
        return lister<T>().list(ns, selector);
    }
    bool has_synced() const { return factory_->has_synced(); }

private:
    SharedInformerFactory* factory_;
};

} // namespace vck::runtime
