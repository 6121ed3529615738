// The configmap-mirror operator against the sandbox: copies appear in labelled namespaces,
// follow their source, and disappear when the source or the namespace's label goes.
#include "mirror.hpp"

#include <vck/sandbox/eventually.hpp>
#include <vck/sandbox/test_environment.hpp>

#include <doctest.h>

#include <thread>

using namespace vck;
namespace json = boost::json;

namespace {

/// One API server for the whole file (vck's public test kit: vck-sandbox).
sandbox::TestEnvironment& server() {
    static sandbox::TestEnvironment env;
    return env;
}
const sandbox::ResourceId cms{"", "v1", "configmaps"};
const sandbox::ResourceId nss{"", "v1", "namespaces"};

using sandbox::eventually;

void make_namespace(const std::string& name, bool enabled) {
    json::object labels;
    if (enabled) labels[std::string(mirror::enabled_label)] = "true";
    server().apply(json::value{{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", name}, {"labels", labels}}}});
}

std::optional<json::value> find(const std::string& ns, const std::string& name) {
    try {
        return server().store().get(cms, ns, name);
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

} // namespace

TEST_CASE("a labelled ConfigMap is mirrored into exactly the enabled namespaces and follows its source") {
    make_namespace("src", false);
    make_namespace("team-a", true);
    make_namespace("team-b", true);
    make_namespace("private", false);
    server().store().create(cms, "src",
                            json::value{{"metadata", {{"name", "shared"}, {"labels", {{std::string(mirror::source_label), "true"}}}}},
                                        {"data", {{"greeting", "hello"}}}});
    runtime::ClusterManagerOptions o;
    o.config = server().config();
    o.handle_signals = false;
    runtime::ClusterManager m(o);
    mirror::Operator op(m);
    std::thread t([&] { m.run(); });

    CHECK(eventually([] { return find("team-a", "shared") && find("team-b", "shared"); }));
    CHECK_FALSE(find("private", "shared"));
    CHECK(find("team-a", "shared")->at("data").at("greeting") == "hello");

    // The source changes: copies follow.
    auto src = server().store().get(cms, "src", "shared");
    src.as_object()["data"].as_object()["greeting"] = "bonjour";
    server().store().update(cms, "src", "shared", src);
    CHECK(eventually([] {
        auto a = find("team-a", "shared"), b = find("team-b", "shared");
        return a && b && a->at("data").at("greeting") == "bonjour" && b->at("data").at("greeting") == "bonjour";
    }));

    // A new enabled namespace gets a copy; a hand-edited copy is put back.
    make_namespace("team-c", true);
    CHECK(eventually([] { return find("team-c", "shared").has_value(); }));
    auto copy = *find("team-a", "shared");
    copy.as_object()["data"].as_object()["greeting"] = "tampered";
    server().store().update(cms, "team-a", "shared", copy);
    CHECK(eventually([] { return find("team-a", "shared")->at("data").at("greeting") == "bonjour"; }));

    // A namespace that opts out loses its copy; the operator caches only enabled namespaces.
    auto team_b = server().store().get(nss, "", "team-b");
    team_b.at("metadata").at("labels").as_object()[std::string(mirror::enabled_label)] = "false";
    server().store().update(nss, "", "team-b", team_b);
    CHECK(eventually([] { return !find("team-b", "shared"); }));
    CHECK(find("team-a", "shared").has_value());
    auto cached = m.informers().informer<api::Namespace>();
    CHECK(eventually([&] { return !cached->store().get(runtime::ObjectKey{"", "team-b"}); }));
    CHECK_FALSE(cached->store().get(runtime::ObjectKey{"", "private"}));
    CHECK(cached->store().get(runtime::ObjectKey{"", "team-a"}));

    // The source goes: every copy goes.
    server().store().remove(cms, "src", "shared");
    CHECK(eventually([] { return !find("team-a", "shared") && !find("team-c", "shared"); }));

    // The operator told `kubectl describe` about its work.
    auto events = server().store().list(sandbox::ResourceId{"", "v1", "events"}, "src").at("items").as_array();
    CHECK(events.size() >= 1);
    m.request_stop();
    t.join();
}
