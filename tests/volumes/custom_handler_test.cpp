// Specification of a user-registered source type served by the controller: the
// custom-handler example's GitRepo (examples/custom-handler/git_handler.hpp), a
// DownloadHandler like S3 and Pachyderm, is placed, reported and removed as they are.
#include "../../examples/custom-handler/git_handler.hpp"

#include "harness.hpp"

using namespace vck;
using namespace vck::test;

TEST_CASE("a user-registered GitRepo source type clones onto nodes, reports a hostPath, and is removed with its labels") {
    auto ns = fresh_namespace();
    auto registry = handlers::HandlerRegistry::with_builtin_handlers();
    registry.add("GitRepo", example::GitHandler("git:test"));
    CHECK(registry.unknown_type_message("X").find("GitRepo") != std::string::npos);
    Controller c({}, std::move(registry));
    create_vm(ns, "repo", json::array{volume("code", "GitRepo",
                                             {{"repository", "https://example.com/r.git"}, {"revision", "v1; reboot"}},
                                             2)});
    REQUIRE(eventually([&] { return count_pods(ns) == 2; }));
    for (const auto& p : items(pods, ns)) {
        auto args = p.at("spec").at("containers").at(0).at("args").as_array();
        REQUIRE(args.size() == 7);
        CHECK(json::array(args.begin(), args.begin() + 6) ==
              json::array{"clone", "--depth=1", "--branch", "v1; reboot", "--", "https://example.com/r.git"});
        // Into its copy's own directory, which the prepare init container hands to the clone.
        CHECK(args.at(6).as_string().starts_with("/vck/datasets/vck-resource-"));
        CHECK(args.at(6).as_string().ends_with("/repo"));
        CHECK(p.at("spec").at("containers").at(0).at("image") == "git:test");
    }
    run_pods(ns, "Succeeded");
    REQUIRE_MESSAGE(eventually([&] { return state_of(ns, "repo") == "Running"; }), dump(ns, "repo"));
    auto v0 = get_vm(ns, "repo").at("status").at("volumes").at(0);
    CHECK(api::string_at(v0, {"volumeSource", "hostPath", "path"}).starts_with("/var/datasets/vck-resource-"));
    std::string key = affinity_label_key(v0);
    REQUIRE(count_nodes_labelled(key) == 2);

    store().remove(vms, ns, "repo");
    REQUIRE(eventually([&] { return only_cleanup_pods(ns, 2); }));
    run_pods(ns, "Succeeded");
    REQUIRE(eventually([&] { return get_vm(ns, "repo").is_null(); }));
    CHECK(count_nodes_labelled(key) == 0);
}
