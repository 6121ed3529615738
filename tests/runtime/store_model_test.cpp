// The store against a model: random event sequences (adds, updates that move labels, owners
// and nodes, deletes, relists, bookmarks) are applied both to a Store and to a plain std::map
// that answers every query by rescanning. After each step every get/list/by_index must agree.
// Seeded and reproducible: VCK_SEED=<n> replays a run; a failure prints the seed and sequence.
// A compressed store (StoreOptions::compressed) must give the same answers, as equal copies.
#include <vck/api/json.hpp>
#include <vck/runtime/store.hpp>

#include <doctest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

using vck::runtime::Change;
using vck::runtime::ChangeType;
using vck::runtime::ObjectKey;
using vck::runtime::Store;

namespace {

struct ModelPod {
    vck::api::ObjectMeta metadata;
    std::string nodeName;
};
BOOST_DESCRIBE_STRUCT(ModelPod, (), (metadata, nodeName))

/// What the generator decides about one object version; turned into either representation.
struct Shape {
    ObjectKey key;
    std::string rv;
    vck::api::Labels labels;
    std::vector<std::string> owners;
    std::string node;
};

const std::vector<std::string> namespaces{"", "a", "b"};
const std::vector<std::string> object_names{"p0", "p1", "p2", "p3", "p4", "p5"};
const std::vector<std::string> label_keys{"app", "tier"};
const std::vector<std::string> label_values{"x", "y", "z"};
const std::vector<std::string> owner_uids{"u1", "u2", "u3", "u4"};
const std::vector<std::string> nodes{"n1", "n2", ""};

std::shared_ptr<const ModelPod> make(const Shape& s, ModelPod*) {
    auto p = std::make_shared<ModelPod>();
    p->metadata.namespace_ = s.key.namespace_;
    p->metadata.name = s.key.name;
    p->metadata.resourceVersion = s.rv;
    p->metadata.labels = s.labels;
    for (const auto& o : s.owners) {
        vck::api::OwnerReference r;
        r.uid = o;
        r.name = "owner-" + o;
        p->metadata.ownerReferences.push_back(std::move(r));
    }
    p->nodeName = s.node;
    return p;
}

std::shared_ptr<const boost::json::value> make(const Shape& s, boost::json::value*) {
    boost::json::object meta{{"name", s.key.name}, {"resourceVersion", s.rv}};
    if (!s.key.namespace_.empty()) meta["namespace"] = s.key.namespace_;
    if (!s.labels.empty()) {
        boost::json::object l;
        for (const auto& [k, v] : s.labels) l[k] = v;
        meta["labels"] = std::move(l);
    }
    if (!s.owners.empty()) {
        boost::json::array refs;
        for (const auto& o : s.owners) refs.push_back(boost::json::object{{"uid", o}, {"kind", "X"}});
        meta["ownerReferences"] = std::move(refs);
    }
    boost::json::object spec;
    if (!s.node.empty()) spec["nodeName"] = s.node;
    return std::make_shared<const boost::json::value>(boost::json::object{{"metadata", std::move(meta)}, {"spec", std::move(spec)}});
}

std::vector<std::string> node_index(const ModelPod& p) {
    if (p.nodeName.empty()) return {};
    return {p.nodeName};
}
std::vector<std::string> node_index(const boost::json::value& v) {
    auto n = vck::api::string_at(v, {"spec", "nodeName"});
    if (n.empty()) return {};
    return {std::string(n)};
}

template <class T>
struct ModelEntry {
    Shape shape;
    std::shared_ptr<const T> object;
};

template <class T>
class Run {
public:
    Run(std::uint64_t seed, bool compressed, std::size_t recent_whole)
        : rng_(seed), compressed_(compressed), store_(vck::runtime::StoreOptions{compressed, recent_whole}) {
        store_.add_index("node", [](const T& o) { return node_index(o); });
    }

    /// One random step on both sides. Returns a description for the failure message.
    std::string step() {
        int dice = pick(100);
        if (dice < 50) return upsert();
        if (dice < 55) return replay();
        if (dice < 80) return remove();
        if (dice < 95) return relist();
        auto rv = next_rv();
        store_.bookmark(rv);
        model_rv_ = rv;
        return "BOOKMARK " + rv;
    }

    bool failed() const { return failed_; }

    /// Compares every query the store answers with the model's rescans.
    void compare() {
        for (const auto& ns : namespaces)
            for (const auto& n : object_names) {
                ObjectKey k{ns, n};
                auto it = model_.find(k);
                auto got = store_.get(k);
                agree(same(got, it == model_.end() ? nullptr : it->second.object), "get(" + k.str() + ")");
            }
        std::vector<std::shared_ptr<const T>> all;
        for (const auto& [k, e] : model_) all.push_back(e.object);
        agree(same(store_.list(), all), "list()");
        agree(store_.size() == model_.size(), "size()");
        agree(store_.resource_version() == model_rv_, "resource_version(): store " + store_.resource_version() + ", model " + model_rv_);
        for (const auto& ns : namespaces)
            check_index("namespace", ns, [&](const Shape& s) { return s.key.namespace_ == ns; });
        for (const auto& u : owner_uids)
            check_index("owner", u, [&](const Shape& s) { return std::find(s.owners.begin(), s.owners.end(), u) != s.owners.end(); });
        for (const auto& n : nodes)
            check_index("node", n, [&](const Shape& s) { return !s.node.empty() && s.node == n; });
        for (const auto& lk : label_keys)
            for (const auto& lv : label_values)
                check_index("label:" + lk, lv, [&](const Shape& s) {
                    auto it = s.labels.find(lk);
                    return it != s.labels.end() && it->second == lv;
                });
        check_index("label:absent", "x", [](const Shape&) { return false; });
    }

private:
    /// The very snapshot; of a compressed store, an equal copy.
    bool same(const std::shared_ptr<const T>& a, const std::shared_ptr<const T>& b) const {
        if (!compressed_ || !a || !b) return a == b;
        return json(*a) == json(*b);
    }
    bool same(const std::vector<std::shared_ptr<const T>>& a, const std::vector<std::shared_ptr<const T>>& b) const {
        return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [&](const auto& x, const auto& y) { return same(x, y); });
    }
    static boost::json::value json(const T& o) {
        if constexpr (std::is_same_v<T, boost::json::value>) return o;
        else return vck::api::to_json(o);
    }

    void agree(bool ok, const std::string& what) {
        if (ok) return;
        failed_ = true;
        FAIL_CHECK("store and model disagree on " << what);
    }

    template <class Pred>
    void check_index(const std::string& index, const std::string& value, Pred pred) {
        std::vector<std::shared_ptr<const T>> want;
        for (const auto& [k, e] : model_)
            if (pred(e.shape)) want.push_back(e.object);
        agree(same(store_.by_index(index, value), want), "by_index(" + index + ", " + value + ")");
    }

    int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
    template <class V>
    const auto& any(const V& v) { return v[static_cast<std::size_t>(pick(static_cast<int>(v.size())))]; }
    std::string next_rv() { return std::to_string(++rv_counter_); }

    Shape random_shape(ObjectKey key) {
        Shape s;
        s.key = std::move(key);
        s.rv = next_rv();
        for (const auto& lk : label_keys)
            if (pick(3) != 0) s.labels[lk] = any(label_values);
        for (int i = pick(3); i > 0; --i) s.owners.push_back(any(owner_uids));  // duplicates happen, as in the wild
        s.node = any(nodes);
        return s;
    }

    ObjectKey random_key() { return ObjectKey{any(namespaces), any(object_names)}; }

    std::string upsert() {
        auto shape = random_shape(random_key());
        auto obj = make(shape, static_cast<T*>(nullptr));
        auto type = pick(2) ? ChangeType::Added : ChangeType::Modified;
        auto it = model_.find(shape.key);
        auto want_old = it == model_.end() ? nullptr : it->second.object;
        if (pick(2)) {
            agree(same(store_.apply(type, obj), want_old), "the object replaced by " + std::string(to_string(type)));
        } else {  // as the reflector applies watch events; a fresh version is never a replay
            auto change = store_.apply_event(type, obj);
            auto want_type = want_old ? ChangeType::Modified : ChangeType::Added;
            agree(change && change->type == want_type && change->object == obj && same(change->old, want_old),
                  "apply_event(" + std::string(to_string(type)) + ") of a new version");
        }
        std::string what = std::string(to_string(type)) + " " + shape.key.str() + " rv " + shape.rv;
        model_rv_ = shape.rv;
        auto key = shape.key;  // the right side of = is evaluated first and moves shape
        model_[key] = {std::move(shape), std::move(obj)};
        return what;
    }

    /// A watch event carrying the version already cached (a watch resumed from an older
    /// version sends it again): apply_event() records the version and changes nothing else.
    std::string replay() {
        if (model_.empty()) return upsert();
        auto it = model_.begin();
        std::advance(it, pick(static_cast<int>(model_.size())));
        auto again = make(it->second.shape, static_cast<T*>(nullptr));  // an equal copy, not the cached snapshot
        auto type = pick(2) ? ChangeType::Added : ChangeType::Modified;
        agree(!store_.apply_event(type, again), "apply_event() of the cached version of " + it->first.str());
        model_rv_ = it->second.shape.rv;
        return "REPLAYED " + std::string(to_string(type)) + " " + it->first.str() + " rv " + it->second.shape.rv;
    }

    std::string remove() {
        // The final state a watch reports for a delete is a fresh version of the object.
        auto shape = random_shape(random_key());
        auto it = model_.find(shape.key);
        auto want_old = it == model_.end() ? nullptr : it->second.object;
        agree(same(store_.apply({ChangeType::Deleted, make(shape, static_cast<T*>(nullptr)), nullptr}), want_old),
              "the object DELETED removed");
        model_.erase(shape.key);
        model_rv_ = shape.rv;
        return "DELETED " + shape.key.str() + " rv " + shape.rv;
    }

    std::string relist() {
        std::vector<std::shared_ptr<const T>> list;
        for (const auto& [k, e] : model_) {
            int fate = pick(3);  // 0: vanished, 1: unchanged (same snapshot), 2: changed
            if (fate == 1) list.push_back(e.object);
            if (fate == 2) list.push_back(make(random_shape(k), static_cast<T*>(nullptr)));
        }
        for (int i = pick(4); i > 0; --i)  // new keys, sometimes one already listed
            list.push_back(make(random_shape(random_key()), static_cast<T*>(nullptr)));
        // Half the lists come in key order, as an API server lists (duplicates keep their
        // order, so the last listed still wins), half shuffled: replace() has a path for each.
        if (pick(2) == 0) std::shuffle(list.begin(), list.end(), rng_);
        else std::stable_sort(list.begin(), list.end(), [](const auto& a, const auto& b) {
            return vck::runtime::key_of(*a) < vck::runtime::key_of(*b);
        });
        std::map<ObjectKey, ModelEntry<T>> fresh;
        for (const auto& o : list) fresh[vck::runtime::key_of(*o)] = {shape_of(*o), o};  // the last listed wins
        std::vector<Change<T>> want;
        auto oi = model_.begin();
        auto ni = fresh.begin();
        while (oi != model_.end() || ni != fresh.end()) {
            if (ni == fresh.end() || (oi != model_.end() && oi->first < ni->first)) {
                want.push_back({ChangeType::Deleted, oi->second.object, nullptr});
                ++oi;
            } else if (oi == model_.end() || ni->first < oi->first) {
                want.push_back({ChangeType::Added, ni->second.object, nullptr});
                ++ni;
            } else {
                if (oi->second.shape.rv != ni->second.shape.rv)
                    want.push_back({ChangeType::Modified, ni->second.object, oi->second.object});
                ++oi;
                ++ni;
            }
        }
        auto rv = next_rv();
        auto got = store_.replace(list, rv);
        agree(got.size() == want.size(), "how many changes replace() reports");
        for (std::size_t i = 0; i < std::min(got.size(), want.size()); ++i)
            agree(got[i].type == want[i].type && same(got[i].object, want[i].object) && same(got[i].old, want[i].old),
                  "replace() change #" + std::to_string(i) + " (" + std::string(to_string(got[i].type)) + " " +
                      vck::runtime::key_of(*got[i].object).str() + ")");
        model_ = std::move(fresh);
        model_rv_ = rv;
        return "REPLACE " + std::to_string(list.size()) + " objects, rv " + rv;
    }

    static Shape shape_of(const T& o) {
        Shape s;
        s.key = vck::runtime::key_of(o);
        s.rv = vck::runtime::resource_version_of(o);
        s.labels = vck::runtime::labels_of(o);
        s.owners = vck::runtime::owner_uids_of(o);
        auto n = node_index(o);
        s.node = n.empty() ? "" : n.front();
        return s;
    }

    std::mt19937_64 rng_;
    bool compressed_;
    Store<T> store_;
    std::map<ObjectKey, ModelEntry<T>> model_;
    std::string model_rv_;
    std::uint64_t rv_counter_ = 0;
    bool failed_ = false;
};

std::uint64_t base_seed() {
    if (const char* s = std::getenv("VCK_SEED")) return std::strtoull(s, nullptr, 10);
    return 20261122;
}

template <class T>
void run_sequences(int sequences, int steps, bool compressed = false, std::size_t recent_whole = 0) {
    const auto seed = base_seed();
    for (int i = 0; i < sequences; ++i) {
        const auto seq_seed = seed + static_cast<std::uint64_t>(i);
        INFO("replay with VCK_SEED=", seed, " (sequence ", i, ", its seed ", seq_seed, ")");
        Run<T> run(seq_seed, compressed, recent_whole);
        for (int s = 0; s < steps; ++s) {
            auto what = run.step();
            INFO("step ", s, ": ", what);
            run.compare();
            if (run.failed()) break;
        }
        REQUIRE_FALSE(run.failed());  // the first diverging sequence is the useful one
    }
}

} // namespace

TEST_CASE("a typed-object store agrees with a rescanned model over thousands of random event sequences") {
    run_sequences<ModelPod>(2000, 30);
}

TEST_CASE("a JSON-object store agrees with a rescanned model over thousands of random event sequences") {
    run_sequences<boost::json::value>(1000, 30);
}

TEST_CASE("a compressed typed-object store agrees with the model too, answering with equal copies") {
    run_sequences<ModelPod>(400, 30, true, 0);  // every object compressed at once
    run_sequences<ModelPod>(200, 30, true, 4);  // the 4 most recent kept whole, the rest compressed
}

TEST_CASE("a compressed JSON-object store agrees with the model too, answering with equal copies") {
    run_sequences<boost::json::value>(200, 30, true, 0);
    run_sequences<boost::json::value>(100, 30, true, 4);
}
