// Specification of the custom-handler example: a source type registered by user code is
// served by the same controller as the built-ins (tests/controller's harness runs it).
#include "git_handler.hpp"

#include "../../tests/controller/harness.hpp"

using namespace vck;
using namespace vck::test;

TEST_CASE("a user-registered GitRepo source type clones onto nodes and reports a hostPath") {
    auto ns = fresh_namespace();
    auto registry = handlers::HandlerRegistry::with_builtin_handlers();
    registry.add("GitRepo", example::GitHandler("git:test"));
    CHECK(registry.unknown_type_message("X").find("GitRepo") != std::string::npos);
    Controller c({}, std::move(registry));
    create_vm(ns, "repo", json::array{volume("code", "GitRepo",
                                             {{"repository", "https://example.com/r.git"}, {"revision", "v1; reboot"}})});
    REQUIRE(eventually([&] { return count_pods(ns) == 1; }));
    auto args = items(pods, ns).at(0).at("spec").at("containers").at(0).at("args").as_array();
    CHECK(args == json::array{"clone", "--depth=1", "--branch", "v1; reboot", "--", "https://example.com/r.git",
                              "/vck/data/repo"});
    run_pods(ns, "Succeeded");
    REQUIRE_MESSAGE(eventually([&] { return state_of(ns, "repo") == "Running"; }), dump(ns, "repo"));
    auto v0 = get_vm(ns, "repo").at("status").at("volumes").at(0);
    CHECK(api::string_at(v0, {"volumeSource", "hostPath", "path"}).starts_with("/var/datasets/vck-resource-"));
}

TEST_CASE("the GitRepo handler validates its options with clear messages") {
    example::GitHandler h;
    api::VolumeConfig vc;
    vc.id = "v";
    vc.replicas = 1;
    vc.accessMode = "ReadWriteOnce";
    vc.labels = {{"a", "b"}};
    CHECK(h.validate(vc) == std::optional<std::string>("repository has to be set in options"));
    vc.options["repository"] = "file:///etc";
    CHECK(h.validate(vc) == std::optional<std::string>("repository has to be an https:// URL"));
    vc.options["repository"] = "https://example.com/r.git";
    CHECK_FALSE(h.validate(vc));
}
