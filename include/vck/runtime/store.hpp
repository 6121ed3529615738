// Store: the informer's thread-safe cache of one resource type (client-go cache.Indexer,
// kube-rs reflector Store), keyed by namespace/name, holding immutable shared snapshots
// (std::shared_ptr<const T>) so reads never deep-copy. Guarantees: after every apply(),
// replace() and add_index(), get/list/by_index answer exactly what a rescan of the objects
// would (old index entries are removed on update and delete); a call that throws (bad object,
// index function error) leaves the store unchanged. Built-in indexes, each built on its first
// query (an index nobody asks for costs nothing): "namespace", "owner" (owner reference uids),
// "label:<key>" (that label's value, for any key); add_index() adds more. A compressed store
// (StoreOptions::compressed) keeps each object zstd-compressed instead, for a tenth of the
// memory: every read then decodes a fresh snapshot, and the answers are otherwise the same.
#pragma once

#include <vck/runtime/kube_object.hpp>
#include <vck/runtime/object_compressor.hpp>
#include <vck/runtime/object_key.hpp>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
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
    std::shared_ptr<const T> old;  // Modified, from replace(): the state it replaced
};

struct StoreOptions {
    /// Keep objects compressed (see object_compressor.hpp): for stores of many objects that
    /// are read far less often than they are kept. Reads of a compressed object decode it (a
    /// few microseconds for a 1 KB object) and return a fresh snapshot each time instead of a
    /// shared one. Needs an untyped store or a type with api::to_json/from_json.
    bool compressed = false;
    /// Of a compressed store, how many of the most recently applied objects stay whole: an
    /// object is often changed again soon after a change, and read by the reconcile the change
    /// triggers, so a version soon replaced is never compressed and such reads decode nothing.
    std::size_t recent_whole = 256;
};

template <KubeObject T>
class Store {
public:
    using ObjectPtr = std::shared_ptr<const T>;
    /// Index values of an object; must depend on the object only (it is called once per
    /// version, with the store locked: it must not call the store).
    using IndexFn = std::function<std::vector<std::string>(const T&)>;

    Store() : Store(StoreOptions{}) {}
    /// Throws std::invalid_argument when asked to compress a type that cannot be.
    explicit Store(StoreOptions o) : recent_whole_(o.recent_whole) {
        if (o.compressed) {
            if constexpr (Compressible<T>) compressor_ = std::make_unique<Compressor>();
            else throw std::invalid_argument("store: this object type cannot be kept compressed (it has no JSON conversion)");
        }
    }

    /// Adds (and builds) an index. Throws std::invalid_argument if the name is taken (the
    /// built-in ones included), empty, or starts with "label:"; an exception from `fn` leaves
    /// the store unchanged.
    void add_index(std::string name, IndexFn fn) {
        if (name.empty()) throw std::invalid_argument("store: index name is empty");
        if (name == namespace_index || name == owner_index)
            throw std::invalid_argument("store: index \"" + name + "\" already exists (it is built in)");
        if (name.starts_with(label_index_prefix))
            throw std::invalid_argument("store: index name \"" + name + "\" is reserved (\"label:\" indexes are built in)");
        if (!fn) throw std::invalid_argument("store: index \"" + name + "\" has no function");
        std::unique_lock lk(mu_);
        if (find_index_locked(name)) throw std::invalid_argument("store: index \"" + name + "\" already exists");
        build_index_locked(Index{std::move(name), Kind::Custom, {}, std::move(fn), {}});
    }

    /// Applies one watch event and records its object's resourceVersion. Added and Modified
    /// insert or replace; Deleted removes (absent keys are fine). Returns the object it replaced
    /// or removed, if any. Throws std::invalid_argument for a null object or one without a name.
    ObjectPtr apply(ChangeType type, ObjectPtr obj) { return apply_locked(type, std::move(obj), false).old; }

    /// What apply_event() did.
    struct Applied {
        ObjectPtr old;          // the object replaced or removed, if any
        bool replayed = false;  // the cached object already had this version: nothing changed
    };
    /// apply() for a watch event that may replay what the cache holds (a watch resumed from an
    /// older version): an Added or Modified object whose resourceVersion equals the cached
    /// one's only records the version. One lookup, where has_version() then apply() take two.
    Applied apply_event(ChangeType type, ObjectPtr obj) { return apply_locked(type, std::move(obj), true); }
    ObjectPtr apply(const Change<T>& c) { return apply(c.type, c.object); }

    /// Replaces the whole content (a relist) and sets resourceVersion to the list's. Returns
    /// what changed, in key order: Added for new keys, Modified for keys whose resourceVersion
    /// changed, Deleted (with the last cached state) for keys that vanished. Of duplicate keys
    /// in `all`, the last wins.
    std::vector<Change<T>> replace(std::vector<ObjectPtr> all, std::string resource_version) {
        std::unique_lock lk(mu_);
        std::vector<ObjectPtr> listed;  // a compressed store ages them in the list's order
        if (compressor_) listed = all;
        Objects fresh;
        fresh.reserve(all.size());
        for (auto& o : all) {
            if (!o) throw std::invalid_argument("store: replace with a null object");
            auto key = key_view_of(*o);
            if (key.name.empty()) throw std::invalid_argument("store: replace with an object that has no metadata.name");
            auto [it, fresh_key] = fresh.try_emplace(key);
            if (!fresh_key) {
                auto node = fresh.extract(it);  // the last wins: its own strings key the node
                node.key() = key;
                it = fresh.insert(std::move(node)).position;
            }
            it->second.object = std::move(o);
        }
        std::vector<Values> values;
        values.reserve(fresh.size());
        for (const auto& [k, e] : fresh) values.push_back(values_locked(*e.object, k));  // may throw: before any change
        struct Keyed {
            KeyView key;
            Change<T> change;
        };
        std::vector<Keyed> keyed;
        for (const auto& [k, e] : objects_) {
            auto ni = fresh.find(k);
            if (ni == fresh.end()) keyed.push_back({k, {ChangeType::Deleted, object_of(e), nullptr}});
            else if (e.object != ni->second.object && version_of(e) != resource_version_view(*ni->second.object))
                keyed.push_back({ni->first, {ChangeType::Modified, ni->second.object, object_of(e)}});
        }
        for (const auto& [k, e] : fresh)
            if (!objects_.contains(k)) keyed.push_back({k, {ChangeType::Added, e.object, nullptr}});
        std::sort(keyed.begin(), keyed.end(), [](const Keyed& a, const Keyed& b) { return a.key < b.key; });
        std::vector<Change<T>> changes;
        changes.reserve(keyed.size());
        for (auto& c : keyed) changes.push_back(std::move(c.change));
        keyed.clear();  // its keys may point into entries replaced below
        for (auto& ix : indexes_) ix->buckets.clear();
        objects_ = std::move(fresh);
        std::size_t i = 0;
        for (auto& slot : objects_) link_locked(slot, values[i++]);
        resource_version_ = std::move(resource_version);
        recent_.clear();  // every entry is a listed object now
        for (const auto& obj : listed) age_locked(obj);  // the last `recent_whole` listed stay whole
        return changes;
    }

    /// Records a bookmark's resourceVersion without changing any object.
    void bookmark(std::string resource_version) {
        std::unique_lock lk(mu_);
        resource_version_ = std::move(resource_version);
    }

    ObjectPtr get(const ObjectKey& key) const { return lookup(view_of(key)); }

    /// get() by a key that points into another object (no copy of the key's strings).
    ObjectPtr lookup(KeyView key) const {
        std::shared_lock lk(mu_);
        auto it = objects_.find(key);
        return it == objects_.end() ? nullptr : object_of(it->second);
    }

    /// Whether `key` is cached (no decode, even when compressed).
    bool contains(const ObjectKey& key) const {
        std::shared_lock lk(mu_);
        return objects_.contains(view_of(key));
    }

    /// Whether the object cached under `key` has resourceVersion `rv` (no decode, even when
    /// compressed): a watch event that replays it changes nothing.
    bool has_version(KeyView key, std::string_view rv) const {
        std::shared_lock lk(mu_);
        auto it = objects_.find(key);
        return it != objects_.end() && version_of(it->second) == rv;
    }

    /// Every object, in key order (sorted per call: the cache itself is a hash map).
    std::vector<ObjectPtr> list() const {
        std::shared_lock lk(mu_);
        auto slots = sorted_slots_locked();
        std::vector<ObjectPtr> out;
        out.reserve(slots.size());
        for (const Slot* s : slots) out.push_back(object_of(s->second));
        return out;
    }

    /// Every key, in order.
    std::vector<ObjectKey> keys() const {
        std::shared_lock lk(mu_);
        auto slots = sorted_slots_locked();
        std::vector<ObjectKey> out;
        out.reserve(slots.size());
        for (const Slot* s : slots) out.push_back(s->first.key());
        return out;
    }

    /// The objects whose index `index_name` has `value`, in key order. Throws
    /// std::invalid_argument for an index that does not exist. A built-in index is built on
    /// its first query and kept up to date from then on.
    std::vector<ObjectPtr> by_index(std::string_view index_name, std::string_view value) const {
        std::vector<ObjectPtr> out;
        with_members(index_name, value, [&](const Members& m) {
            out.reserve(m.size());
            for (const Slot* s : m) out.push_back(object_of(s->second));
        });
        return out;
    }

    std::vector<ObjectKey> keys_by_index(std::string_view index_name, std::string_view value) const {
        std::vector<ObjectKey> out;
        with_members(index_name, value, [&](const Members& m) {
            out.reserve(m.size());
            for (const Slot* s : m) out.push_back(s->first.key());
        });
        return out;
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

    bool compressed() const { return compressor_ != nullptr; }

private:
    // Layout, chosen for memory (a controller caches tens of thousands of objects) and for a
    // watch event's one lookup: a hash map (no chain of key comparisons, each touching another
    // object's memory, as an ordered map takes) keyed by views into the objects' own immutable
    // snapshots (or compressed forms), so no key is copied; an index maps
    // each value to the map nodes that have it (nodes never move), and each entry remembers
    // where it sits in every bucket, so unlinking is O(1) per membership and never calls an
    // index function again. Only index values are copied, once per distinct value.
    enum class Kind { Namespace, Owner, Label, Custom };
    struct Entry;
    // Not noexcept on purpose: libstdc++ then keeps each node's hash (8 bytes), so walking a
    // bucket and growing the table never hash a key again (without it, about 7 hashes a lookup).
    struct KeyHash {
        std::size_t operator()(const KeyView& k) const { return hash_key(k.namespace_, k.name); }
    };
    using Objects = std::unordered_map<KeyView, Entry, KeyHash>;
    using Slot = std::pair<const KeyView, Entry>;
    using Members = std::vector<Slot*>;
    struct ViewHash {
        using is_transparent = void;
        std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
    };
    using Buckets = std::unordered_map<std::string, Members, ViewHash, std::equal_to<>>;
    using Bucket = std::pair<const std::string, Members>;
    struct Membership {
        Bucket* bucket;
        std::uint32_t index;
        std::uint32_t pos;  // in bucket->second
    };
    /// The object itself, or (compressed store) its compressed form: one of the two is set.
    struct Entry {
        ObjectPtr object;
        CompressedObject packed;
        std::vector<Membership> memberships;
    };
    /// Stands in for ObjectCompressor where T has no JSON conversion (the constructor refuses
    /// to compress such a store, so these are never called).
    struct NoCompressor {
        CompressedObject compress(const T&) { throw std::logic_error("store: not compressible"); }
        ObjectPtr decompress(const CompressedObject&) const { throw std::logic_error("store: not compressible"); }
    };
    using Compressor = std::conditional_t<Compressible<T>, ObjectCompressor<T>, NoCompressor>;
    struct Index {
        std::string name;
        Kind kind;
        std::string label_key;  // Kind::Label
        IndexFn fn;             // Kind::Custom
        Buckets buckets;
    };
    /// An object's index values, computed before the store changes; views point into the
    /// object or into `owned` (values a user-defined index function returned).
    struct Values {
        struct Value {
            std::uint32_t index;
            std::string_view value;
        };
        std::vector<Value> list;
        std::vector<std::vector<std::string>> owned;
    };

    Applied apply_locked(ChangeType type, ObjectPtr obj, bool skip_replay) {
        if (!obj) throw std::invalid_argument(std::string("store: ") + std::string(to_string(type)) + " event without an object");
        auto key = key_view_of(*obj);
        if (key.name.empty())
            throw std::invalid_argument(std::string("store: ") + std::string(to_string(type)) + " object has no metadata.name");
        auto rv = resource_version_view(*obj);
        std::unique_lock lk(mu_);
        auto it = objects_.find(key);
        bool found = it != objects_.end();
        if (found && skip_replay && type != ChangeType::Deleted && version_of(it->second) == rv) {
            resource_version_.assign(rv);
            return {nullptr, true};
        }
        ObjectPtr old = found ? object_of(it->second) : nullptr;  // may throw: before any change
        if (type == ChangeType::Deleted) {
            if (found) {
                unlink_locked(*it);
                objects_.erase(it);
            }
            resource_version_.assign(rv);
            return {std::move(old), false};
        }
        auto values = values_locked(*obj, key);  // may throw: before any change
        if (found) {
            // The node is kept (index members point at it); its key is re-pointed into the new
            // snapshot, since the old one may be released.
            unlink_locked(*it);
            auto node = objects_.extract(it);
            node.key() = key;
            node.mapped().object = obj;
            node.mapped().packed = {};
            it = objects_.insert(std::move(node)).position;
        } else {
            it = objects_.emplace(key, Entry{obj, {}, {}}).first;
        }
        link_locked(*it, values);
        resource_version_.assign(rv);
        age_locked(it->second.object);
        return {std::move(old), false};
    }

    ObjectPtr object_of(const Entry& e) const { return e.object ? e.object : compressor_->decompress(e.packed); }
    std::string_view version_of(const Entry& e) const {
        return e.object ? resource_version_view(*e.object) : e.packed.resource_version();
    }

    /// Counts `obj` (just applied) among the recent objects of a compressed store, and
    /// compresses the oldest recent one still cached in that version once there are more than
    /// `recent_whole`.
    void age_locked(const ObjectPtr& obj) {
        if (!compressor_) return;
        recent_.push_back(obj);
        while (recent_.size() > recent_whole_) {
            ObjectPtr oldest = std::move(recent_.front());
            recent_.pop_front();
            auto it = objects_.find(key_view_of(*oldest));
            if (it != objects_.end() && it->second.object == oldest) pack_locked(it);
        }
    }

    /// Compresses a linked entry in place when the store is compressed: the node stays where it
    /// is (index members point at it), re-keyed by views into its compressed form. Should
    /// compressing fail, the entry stays whole, which every reader serves as well.
    void pack_locked(typename Objects::iterator it) noexcept {
        if (!compressor_ || !it->second.object) return;
        CompressedObject packed;
        try {
            packed = compressor_->compress(*it->second.object);
        } catch (...) {
            return;
        }
        auto node = objects_.extract(it);
        node.mapped().packed = std::move(packed);
        node.mapped().object.reset();
        node.key() = KeyView{node.mapped().packed.namespace_(), node.mapped().packed.name()};
        objects_.insert(std::move(node));
    }

    /// Every entry, in key order.
    std::vector<const Slot*> sorted_slots_locked() const {
        std::vector<const Slot*> slots;
        slots.reserve(objects_.size());
        for (const auto& slot : objects_) slots.push_back(&slot);
        std::sort(slots.begin(), slots.end(), [](const Slot* a, const Slot* b) { return a->first < b->first; });
        return slots;
    }

    const Index* find_index_locked(std::string_view name) const {
        for (const auto& ix : indexes_)
            if (ix->name == name) return ix.get();
        return nullptr;
    }

    /// Adds the values of index `i` for `obj` (each value once). May throw.
    void add_values_locked(std::uint32_t i, const T& obj, KeyView key, Values& out) const {
        const Index& ix = *indexes_[i];
        auto add = [&](std::string_view v) {
            for (const auto& x : out.list)
                if (x.index == i && x.value == v) return;
            out.list.push_back({i, v});
        };
        switch (ix.kind) {
        case Kind::Namespace: add(key.namespace_); break;
        case Kind::Owner: for_each_owner_uid(obj, add); break;
        case Kind::Label:
            for_each_label(obj, [&](std::string_view k, std::string_view v) {
                if (k == ix.label_key) add(v);
            });
            break;
        case Kind::Custom:
            if (out.owned.capacity() < indexes_.size()) out.owned.reserve(indexes_.size());  // views stay valid
            out.owned.push_back(ix.fn(obj));
            for (const auto& v : out.owned.back()) add(v);
            break;
        }
    }

    Values values_locked(const T& obj, KeyView key) const {
        Values out;
        out.list.reserve(indexes_.size());
        for (std::uint32_t i = 0; i < indexes_.size(); ++i) add_values_locked(i, obj, key, out);
        if constexpr (!TypedObject<T>) {
            // Validated now, so that a built-in index first asked for later cannot fail on it.
            for_each_label(obj, [](std::string_view, std::string_view) {});
            for_each_owner_uid(obj, [](std::string_view) {});
        }
        return out;
    }

    void link_locked(Slot& slot, const Values& values) const {
        auto& ms = slot.second.memberships;
        ms.reserve(ms.size() + values.list.size());
        for (const auto& [i, v] : values.list) {
            auto& buckets = indexes_[i]->buckets;
            auto it = buckets.find(v);
            if (it == buckets.end()) it = buckets.emplace(std::string(v), Members{}).first;
            it->second.push_back(&slot);
            ms.push_back({&*it, i, static_cast<std::uint32_t>(it->second.size() - 1)});
        }
    }

    void unlink_locked(Slot& slot) const {
        for (const auto& m : slot.second.memberships) {
            auto& members = m.bucket->second;
            Slot* last = members.back();
            members[m.pos] = last;
            members.pop_back();
            if (last != &slot)
                for (auto& lm : last->second.memberships)
                    if (lm.bucket == m.bucket) {
                        lm.pos = m.pos;
                        break;
                    }
            if (members.empty()) {
                auto& buckets = indexes_[m.index]->buckets;
                buckets.erase(buckets.find(std::string_view(m.bucket->first)));
            }
        }
        slot.second.memberships.clear();
    }

    /// Adds an index and links every object into it; an exception leaves the store unchanged.
    const Index& build_index_locked(Index ix) const {
        auto i = static_cast<std::uint32_t>(indexes_.size());
        indexes_.push_back(std::make_unique<Index>(std::move(ix)));
        std::vector<Values> values;
        std::vector<ObjectPtr> decoded;  // of a compressed store: the values point into them
        try {
            values.reserve(objects_.size());
            for (const auto& [k, e] : objects_) {
                values.emplace_back();
                if (indexes_.back()->kind == Kind::Namespace) {  // from the key: nothing to decode
                    values.back().list.push_back({i, k.namespace_});
                    continue;
                }
                auto obj = object_of(e);
                add_values_locked(i, *obj, k, values.back());
                if (!e.object) decoded.push_back(std::move(obj));
            }
        } catch (...) {
            indexes_.pop_back();
            throw;
        }
        std::size_t n = 0;
        for (auto& slot : objects_) link_locked(slot, values[n++]);
        return *indexes_.back();
    }

    template <class F>
    void with_members(std::string_view index_name, std::string_view value, F&& f) const {
        auto answer = [&](const Index& ix) {
            auto it = ix.buckets.find(value);
            if (it == ix.buckets.end()) return;
            Members sorted = it->second;
            std::sort(sorted.begin(), sorted.end(), [](const Slot* a, const Slot* b) { return a->first < b->first; });
            f(sorted);
        };
        {
            std::shared_lock lk(mu_);
            if (const Index* ix = find_index_locked(index_name)) return answer(*ix);
            if (!index_name.starts_with(label_index_prefix) && index_name != namespace_index && index_name != owner_index)
                throw std::invalid_argument("store: no index named \"" + std::string(index_name) + "\"");
        }
        std::unique_lock lk(mu_);
        const Index* ix = find_index_locked(index_name);
        if (!ix) {
            Index built{std::string(index_name), Kind::Label, {}, {}, {}};
            if (index_name == namespace_index) built.kind = Kind::Namespace;
            else if (index_name == owner_index) built.kind = Kind::Owner;
            else built.label_key = std::string(index_name.substr(label_index_prefix.size()));
            ix = &build_index_locked(std::move(built));
        }
        answer(*ix);
    }

    // Label indexes are built on a reader's first query, so the index state is mutable.
    mutable std::shared_mutex mu_;
    mutable Objects objects_;
    mutable std::vector<std::unique_ptr<Index>> indexes_;
    std::string resource_version_;
    std::unique_ptr<Compressor> compressor_;  // null: objects are kept as they are
    std::size_t recent_whole_;
    std::deque<ObjectPtr> recent_;  // applied objects not compressed yet, oldest first
};

} // namespace vck::runtime
