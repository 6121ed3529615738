// Store: the informer's thread-safe cache of one resource type (client-go cache.Indexer,
// kube-rs reflector Store), keyed by namespace/name, holding immutable shared snapshots
// (std::shared_ptr<const T>) so reads never deep-copy. Guarantees: after every apply(),
// replace() and add_index(), get/list/by_index answer exactly what a rescan of the objects
// would (old index entries are removed on update and delete); a call that throws (bad object,
// index function error) leaves the store unchanged. Built-in indexes: "namespace",
// "owner" (owner reference uids), "label:<key>" (that label's value); add_index() adds more.
#pragma once

#include <vck/runtime/kube_object.hpp>
#include <vck/runtime/object_key.hpp>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vck::runtime {

inline constexpr std::string_view namespace_index = "namespace";
inline constexpr std::string_view owner_index = "owner";
/// by_index("label:app", "web"): objects whose label "app" is "web". Every label key is indexed.
inline constexpr std::string_view label_index_prefix = "label:";

inline std::string label_index(std::string_view label_key) {
    return std::string(label_index_prefix) + std::string(label_key);
}

enum class ChangeType { Added, Modified, Deleted };

constexpr std::string_view to_string(ChangeType t) {
    switch (t) {
    case ChangeType::Added: return "ADDED";
    case ChangeType::Modified: return "MODIFIED";
    case ChangeType::Deleted: return "DELETED";
    }
    return "?";
}

/// One change to the cache: a watch event's type and object. For Deleted, the object is the
/// last state known (a watch's final state, or the cached one when a relist finds it gone).
template <class T>
struct Change {
    ChangeType type = ChangeType::Added;
    std::shared_ptr<const T> object;
};

template <KubeObject T>
class Store {
public:
    using ObjectPtr = std::shared_ptr<const T>;
    /// Index values of an object; must depend on the object only (it is called once per
    /// version, with the store locked: it must not call the store).
    using IndexFn = std::function<std::vector<std::string>(const T&)>;

    Store() {
        indexes_.push_back({std::string(namespace_index), [](const T& o) { return std::vector{key_of(o).namespace_}; }, {}});
        indexes_.push_back({std::string(owner_index), [](const T& o) { return owner_uids_of(o); }, {}});
    }

    /// Adds (and builds) an index. Throws std::invalid_argument if the name is taken, empty,
    /// or starts with "label:"; an exception from `fn` leaves the store unchanged.
    void add_index(std::string name, IndexFn fn) {
        if (name.empty()) throw std::invalid_argument("store: index name is empty");
        if (name.starts_with(label_index_prefix))
            throw std::invalid_argument("store: index name \"" + name + "\" is reserved (\"label:\" indexes are built in)");
        if (!fn) throw std::invalid_argument("store: index \"" + name + "\" has no function");
        std::unique_lock lk(mu_);
        for (const auto& ix : indexes_)
            if (ix.name == name) throw std::invalid_argument("store: index \"" + name + "\" already exists");
        std::vector<std::vector<std::string>> values;
        values.reserve(objects_.size());
        for (const auto& [k, e] : objects_) values.push_back(fn(*e.object));
        Index ix{std::move(name), std::move(fn), {}};
        std::size_t i = 0;
        for (auto& [k, e] : objects_) {
            for (const auto& v : values[i]) ix.by_value[v].insert(k);
            e.index_values.push_back(std::move(values[i]));
            ++i;
        }
        indexes_.push_back(std::move(ix));
    }

    /// Applies one watch event and records its object's resourceVersion. Added and Modified
    /// insert or replace; Deleted removes (absent keys are fine). Returns the object it replaced
    /// or removed, if any. Throws std::invalid_argument for a null object or one without a name.
    ObjectPtr apply(ChangeType type, ObjectPtr obj) {
        if (!obj) throw std::invalid_argument(std::string("store: ") + std::string(to_string(type)) + " event without an object");
        auto key = key_of(*obj);
        if (key.name.empty())
            throw std::invalid_argument(std::string("store: ") + std::string(to_string(type)) + " object has no metadata.name");
        auto rv = resource_version_of(*obj);
        if (type == ChangeType::Deleted) {
            std::unique_lock lk(mu_);
            ObjectPtr old;
            if (auto it = objects_.find(key); it != objects_.end()) {
                old = it->second.object;
                unindex(it->first, it->second);
                objects_.erase(it);
            }
            resource_version_ = std::move(rv);
            return old;
        }
        std::unique_lock lk(mu_);
        Entry e = make_entry_locked(std::move(obj));  // may throw: before any change
        ObjectPtr old;
        auto it = objects_.find(key);
        if (it != objects_.end()) {
            old = it->second.object;
            unindex(it->first, it->second);
            it->second = std::move(e);
        } else {
            it = objects_.emplace(std::move(key), std::move(e)).first;
        }
        index(it->first, it->second);
        resource_version_ = std::move(rv);
        return old;
    }
    ObjectPtr apply(const Change<T>& c) { return apply(c.type, c.object); }

    /// Replaces the whole content (a relist) and sets resourceVersion to the list's. Returns
    /// what changed, in key order: Added for new keys, Modified for keys whose resourceVersion
    /// changed, Deleted (with the last cached state) for keys that vanished. Of duplicate keys
    /// in `all`, the last wins.
    std::vector<Change<T>> replace(std::vector<ObjectPtr> all, std::string resource_version) {
        std::unique_lock lk(mu_);
        std::map<ObjectKey, Entry> fresh;
        for (auto& o : all) {
            if (!o) throw std::invalid_argument("store: replace with a null object");
            auto key = key_of(*o);
            if (key.name.empty()) throw std::invalid_argument("store: replace with an object that has no metadata.name");
            fresh.insert_or_assign(std::move(key), make_entry_locked(std::move(o)));
        }
        std::vector<Change<T>> changes;
        auto oi = objects_.begin();
        auto ni = fresh.begin();
        while (oi != objects_.end() || ni != fresh.end()) {
            if (ni == fresh.end() || (oi != objects_.end() && oi->first < ni->first)) {
                changes.push_back({ChangeType::Deleted, oi->second.object});
                ++oi;
            } else if (oi == objects_.end() || ni->first < oi->first) {
                changes.push_back({ChangeType::Added, ni->second.object});
                ++ni;
            } else {
                if (oi->second.object != ni->second.object &&
                    resource_version_of(*oi->second.object) != resource_version_of(*ni->second.object))
                    changes.push_back({ChangeType::Modified, ni->second.object});
                ++oi;
                ++ni;
            }
        }
        for (auto& ix : indexes_) ix.by_value.clear();
        labels_.clear();
        objects_ = std::move(fresh);
        for (auto& [k, e] : objects_) index(k, e);
        resource_version_ = std::move(resource_version);
        return changes;
    }

    /// Records a bookmark's resourceVersion without changing any object.
    void bookmark(std::string resource_version) {
        std::unique_lock lk(mu_);
        resource_version_ = std::move(resource_version);
    }

    ObjectPtr get(const ObjectKey& key) const {
        std::shared_lock lk(mu_);
        auto it = objects_.find(key);
        return it == objects_.end() ? nullptr : it->second.object;
    }

    /// Every object, in key order.
    std::vector<ObjectPtr> list() const {
        std::shared_lock lk(mu_);
        std::vector<ObjectPtr> out;
        out.reserve(objects_.size());
        for (const auto& [k, e] : objects_) out.push_back(e.object);
        return out;
    }

    std::vector<ObjectKey> keys() const {
        std::shared_lock lk(mu_);
        std::vector<ObjectKey> out;
        out.reserve(objects_.size());
        for (const auto& [k, e] : objects_) out.push_back(k);
        return out;
    }

    /// The objects whose index `index_name` has `value`, in key order. Throws
    /// std::invalid_argument for an index that does not exist.
    std::vector<ObjectPtr> by_index(std::string_view index_name, std::string_view value) const {
        std::shared_lock lk(mu_);
        const auto* keys = index_keys_locked(index_name, value);
        std::vector<ObjectPtr> out;
        if (!keys) return out;
        out.reserve(keys->size());
        for (const auto& k : *keys) out.push_back(objects_.at(k).object);
        return out;
    }

    std::vector<ObjectKey> keys_by_index(std::string_view index_name, std::string_view value) const {
        std::shared_lock lk(mu_);
        const auto* keys = index_keys_locked(index_name, value);
        return keys ? std::vector<ObjectKey>(keys->begin(), keys->end()) : std::vector<ObjectKey>{};
    }

    /// The resourceVersion of the last applied event, replace or bookmark ("" before any).
    std::string resource_version() const {
        std::shared_lock lk(mu_);
        return resource_version_;
    }

    std::size_t size() const {
        std::shared_lock lk(mu_);
        return objects_.size();
    }

private:
    using KeySet = std::set<ObjectKey>;

    struct Index {
        std::string name;
        IndexFn fn;
        std::map<std::string, KeySet, std::less<>> by_value;
    };

    /// An object with its index values, computed once so that removal needs no recomputation.
    struct Entry {
        ObjectPtr object;
        std::vector<std::vector<std::string>> index_values;  // parallel to indexes_
        api::Labels labels;
    };

    Entry make_entry_locked(ObjectPtr obj) const {
        Entry e;
        e.labels = labels_of(*obj);
        e.index_values.reserve(indexes_.size());
        for (const auto& ix : indexes_) e.index_values.push_back(ix.fn(*obj));
        e.object = std::move(obj);
        return e;
    }

    void index(const ObjectKey& k, const Entry& e) {
        for (std::size_t i = 0; i < indexes_.size(); ++i)
            for (const auto& v : e.index_values[i]) indexes_[i].by_value[v].insert(k);
        for (const auto& [lk, lv] : e.labels) labels_[lk][lv].insert(k);
    }

    void unindex(const ObjectKey& k, const Entry& e) {
        auto drop = [&](auto& by_value, const std::string& v) {
            auto it = by_value.find(v);
            if (it == by_value.end()) return;
            it->second.erase(k);
            if (it->second.empty()) by_value.erase(it);
        };
        for (std::size_t i = 0; i < indexes_.size(); ++i)
            for (const auto& v : e.index_values[i]) drop(indexes_[i].by_value, v);
        for (const auto& [lk, lv] : e.labels) {
            auto it = labels_.find(lk);
            if (it == labels_.end()) continue;
            drop(it->second, lv);
            if (it->second.empty()) labels_.erase(it);
        }
    }

    const KeySet* index_keys_locked(std::string_view index_name, std::string_view value) const {
        if (index_name.starts_with(label_index_prefix)) {
            auto it = labels_.find(index_name.substr(label_index_prefix.size()));
            if (it == labels_.end()) return nullptr;
            auto vit = it->second.find(value);
            return vit == it->second.end() ? nullptr : &vit->second;
        }
        for (const auto& ix : indexes_)
            if (ix.name == index_name) {
                auto it = ix.by_value.find(value);
                return it == ix.by_value.end() ? nullptr : &it->second;
            }
        throw std::invalid_argument("store: no index named \"" + std::string(index_name) + "\"");
    }

    mutable std::shared_mutex mu_;
    std::map<ObjectKey, Entry> objects_;
    std::vector<Index> indexes_;
    std::map<std::string, std::map<std::string, KeySet, std::less<>>, std::less<>> labels_;
    std::string resource_version_;
};

} // namespace vck::runtime
