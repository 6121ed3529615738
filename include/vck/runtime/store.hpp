// Store: the informer's thread-safe cache of one resource type (client-go cache.Indexer,
// kube-rs reflector Store), keyed by namespace/name, holding immutable shared snapshots
// (std::shared_ptr<const T>) so reads never deep-copy. Guarantees: after every apply(),
// replace() and add_index(), get/list/by_index answer exactly what a rescan of the objects
// would (old index entries are removed on update and delete); a call that throws (bad object,
// index function error) leaves the store unchanged; apply_event() and replace() report what
// they did as Changes (change.hpp). Built-in indexes, each built on its first
// query (an index nobody asks for costs nothing): "namespace", "owner" (owner reference uids),
// "label:<key>" (that label's value, for any key); add_index() adds more. A compressed store
// (StoreOptions::compressed) keeps each object zstd-compressed instead, for a tenth of the
// memory: every read then decodes a fresh snapshot, and the answers are otherwise the same.
#pragma once

#include <vck/runtime/change.hpp>
#include <vck/runtime/kube_object.hpp>
#include <vck/runtime/object_compressor.hpp>
#include <vck/runtime/object_key.hpp>

#include <boost/unordered/unordered_flat_set.hpp>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
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

    /// apply() for a watch event, returning the change as handlers see it (change.hpp): Added
    /// for a key not cached (whatever the event's type), Modified with the replaced state,
    /// Deleted with the event's object (its last state). Nothing for a delete of a key not
    /// cached, nor for an event that replays what the cache holds (a watch resumed from an
    /// older version): an Added or Modified object whose resourceVersion equals the cached
    /// one's only records the version. One lookup, where has_version() then apply() take two.
    std::optional<Change<T>> apply_event(ChangeType type, ObjectPtr obj) {
        auto [old, replayed] = apply_locked(type, obj, true);
        if (replayed || (type == ChangeType::Deleted && !old)) return std::nullopt;
        if (type == ChangeType::Deleted) return Change<T>{type, std::move(obj), nullptr};
        if (!old) return Change<T>{ChangeType::Added, std::move(obj), nullptr};
        return Change<T>{ChangeType::Modified, std::move(obj), std::move(old)};
    }
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
        struct Listed {  // each key once, in the list's order (slots outlive replaced duplicates)
            const Slot* slot;
            std::size_t hash;
        };
        std::vector<Listed> listed_keys;
        listed_keys.reserve(all.size());
        for (auto& o : all) {
            if (!o) throw std::invalid_argument("store: replace with a null object");
            auto key = key_view_of(*o);
            if (key.name.empty()) throw std::invalid_argument("store: replace with an object that has no metadata.name");
            Probe probe{key};
            auto it = fresh.find(probe);
            Slot* slot = it != fresh.end() ? it->slot.get() : insert_locked(fresh, probe);
            if (it == fresh.end()) listed_keys.push_back({slot, probe.hash});
            slot->key = key;  // the last of duplicates wins: its own strings key the slot
            slot->entry.object = std::move(o);
        }
        std::vector<Values> values;
        values.reserve(fresh.size());
        for (const auto& r : fresh) values.push_back(values_locked(*r.slot->entry.object, r.slot->key));  // may throw
        struct Keyed {
            KeyView key;
            Change<T> change;
        };
        auto by_key = [](const Keyed& a, const Keyed& b) { return a.key < b.key; };
        // Added and Modified in the list's order, Deleted apart: an API server lists in key
        // order, so the first are usually sorted already and a merge puts them all in key order
        // without sorting thousands of keys (a tenth of a large sync's CPU).
        std::vector<Keyed> in_list, gone;
        for (const auto& r : objects_)
            if (!fresh.contains(Probe{r.slot->key, r.hash}))
                gone.push_back({r.slot->key, {ChangeType::Deleted, object_of(r.slot->entry), nullptr}});
        in_list.reserve(listed_keys.size());
        for (const auto& [slot, hash] : listed_keys) {
            const Slot& now = *slot;
            auto oi = objects_.find(Probe{now.key, hash});
            if (oi == objects_.end()) in_list.push_back({now.key, {ChangeType::Added, now.entry.object, nullptr}});
            else if (const Entry& e = oi->slot->entry;
                     e.object != now.entry.object && version_of(e) != resource_version_view(*now.entry.object))
                in_list.push_back({now.key, {ChangeType::Modified, now.entry.object, object_of(e)}});
        }
        std::sort(gone.begin(), gone.end(), by_key);
        std::vector<Keyed> keyed;
        keyed.reserve(in_list.size() + gone.size());
        if (std::is_sorted(in_list.begin(), in_list.end(), by_key)) {
            std::merge(std::make_move_iterator(in_list.begin()), std::make_move_iterator(in_list.end()),
                       std::make_move_iterator(gone.begin()), std::make_move_iterator(gone.end()), std::back_inserter(keyed), by_key);
        } else {
            std::move(in_list.begin(), in_list.end(), std::back_inserter(keyed));
            std::move(gone.begin(), gone.end(), std::back_inserter(keyed));
            std::sort(keyed.begin(), keyed.end(), by_key);
        }
        std::vector<Change<T>> changes;
        changes.reserve(keyed.size());
        for (auto& c : keyed) changes.push_back(std::move(c.change));
        keyed.clear();  // its keys may point into entries replaced below
        for (auto& ix : indexes_) ix->buckets.clear();
        objects_ = std::move(fresh);
        std::size_t i = 0;
        for (auto& r : objects_) link_locked(*r.slot, values[i++]);  // the same order as `values`
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
        auto it = objects_.find(Probe{key});
        return it == objects_.end() ? nullptr : object_of(it->slot->entry);
    }

    /// Whether `key` is cached (no decode, even when compressed).
    bool contains(const ObjectKey& key) const {
        std::shared_lock lk(mu_);
        return objects_.contains(Probe{view_of(key)});
    }

    /// Whether the object cached under `key` has resourceVersion `rv` (no decode, even when
    /// compressed): a watch event that replays it changes nothing.
    bool has_version(KeyView key, std::string_view rv) const {
        std::shared_lock lk(mu_);
        auto it = objects_.find(Probe{key});
        return it != objects_.end() && version_of(it->slot->entry) == rv;
    }

    /// Every object, in key order (sorted per call: the cache itself is a hash map).
    std::vector<ObjectPtr> list() const {
        std::shared_lock lk(mu_);
        auto slots = sorted_slots_locked();
        std::vector<ObjectPtr> out;
        out.reserve(slots.size());
        for (const Slot* s : slots) out.push_back(object_of(s->entry));
        return out;
    }

    /// Every key, in order.
    std::vector<ObjectKey> keys() const {
        std::shared_lock lk(mu_);
        auto slots = sorted_slots_locked();
        std::vector<ObjectKey> out;
        out.reserve(slots.size());
        for (const Slot* s : slots) out.push_back(s->key.key());
        return out;
    }

    /// The objects whose index `index_name` has `value`, in key order. Throws
    /// std::invalid_argument for an index that does not exist. A built-in index is built on
    /// its first query and kept up to date from then on.
    std::vector<ObjectPtr> by_index(std::string_view index_name, std::string_view value) const {
        std::vector<ObjectPtr> out;
        with_members(index_name, value, [&](const Members& m) {
            out.reserve(m.size());
            for (const Slot* s : m) out.push_back(object_of(s->entry));
        });
        return out;
    }

    std::vector<ObjectKey> keys_by_index(std::string_view index_name, std::string_view value) const {
        std::vector<ObjectKey> out;
        with_members(index_name, value, [&](const Members& m) {
            out.reserve(m.size());
            for (const Slot* s : m) out.push_back(s->key.key());
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
    // watch event's one lookup in a cache far larger than the CPU's: each object has a slot
    // (allocated once per key, so it never moves) keyed by views into the object's own
    // immutable snapshot (or compressed form), so no key is copied. The slots are found through
    // an open-addressing table of {hash, slot pointer} (boost::unordered_flat_set: one probe of
    // a small metadata array, then one 16-byte element), so a lookup touches only the table, the
    // slot and the cached object, which the event needs anyway; a chained table (std::
    // unordered_map) walks nodes of other keys on the way, each a cache miss. An index maps each
    // value to the slots that have it, and each entry remembers where it sits in every bucket, so
    // unlinking is O(1) per membership and never calls an index function again. Only index
    // values are copied, once per distinct value.
    enum class Kind { Namespace, Owner, Label, Custom };
    struct Slot;
    /// A slot as the table holds it: with its key's hash, so growing the table and comparing
    /// with other keys' slots never reads a slot.
    struct Ref {
        std::size_t hash;
        std::unique_ptr<Slot> slot;
    };
    /// A key looked up, hashed once.
    struct Probe {
        KeyView key;
        std::size_t hash;
        explicit Probe(KeyView k) : key(k), hash(hash_key(k.namespace_, k.name)) {}
        Probe(KeyView k, std::size_t h) : key(k), hash(h) {}
    };
    struct RefHash {
        using is_transparent = void;
        std::size_t operator()(const Ref& r) const noexcept { return r.hash; }
        std::size_t operator()(const Probe& p) const noexcept { return p.hash; }
    };
    struct RefEq {
        using is_transparent = void;
        static bool same(std::size_t h, const KeyView& k, const Ref& r) noexcept { return h == r.hash && k == r.slot->key; }
        bool operator()(const Ref& a, const Ref& b) const noexcept { return same(a.hash, a.slot->key, b); }
        bool operator()(const Probe& p, const Ref& r) const noexcept { return same(p.hash, p.key, r); }
        bool operator()(const Ref& r, const Probe& p) const noexcept { return same(p.hash, p.key, r); }
    };
    using Objects = boost::unordered_flat_set<Ref, RefHash, RefEq>;
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
    struct Slot {
        KeyView key;  // views into entry.object or entry.packed
        Entry entry;
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

    struct Applied {
        ObjectPtr old;          // the object replaced or removed, if any
        bool replayed = false;  // the cached object already had this version: nothing changed
    };
    Applied apply_locked(ChangeType type, ObjectPtr obj, bool skip_replay) {
        if (!obj) throw std::invalid_argument(std::string("store: ") + std::string(to_string(type)) + " event without an object");
        auto key = key_view_of(*obj);
        if (key.name.empty())
            throw std::invalid_argument(std::string("store: ") + std::string(to_string(type)) + " object has no metadata.name");
        auto rv = resource_version_view(*obj);
        Probe probe{key};
        std::unique_lock lk(mu_);
        auto it = objects_.find(probe);
        Slot* slot = it != objects_.end() ? it->slot.get() : nullptr;
        if (slot && skip_replay && type != ChangeType::Deleted && version_of(slot->entry) == rv) {
            resource_version_.assign(rv);
            return {nullptr, true};
        }
        ObjectPtr old = slot ? object_of(slot->entry) : nullptr;  // may throw: before any change
        if (type == ChangeType::Deleted) {
            if (slot) {
                unlink_locked(*slot);
                objects_.erase(it);
            }
            resource_version_.assign(rv);
            return {std::move(old), false};
        }
        auto values = values_locked(*obj, key);  // may throw: before any change
        if (slot) {
            // The slot is kept (index members point at it); its key is re-pointed into the new
            // snapshot, since the old one may be released (same strings, so the same hash).
            unlink_locked(*slot);
            slot->key = key;
            slot->entry.object = obj;
            slot->entry.packed = {};
        } else {
            slot = insert_locked(objects_, probe);  // keyed by `key`; may throw (memory): before any change
            slot->entry.object = obj;
        }
        link_locked(*slot, values);
        resource_version_.assign(rv);
        age_locked(slot->entry.object);
        return {std::move(old), false};
    }

    /// A new, empty slot for a key `table` does not have yet.
    static Slot* insert_locked(Objects& table, const Probe& probe) {
        auto slot = std::make_unique<Slot>(Slot{probe.key, {}});
        Slot* raw = slot.get();
        table.insert(Ref{probe.hash, std::move(slot)});
        return raw;
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
            auto it = objects_.find(Probe{key_view_of(*oldest)});
            if (it != objects_.end() && it->slot->entry.object == oldest) pack_locked(*it->slot);
        }
    }

    /// Compresses a linked entry in place when the store is compressed: the slot stays where it
    /// is (index members point at it), re-keyed by views into its compressed form. Should
    /// compressing fail, the entry stays whole, which every reader serves as well.
    void pack_locked(Slot& slot) noexcept {
        if (!compressor_ || !slot.entry.object) return;
        CompressedObject packed;
        try {
            packed = compressor_->compress(*slot.entry.object);
        } catch (...) {
            return;
        }
        slot.entry.packed = std::move(packed);
        slot.entry.object.reset();
        slot.key = KeyView{slot.entry.packed.namespace_(), slot.entry.packed.name()};
    }

    static bool key_less(const Slot* a, const Slot* b) { return a->key < b->key; }

    /// Every entry, in key order.
    std::vector<const Slot*> sorted_slots_locked() const {
        std::vector<const Slot*> slots;
        slots.reserve(objects_.size());
        for (const auto& r : objects_) slots.push_back(r.slot.get());
        std::sort(slots.begin(), slots.end(), key_less);
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
        auto& ms = slot.entry.memberships;
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
        for (const auto& m : slot.entry.memberships) {
            auto& members = m.bucket->second;
            Slot* last = members.back();
            members[m.pos] = last;
            members.pop_back();
            if (last != &slot)
                for (auto& lm : last->entry.memberships)
                    if (lm.bucket == m.bucket) {
                        lm.pos = m.pos;
                        break;
                    }
            if (members.empty()) {
                auto& buckets = indexes_[m.index]->buckets;
                buckets.erase(buckets.find(std::string_view(m.bucket->first)));
            }
        }
        slot.entry.memberships.clear();
    }

    /// Adds an index and links every object into it; an exception leaves the store unchanged.
    const Index& build_index_locked(Index ix) const {
        auto i = static_cast<std::uint32_t>(indexes_.size());
        indexes_.push_back(std::make_unique<Index>(std::move(ix)));
        std::vector<Values> values;
        std::vector<ObjectPtr> decoded;  // of a compressed store: the values point into them
        try {
            values.reserve(objects_.size());
            for (const auto& r : objects_) {
                const Slot& s = *r.slot;
                values.emplace_back();
                if (indexes_.back()->kind == Kind::Namespace) {  // from the key: nothing to decode
                    values.back().list.push_back({i, s.key.namespace_});
                    continue;
                }
                auto obj = object_of(s.entry);
                add_values_locked(i, *obj, s.key, values.back());
                if (!s.entry.object) decoded.push_back(std::move(obj));
            }
        } catch (...) {
            indexes_.pop_back();
            throw;
        }
        std::size_t n = 0;
        for (auto& r : objects_) link_locked(*r.slot, values[n++]);
        return *indexes_.back();
    }

    template <class F>
    void with_members(std::string_view index_name, std::string_view value, F&& f) const {
        auto answer = [&](const Index& ix) {
            auto it = ix.buckets.find(value);
            if (it == ix.buckets.end()) return;
            Members sorted = it->second;
            std::sort(sorted.begin(), sorted.end(), key_less);
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
