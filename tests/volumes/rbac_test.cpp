// Specification of deploy/ (rendered by `kubectl kustomize`): the ClusterRole and the leader
// election Role allow every call vck-controller makes, and nothing it does not make. The
// calls are taken from the sandbox's audit hook while the controller runs every kind of
// volume through deploy, failure, leader election and deletion; the test's own changes go
// to the store in-process and are not audited.
#include <vck/api/yaml.hpp>
#include <vck/volumes/volume_manager_controller.hpp>
#include "../support/eventually.hpp"
#include "../support/ready_node.hpp"
#include "../support/sandbox_server.hpp"

#include <doctest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <set>
#include <thread>
#include <tuple>

using namespace vck;
namespace json = boost::json;
using testing::ResourceId;
using test::eventually;

namespace {

std::filesystem::path root() {
    const char* r = std::getenv("VCK_SOURCE_ROOT");
    return r ? r : ".";
}

std::string run_output(const std::string& cmd) {
    std::unique_ptr<FILE, int (*)(FILE*)> p(popen(cmd.c_str(), "r"), pclose);
    REQUIRE(p);
    std::string out;
    std::array<char, 4096> buf{};
    std::size_t n;
    while ((n = std::fread(buf.data(), 1, buf.size(), p.get())) > 0) out.append(buf.data(), n);
    return out;
}

/// (apiGroup, resource, verb) triples.
using Grant = std::tuple<std::string, std::string, std::string>;

std::set<Grant> grants_of(const json::value& role) {
    std::set<Grant> out;
    for (const auto& rule : role.at("rules").as_array())
        for (const auto& g : rule.at("apiGroups").as_array())
            for (const auto& r : rule.at("resources").as_array())
                for (const auto& v : rule.at("verbs").as_array())
                    out.emplace(std::string(g.as_string()), std::string(r.as_string()), std::string(v.as_string()));
    return out;
}

const ResourceId vm_id{"vck.intelai.org", "v1alpha1", "volumemanagers"};
const ResourceId pod_id{"", "v1", "pods"};
const ResourceId pvcs{"", "v1", "persistentvolumeclaims"};

json::array items(testing::ObjectStore& s, const ResourceId& id, const std::string& ns) {
    return s.list(id, ns).at("items").as_array();
}

} // namespace

TEST_CASE("deploy/ grants exactly the API calls vck-controller makes") {
    const char* kubectl = std::getenv("KUBECTL");
    std::string rendered = run_output(std::string(kubectl && *kubectl ? kubectl : "kubectl") + " kustomize " +
                                      (root() / "deploy").string());
    auto docs = api::yaml_documents(rendered, "kubectl kustomize deploy");
    std::set<Grant> cluster, leases;
    json::value crd;
    for (const auto& d : docs) {
        auto kind = api::string_at(d, {"kind"});
        if (kind == "ClusterRole") cluster = grants_of(d);
        if (kind == "Role") leases = grants_of(d);
        if (kind == "CustomResourceDefinition") crd = d;
        if (kind == "Deployment") {
            auto& c = d.at("spec").at("template").at("spec").at("containers").at(0);
            CHECK(c.at("securityContext").at("readOnlyRootFilesystem") == true);
            CHECK(d.at("spec").at("template").at("spec").at("securityContext").at("runAsNonRoot") == true);
            CHECK(c.as_object().contains("livenessProbe"));
            CHECK(c.as_object().contains("readinessProbe"));
        }
    }
    REQUIRE(!cluster.empty());
    REQUIRE(!leases.empty());
    REQUIRE(crd.is_object());
    for (const auto& [g, r, v] : cluster) {
        CHECK_MESSAGE(r != "*", "no wildcard resources");
        CHECK_MESSAGE(v != "*", "no wildcard verbs");
    }

    // The controller's calls, from a sandbox of its own.
    test::SandboxServer server;
    server.start();
    auto& store = server.store();
    store.create(ResourceId{"apiextensions.k8s.io", "v1", "customresourcedefinitions"}, "", crd);
    for (const char* ns : {"vck-system", "data"})
        store.create(ResourceId{"", "v1", "namespaces"}, "", json::value{{"metadata", {{"name", ns}}}});
    for (int i = 1; i <= 2; ++i) {
        std::string n = "node-" + std::to_string(i);
        test::create_ready_node(store, n, {{"disk", "ssd"}});
    }
    store.create(ResourceId{"", "v1", "secrets"}, "data",
                 json::value{{"metadata", {{"name", "creds"}, {"namespace", "data"}}},
                             {"data", {{"awsAccessKeyID", "eA=="}, {"awsSecretAccessKey", "eA=="}}}});
    std::mutex mu;
    std::set<std::tuple<std::string, std::string, std::string, std::string>> calls;  // group, resource, verb, ns
    server.set_audit([&](const testing::AuditRecord& r) {
        std::lock_guard lk(mu);
        calls.emplace(r.api_group, r.resource.empty() ? r.path : r.resource, r.verb, r.namespace_);
    });

    runtime::ClusterManagerOptions mo;
    mo.config = server.config();
    mo.handle_signals = false;
    runtime::LeaderElectionOptions le;
    le.namespace_ = "vck-system";
    le.name = "vck-controller.vck.intelai.org";
    le.identity = "rbac-test";
    mo.leader_election = le;
    volumes::ControllerOptions co;
    co.reconciler.pending_recheck = std::chrono::milliseconds(200);
    co.reconciler.cleanup_recheck = std::chrono::milliseconds(200);
    co.reconciler.copies.max_download_attempts = 1;  // the failing volume fails at once
    co.reconciler.refusal_backoff = std::chrono::milliseconds(50);
    auto m = std::make_unique<runtime::ClusterManager>(mo);
    volumes::add_volume_manager_controller(*m, handlers::HandlerRegistry::with_builtin_handlers(), co);
    std::thread t([&] { m->run(); });

    auto vol = [](std::string id, std::string type, json::object options, std::string access) {
        return json::value{{"id", id}, {"replicas", 1}, {"sourceType", type}, {"accessMode", access},
                           {"capacity", "1Gi"}, {"labels", {{"k", "v"}}}, {"options", std::move(options)}};
    };
    json::array volumes{
        vol("s3", "S3", {{"sourceURL", "s3://b/p/"}, {"awsCredentialsSecretName", "creds"}}, "ReadWriteOnce"),
        vol("failing", "S3-Dev", {{"sourceURL", "s3://b/q/"}, {"awsCredentialsSecretName", "creds"}}, "ReadWriteOnce"),
        vol("nfs", "NFS", {{"server", "10.0.0.1"}, {"path", "/x"}}, "ReadWriteMany"),
        vol("local", "Local", {{"path", "/var/datasets/local"}}, "ReadOnlyMany")};
    // The first two rounds of pod creates are refused: the second round repeats the first
    // round's CreateRefused events, which the recorder counts by patching them.
    server.faults().fail_next({.verb = "create", .resource = "pods", .code = 422, .count = 4,
                               .message = "Pod is invalid: refused by the rbac test"});
    store.create(vm_id, "data",
                 json::value{{"apiVersion", "vck.intelai.org/v1alpha1"}, {"kind", "VolumeManager"},
                             {"metadata", {{"name", "all"}, {"namespace", "data"}}},
                             {"spec", {{"volumeConfigs", volumes}}}});
    REQUIRE(eventually([&] { return items(store, pod_id, "data").size() == 2; }));
    for (const auto& p : items(store, pod_id, "data")) {
        std::string name(api::string_at(p, {"metadata", "name"}));
        store.bind("data", name, json::value{{"metadata", {{"name", name}}}, {"target", {{"kind", "Node"}, {"name", "node-1"}}}});
        bool failing = api::string_at(p, {"metadata", "labels", "vcid"}) == "failing";
        store.patch(pod_id, "data", name, client::PatchType::Merge,
                    json::value{{"status", {{"phase", failing ? "Failed" : "Succeeded"}}}}, "status");
    }
    // Failed for the failing download (not still for the refused creates): the S3 copy is
    // ready (its node labelled) and the failed one's log has been read.
    REQUIRE(eventually([&] {
        auto vm = store.get(vm_id, "data", "all");
        if (api::string_at(vm, {"status", "state"}) != "Failed") return false;
        bool s3_ready = false, download_failed = false;
        boost::system::error_code ec;
        const auto* vols = vm.find_pointer("/status/volumes", ec);
        if (!vols || !vols->is_array()) return false;
        for (const auto& v : vols->as_array()) {
            auto id = api::string_at(v, {"id"});
            auto message = api::string_at(v, {"message"});
            if (id == "s3") s3_ready = message == "success";
            if (id == "failing") download_failed = message.starts_with("error during data download");
        }
        return s3_ready && download_failed;
    }));
    store.remove(vm_id, "data", "all");
    REQUIRE(eventually([&] {
        for (const auto& p : items(store, pod_id, "data")) {
            if (!p.at("spec").at("containers").at(0).at("args").at(0).as_string().starts_with("delete")) continue;
            std::string name(api::string_at(p, {"metadata", "name"}));
            auto phase = api::string_at(p, {"status", "phase"});
            if (phase != "Succeeded")
                store.patch(pod_id, "data", name, client::PatchType::Merge, json::value{{"status", {{"phase", "Succeeded"}}}},
                            "status");
        }
        try {
            store.get(vm_id, "data", "all");
            return false;
        } catch (const std::exception&) {
            return true;
        }
    }));
    m->request_stop();
    t.join();
    server.set_audit({});

    std::set<Grant> used_cluster, used_leases;
    for (const auto& [g, r, v, ns] : calls) {
        if (r.starts_with("/")) continue;  // discovery and health paths need no RBAC rules
        Grant grant{g, r, v};
        if (g == "coordination.k8s.io") {
            CHECK_MESSAGE(ns == "vck-system", "leases only in the controller's namespace");
            CHECK_MESSAGE(leases.contains(grant), (g + " " + r + " " + v + " is used but not granted by the Role"));
            used_leases.insert(grant);
        } else {
            CHECK_MESSAGE(cluster.contains(grant), (g + "/" + r + " " + v + " is used but not granted by the ClusterRole"));
            used_cluster.insert(grant);
        }
    }
    for (const auto& [g, r, v] : cluster)
        CHECK_MESSAGE(used_cluster.contains(Grant{g, r, v}), (g + "/" + r + " " + v + " is granted but never used"));
    for (const auto& [g, r, v] : leases)
        CHECK_MESSAGE(used_leases.contains(Grant{g, r, v}), (g + "/" + r + " " + v + " is granted but never used"));
}
