// Specification of the helpers an operator's reconciler is built from: owner references
// (runtime/owner_reference.hpp), create-or-update (runtime/create_or_update.hpp, over a fake
// client) and read-only cache readers (runtime/cache_reader.hpp, over an in-memory server).
#include <vck/api/core_v1.hpp>
#include <vck/runtime/cache_reader.hpp>
#include <vck/runtime/create_or_update.hpp>
#include <vck/runtime/owner_reference.hpp>

#include "memory_loop.hpp"
#include "no_beast.hpp"

#include <doctest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

using namespace vck;
using runtime::OperationResult;
using runtime::OwnerReferenceError;
using test::configmap;
namespace asio = boost::asio;
namespace json = boost::json;

namespace {

using test::configmaps;

api::ConfigMap typed_configmap(std::string ns, std::string name, std::string uid = {}) {
    api::ConfigMap cm;
    cm.metadata.namespace_ = std::move(ns);
    cm.metadata.name = std::move(name);
    cm.metadata.uid = std::move(uid);
    return cm;
}

api::Namespace typed_namespace(std::string name, std::string uid) {
    api::Namespace n;
    n.metadata.name = std::move(name);
    n.metadata.uid = std::move(uid);
    return n;
}

api::OwnerReference reference(std::string api_version, std::string kind, std::string name, std::string uid,
                              bool controller = false) {
    api::OwnerReference r;
    r.apiVersion = std::move(api_version);
    r.kind = std::move(kind);
    r.name = std::move(name);
    r.uid = std::move(uid);
    if (controller) {
        r.controller = true;
        r.blockOwnerDeletion = true;
    }
    return r;
}

json::value refs_json(const api::ConfigMap& cm) { return api::to_json(cm.metadata.ownerReferences); }

template <class F>
OwnerReferenceError::Reason refusal(F f) {
    try {
        f();
    } catch (const OwnerReferenceError& e) {
        return e.reason();
    }
    FAIL("no OwnerReferenceError");
    return {};
}

/// An API server of ConfigMaps that answers like client::Client's typed verbs, counting calls.
struct FakeClient {
    std::map<std::pair<std::string, std::string>, api::ConfigMap> objects;
    std::optional<client::ApiError> get_error;  // thrown by every get when set
    int gets = 0, creates = 0, replaces = 0;
    std::vector<std::string> replaced_versions;  // the resourceVersion each replace carried
    int next_uid = 1;

    template <class T>
    asio::awaitable<T> get(std::string_view ns, std::string_view name) {
        ++gets;
        if (get_error) throw *get_error;
        auto it = objects.find({std::string(ns), std::string(name)});
        if (it == objects.end())
            throw client::ApiError(client::ErrorKind::NotFound, "GET", std::string(ns) + "/" + std::string(name), "not found");
        co_return it->second;
    }
    asio::awaitable<api::ConfigMap> create(const api::ConfigMap& obj) {
        ++creates;
        api::ConfigMap stored = obj;
        stored.metadata.uid = "uid-" + std::to_string(next_uid++);
        stored.metadata.resourceVersion = "1";
        objects[{obj.metadata.namespace_, obj.metadata.name}] = stored;
        co_return stored;
    }
    asio::awaitable<api::ConfigMap> replace(const api::ConfigMap& obj) {
        ++replaces;
        replaced_versions.push_back(obj.metadata.resourceVersion);
        api::ConfigMap stored = obj;
        stored.metadata.resourceVersion = std::to_string(std::stoi(obj.metadata.resourceVersion) + 1);
        objects[{obj.metadata.namespace_, obj.metadata.name}] = stored;
        co_return stored;
    }
};

/// Runs create_or_update to completion on a private io_context; rethrows what it threw.
template <class Mutate>
OperationResult run_create_or_update(FakeClient& c, api::ConfigMap& obj, Mutate mutate) {
    asio::io_context io;
    std::optional<OperationResult> result;
    std::exception_ptr error;
    asio::co_spawn(io, runtime::create_or_update(c, obj, std::move(mutate)),
                   [&](std::exception_ptr e, OperationResult r) {
                       error = e;
                       if (!e) result = r;
                   });
    io.run();
    if (error) std::rethrow_exception(error);
    return *result;
}

/// A factory over the loop's server, stopped and drained at the end.
struct ListerRig {
    explicit ListerRig(test::MemoryLoop& l) : loop(l), factory(l.server) {}
    ~ListerRig() {
        factory.stop();
        loop.until([&] { return factory.running() == 0; });
    }
    void sync() {
        factory.start();
        REQUIRE(loop.until([&] { return factory.has_synced(); }));
    }
    test::MemoryLoop& loop;
    runtime::SharedInformerFactory factory;
};

template <class Objects>
std::vector<std::string> keys(const Objects& objects) {
    std::vector<std::string> out;
    for (const auto& o : objects) out.push_back(runtime::key_of(*o).namespace_ + "/" + runtime::key_of(*o).name);
    return out;
}

} // namespace

// ---- owner references ----------------------------------------------------------------------

TEST_CASE("set_controller_reference gives the child a controlling, deletion-blocking reference to its owner") {
    auto owner = typed_configmap("ns", "parent", "u-parent");
    auto child = typed_configmap("ns", "child");
    child.metadata.ownerReferences.push_back(reference("v1", "Secret", "other", "u-other"));
    runtime::set_controller_reference(owner, child);
    CHECK(refs_json(child) == api::to_json(std::vector{reference("v1", "Secret", "other", "u-other"),
                                                       reference("v1", "ConfigMap", "parent", "u-parent", true)}));
    CHECK(child.metadata.controller_ref()->uid == "u-parent");

    SUBCASE("a second call changes nothing") {
        auto before = refs_json(child);
        runtime::set_controller_reference(owner, child);
        CHECK(refs_json(child) == before);
    }
    SUBCASE("a recreated owner of the same name takes over its reference in place") {
        owner.metadata.uid = "u-parent-2";
        runtime::set_controller_reference(owner, child);
        REQUIRE(child.metadata.ownerReferences.size() == 2);
        CHECK(child.metadata.ownerReferences[1].uid == "u-parent-2");
    }
}

TEST_CASE("set_controller_reference refuses a child another controller owns, naming both and changing nothing") {
    auto owner = typed_configmap("ns", "parent", "u-parent");
    auto child = typed_configmap("ns", "child");
    child.metadata.ownerReferences.push_back(reference("apps/v1", "Deployment", "web", "u-web", true));
    auto before = refs_json(child);
    try {
        runtime::set_controller_reference(owner, child);
        FAIL("a second controller was accepted");
    } catch (const OwnerReferenceError& e) {
        CHECK(e.reason() == OwnerReferenceError::Reason::AlreadyOwned);
        CHECK(std::string(e.what()).find("ConfigMap parent") != std::string::npos);
        CHECK(std::string(e.what()).find("Deployment web") != std::string::npos);
    }
    CHECK(refs_json(child) == before);
    SUBCASE("while a plain owner reference is still allowed") {
        runtime::set_owner_reference(owner, child);
        CHECK(child.metadata.ownerReferences.size() == 2);
        CHECK(child.metadata.controller_ref()->name == "web");
    }
}

TEST_CASE("set_owner_reference adds a reference without controller or blockOwnerDeletion, once") {
    auto owner = typed_configmap("ns", "parent", "u-parent");
    auto child = typed_configmap("ns", "child");
    runtime::set_owner_reference(owner, child);
    runtime::set_owner_reference(owner, child);
    CHECK(refs_json(child) == api::to_json(std::vector{reference("v1", "ConfigMap", "parent", "u-parent")}));
    SUBCASE("a reference to the same owner under another version of its group is the same reference") {
        auto c2 = typed_configmap("ns", "child");
        auto stale = reference("apps/v1beta1", "Deployment", "web", "u-web");
        stale.unknown["note"] = "kept";
        c2.metadata.ownerReferences.push_back(stale);
        json::value d{{"apiVersion", "apps/v1"}, {"kind", "Deployment"},
                      {"metadata", {{"namespace", "ns"}, {"name", "web"}, {"uid", "u-web"}}}};
        runtime::set_controller_reference(d, c2);
        REQUIRE(c2.metadata.ownerReferences.size() == 1);
        CHECK(c2.metadata.ownerReferences[0].apiVersion == "apps/v1");
        CHECK(c2.metadata.ownerReferences[0].controller == true);
        CHECK(c2.metadata.ownerReferences[0].unknown.at("note") == "kept");
    }
}

TEST_CASE("an owner reference is refused across namespaces, to a cluster-scoped child, and from an owner without uid") {
    using R = OwnerReferenceError::Reason;
    auto owner = typed_configmap("ns", "parent", "u-parent");
    auto elsewhere = typed_configmap("other", "child");
    CHECK(refusal([&] { runtime::set_controller_reference(owner, elsewhere); }) == R::CrossNamespace);
    CHECK(elsewhere.metadata.ownerReferences.empty());
    auto cluster_scoped = typed_namespace("child", "u-ns");
    CHECK(refusal([&] { runtime::set_owner_reference(owner, cluster_scoped); }) == R::ClusterScopedChild);
    auto unsaved = typed_configmap("ns", "parent");
    auto child = typed_configmap("ns", "child");
    CHECK(refusal([&] { runtime::set_controller_reference(unsaved, child); }) == R::NoUid);
    CHECK(child.metadata.ownerReferences.empty());

    SUBCASE("while a cluster-scoped owner may own a namespaced child") {
        runtime::set_controller_reference(typed_namespace("team", "u-team"), child);
        CHECK(refs_json(child) == api::to_json(std::vector{reference("v1", "Namespace", "team", "u-team", true)}));
    }
}

TEST_CASE("untyped JSON owners and children get the same references as typed ones") {
    json::value owner = configmap("ns", "parent");
    owner.at("metadata").as_object()["uid"] = "u-parent";
    json::value child = configmap("ns", "child");
    runtime::set_controller_reference(owner, child);
    runtime::set_controller_reference(owner, child);
    CHECK(child.at("metadata").at("ownerReferences") ==
          api::to_json(std::vector{reference("v1", "ConfigMap", "parent", "u-parent", true)}));

    auto typed_child = typed_configmap("ns", "child");
    runtime::set_controller_reference(owner, typed_child);
    CHECK(refs_json(typed_child) == child.at("metadata").at("ownerReferences"));

    SUBCASE("an untyped owner must say its apiVersion and kind") {
        owner.as_object().erase("kind");
        json::value c2 = configmap("ns", "child");
        CHECK(refusal([&] { runtime::set_owner_reference(owner, c2); }) == OwnerReferenceError::Reason::NoKind);
        CHECK(c2.at("metadata").as_object().if_contains("ownerReferences") == nullptr);
    }
    SUBCASE("another controller of an untyped child is refused") {
        auto other = typed_configmap("ns", "other", "u-other");
        CHECK(refusal([&] { runtime::set_controller_reference(other, child); }) == OwnerReferenceError::Reason::AlreadyOwned);
    }
}

// ---- create_or_update ----------------------------------------------------------------------

TEST_CASE("create_or_update creates an absent object from what mutate made of it") {
    FakeClient c;
    auto cm = typed_configmap("ns", "cfg");
    int mutations = 0;
    auto result = run_create_or_update(c, cm, [&](api::ConfigMap& o) {
        ++mutations;
        o.data["k"] = "v";
    });
    CHECK(result == OperationResult::Created);
    CHECK(mutations == 1);
    CHECK(c.creates == 1);
    CHECK(c.replaces == 0);
    CHECK(c.objects.at({"ns", "cfg"}).data.at("k") == "v");
    CHECK(cm.metadata.uid == "uid-1");  // the server's answer
}

TEST_CASE("create_or_update replaces an existing object only when mutate changed it") {
    FakeClient c;
    auto existing = typed_configmap("ns", "cfg", "uid-9");
    existing.metadata.resourceVersion = "7";
    existing.data["k"] = "old";
    existing.data["kept"] = "yes";
    c.objects[{"ns", "cfg"}] = existing;
    auto desired = [](api::ConfigMap& o) { o.data["k"] = "new"; };

    auto cm = typed_configmap("ns", "cfg");
    CHECK(run_create_or_update(c, cm, desired) == OperationResult::Updated);
    CHECK(c.replaces == 1);
    CHECK(c.replaced_versions == std::vector<std::string>{"7"});  // a stale read gets a Conflict
    CHECK(cm.metadata.resourceVersion == "8");
    CHECK(cm.data.at("kept") == "yes");  // mutate edits what was read, not a blank object

    auto again = typed_configmap("ns", "cfg");
    CHECK(run_create_or_update(c, again, desired) == OperationResult::Unchanged);
    CHECK(c.replaces == 1);
    CHECK(c.creates == 0);
    CHECK(again.metadata.resourceVersion == "8");
}

TEST_CASE("create_or_update refuses a mutate that changes the name or namespace, writing nothing") {
    FakeClient c;
    auto rename = [](api::ConfigMap& o) { o.metadata.name = "renamed"; };
    auto cm = typed_configmap("ns", "cfg");
    CHECK_THROWS_AS(run_create_or_update(c, cm, rename), std::invalid_argument);
    c.objects[{"ns", "cfg"}] = typed_configmap("ns", "cfg", "uid-1");
    auto cm2 = typed_configmap("ns", "cfg");
    CHECK_THROWS_AS(run_create_or_update(c, cm2, [](api::ConfigMap& o) { o.metadata.namespace_ = "elsewhere"; }),
                    std::invalid_argument);
    CHECK(c.creates == 0);
    CHECK(c.replaces == 0);
}

TEST_CASE("create_or_update propagates a read error other than NotFound without writing") {
    FakeClient c;
    c.get_error = client::ApiError(client::ErrorKind::Forbidden, "GET", "/api/v1/namespaces/ns/configmaps/cfg", "no");
    auto cm = typed_configmap("ns", "cfg");
    int mutations = 0;
    try {
        run_create_or_update(c, cm, [&](api::ConfigMap&) { ++mutations; });
        FAIL("the error was swallowed");
    } catch (const client::ApiError& e) {
        CHECK(e.is(client::ErrorKind::Forbidden));
    }
    CHECK(mutations == 0);
    CHECK(c.creates + c.replaces == 0);
}

// ---- cache readers ---------------------------------------------------------------------------

TEST_CASE("a lister gets cached objects by namespace and name, and null for absent ones") {
    test::MemoryLoop loop;
    loop.server->put(configmaps, configmap("a", "one", {{"k", "v"}}));
    ListerRig rig(loop);
    runtime::CacheReader reader(rig.factory);
    auto cms = reader.lister<api::ConfigMap>();
    rig.sync();
    CHECK(cms.has_synced());
    auto got = reader.get<api::ConfigMap>("a", "one");
    static_assert(std::is_same_v<decltype(got), std::shared_ptr<const api::ConfigMap>>, "read-only snapshots");
    REQUIRE(got);
    CHECK(got->data.at("k") == "v");
    CHECK(cms.get(runtime::ObjectKey{"a", "one"}) == got);
    CHECK_FALSE(cms.get("b", "one"));
    CHECK_FALSE(cms.get("a", "two"));

    SUBCASE("and sees a change once the informer has cached it") {
        loop.server->put(configmaps, configmap("a", "two"));
        REQUIRE(loop.until([&] { return cms.get("a", "two") != nullptr; }));
        CHECK(rig.factory.size() == 1);  // the reader shares the factory's one informer
    }
}

TEST_CASE("a lister lists by namespace and label selector, in key order") {
    test::MemoryLoop loop;
    loop.server->put(configmaps, configmap("b", "web-2", {}, json::object({{"app", "web"}, {"tier", "front"}})));
    loop.server->put(configmaps, configmap("a", "web-1", {}, json::object({{"app", "web"}, {"tier", "back"}})));
    loop.server->put(configmaps, configmap("a", "db", {}, json::object({{"app", "db"}})));
    loop.server->put(configmaps, configmap("b", "plain"));
    ListerRig rig(loop);
    runtime::CacheReader reader(rig.factory);
    auto typed = reader.lister<api::ConfigMap>();
    auto untyped = reader.lister(configmaps);
    rig.sync();

    auto both = [&](std::string_view ns, std::string_view selector) {
        auto t = keys(typed.list(ns, selector));
        CHECK(keys(untyped.list(ns, selector)) == t);
        return t;
    };
    using V = std::vector<std::string>;
    CHECK(both("", "") == V{"a/db", "a/web-1", "b/plain", "b/web-2"});
    CHECK(both("b", "") == V{"b/plain", "b/web-2"});
    CHECK(both("", "app=web") == V{"a/web-1", "b/web-2"});
    CHECK(both("a", "app=web") == V{"a/web-1"});
    CHECK(both("", "app in (web),tier!=back") == V{"b/web-2"});
    CHECK(both("", "app notin (web)") == V{"a/db", "b/plain"});
    CHECK(both("", "!app") == V{"b/plain"});
    CHECK(both("a", "tier") == V{"a/web-1"});
    CHECK(both("c", "") == V{});
    CHECK(typed.list("", api::LabelSelector::nothing()).empty());
    CHECK(keys(reader.list<api::ConfigMap>("a")) == V{"a/db", "a/web-1"});
}
