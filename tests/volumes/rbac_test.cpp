// Specification of deploy/ (rendered by `kubectl kustomize`): the ClusterRole and the leader
// election Role allow every call vck-controller makes, and nothing it does not make; and
// without any one of their grants the controller reports the refusal instead of failing silently. The
// calls are taken from the sandbox's audit hook while the controller runs every kind of
// volume through deploy, failure, leader election and deletion; the test's own changes go
// to the store in-process and are not audited.
#include <vck/api/yaml.hpp>
#include <vck/runtime/log.hpp>
#include <vck/sandbox/cluster/storage_protection.hpp>
#include <vck/volumes/pod_injection.hpp>
#include <vck/volumes/s3_source_listing.hpp>
#include <vck/volumes/volume_manager_controller.hpp>
#include <vck/volumes/webhook_serving.hpp>
#include "../support/eventually.hpp"
#include "../support/ready_node.hpp"
#include "../support/sandbox_server.hpp"

#include <doctest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>
#include <set>
#include <string_view>
#include <thread>
#include <tuple>
#include <vector>

using namespace vck;
namespace json = boost::json;
using sandbox::ResourceId;
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

json::array items(sandbox::ObjectStore& s, const ResourceId& id, const std::string& ns) {
    return s.list(id, ns).at("items").as_array();
}

/// deploy/ as `kubectl kustomize deploy` renders it.
std::vector<json::value> deploy_documents() {
    const char* kubectl = std::getenv("KUBECTL");
    std::string rendered = run_output(std::string(kubectl && *kubectl ? kubectl : "kubectl") + " kustomize " +
                                      (root() / "deploy").string());
    return api::yaml_documents(rendered, "kubectl kustomize deploy");
}

/// vck-controller as deploy/ runs it (leader election in vck-system), against `config`, with
/// short rechecks, one download attempt (the failing volume fails at once) and a short
/// refusal backoff.
std::unique_ptr<runtime::ClusterManager> deploy_controller(client::Config config, std::string identity, bool watch_secrets = true) {
    runtime::ClusterManagerOptions mo;
    mo.config = std::move(config);
    mo.handle_signals = false;
    runtime::LeaderElectionOptions le;
    le.namespace_ = "vck-system";
    le.name = "vck-controller.vck.intelai.org";
    le.identity = std::move(identity);
    mo.leader_election = le;
    volumes::ControllerOptions co;
    co.reconciler.pending_recheck = std::chrono::milliseconds(200);
    co.reconciler.cleanup_recheck = std::chrono::milliseconds(200);
    co.reconciler.copies.max_download_attempts = 1;
    co.reconciler.refusal_backoff = std::chrono::milliseconds(50);
    co.watch_secrets = watch_secrets;
    co.reconciler.list_source = volumes::list_s3_source;  // as vck-controller: a refresh reads its Secret
    auto m = std::make_unique<runtime::ClusterManager>(mo);
    volumes::add_volume_manager_controller(*m, handlers::HandlerRegistry::with_builtin_handlers(), co);
    return m;
}

/// vck-controller's self-managed webhook certificate work, as deploy/ runs it at start, twice:
/// once creating the Secret, once renewing it after its certificate was spoiled (so get,
/// create and update are all used). Returns what refused it, or "" when nothing did.
std::string run_self_managed_certificate(test::SandboxServer& server, const client::Config& config) {
    volumes::WebhookServingOptions o;
    o.self_managed = true;
    o.certificate.namespace_ = "vck-system";
    o.certificate.service = "vck-webhook";
    o.cert_dir = std::filesystem::temp_directory_path() / ("vck-rbac-certs-" + std::to_string(::getpid()));
    std::string error;
    try {
        volumes::prepare_self_managed_certificate(config, o);
        server.store().patch(ResourceId{"", "v1", "secrets"}, "vck-system", "vck-webhook-server-cert",
                             client::PatchType::Merge, json::value{{"data", {{"tls.crt", "c3BvaWx0"}}}});
        volumes::prepare_self_managed_certificate(config, o);
    } catch (const std::exception& e) {
        error = e.what();
    }
    std::filesystem::remove_all(o.cert_dir);
    return error;
}

/// A pod that names volume "s3" of VolumeManager "all", as the pod injection webhook admits it
/// before the data is there: gated (the controller lifts the gate once the copy is Ready).
void create_injected_pod(test::SandboxServer& server) {
    auto vm = api::from_json<api::VolumeManager>(server.store().get(vm_id, "data", "all"));
    json::value pod{{"apiVersion", "v1"}, {"kind", "Pod"},
                    {"metadata", {{"name", "reader"}, {"namespace", "data"},
                                  {"labels", {{std::string(volumes::volume_manager_label), "all"}}},
                                  {"annotations", {{std::string(volumes::volumes_annotation), "s3"}}}}},
                    {"spec", {{"containers", json::array{{{"name", "c"}, {"image", "busybox"}}}}}}};
    auto decision = volumes::inject_pod(pod, "data", &vm, handlers::HandlerRegistry::with_builtin_handlers());
    REQUIRE(decision.allowed);
    REQUIRE(decision.gated);
    server.store().create(pod_id, "data", decision.pod);
}

bool injected_pod_ungated(sandbox::ObjectStore& store) {
    auto p = store.get(pod_id, "data", "reader");
    const auto* gates = p.at("spec").as_object().if_contains("schedulingGates");
    return !gates || gates->as_array().empty();
}

/// The user's part of deleting a VolumeManager: its pods go with it (Kubernetes keeps a claim
/// while a scheduled pod names it, so the VolumeManager's cleanup would wait for them).
void delete_with_its_pods(sandbox::ObjectStore& store) {
    store.remove(vm_id, "data", "all");
    sandbox::StoreDeleteOptions now;
    now.grace_period_seconds = 0;
    try {
        store.remove(pod_id, "data", "reader", now);
    } catch (const sandbox::StoreError&) {
    }
}

/// Whether a grant is one of the self-managed webhook certificate's (used at start only).
bool certificate_grant(const std::string& group, const std::string& resource, const std::string& verb) {
    return group == "admissionregistration.k8s.io" ||
           (resource == "secrets" && (verb == "get" || verb == "create" || verb == "update"));
}

/// The VolumeManager "all" in namespace data: one volume of each kind the controller calls
/// differently for (an S3 copy, with `s3_replicas` 2 filled by peer fill, whose certificate
/// Secret the controller makes; a failing S3-Dev download, NFS whose PV is retained, Local);
/// and a claim of a vck StorageClass (the provisioner's calls). The first two rounds
/// of pod creates are refused, so the second round repeats the first round's CreateRefused
/// events, which the recorder counts by patching them.
/// A download pod's end as the kubelet reports it: Failed, or Succeeded with vck-fetch's
/// summary (its listing's digest too: the copy a refresh compares with).
json::value finished_status(bool failing) {
    if (failing) return json::value{{"status", {{"phase", "Failed"}}}};
    json::object terminated{{"exitCode", 0}, {"reason", "Completed"},
                            {"message", R"({"command":"fetch","files":1,"skipped":0,"bytes":1,"skippedBytes":0,)"
                                        R"("seconds":1,"errors":0,"exitCode":0,"listingDigest":"rbac"})"}};
    json::object fetch{{"name", "fetch"}, {"ready", false}, {"restartCount", 0}, {"image", "vck-fetch"}, {"imageID", ""},
                       {"state", {{"terminated", terminated}}}};
    return json::value{{"status", {{"phase", "Succeeded"}, {"containerStatuses", json::array{fetch}}}}};
}

/// Whether the refresh the rbac tests ask for has been answered (tried, whatever came of it).
bool refresh_answered(const json::value& vm) {
    boost::system::error_code ec;
    const auto* r = vm.find_pointer("/status/refreshes/0/request", ec);
    return r && r->is_string() && r->as_string() == "rbac";
}

void create_all_volumes(test::SandboxServer& server, int s3_replicas = 1) {
    auto vol = [](std::string id, std::string type, json::object options, std::string access, int replicas = 1) {
        return json::value{{"id", id}, {"replicas", replicas}, {"sourceType", type}, {"accessMode", access},
                           {"capacity", "1Gi"}, {"labels", {{"k", "v"}}}, {"options", std::move(options)}};
    };
    json::array volumes{
        // Refreshed once settled (the annotation below): its Secret read, its listing refused
        // by a closed port (nothing leaves the machine).
        vol("s3", "S3", {{"sourceURL", "s3://b/p/"}, {"awsCredentialsSecretName", "creds"}, {"endpointURL", "http://127.0.0.1:1"}},
            "ReadWriteOnce", s3_replicas),
        vol("failing", "S3-Dev", {{"sourceURL", "s3://b/q/"}, {"awsCredentialsSecretName", "creds"}}, "ReadWriteOnce"),
        vol("nfs", "NFS", {{"server", "10.0.0.1"}, {"path", "/x"}, {"reclaimPolicy", "Retain"}}, "ReadWriteMany"),
        vol("local", "Local", {{"path", "/var/datasets/local"}}, "ReadOnlyMany")};
    server.faults().fail_next({.verb = "create", .resource = "pods", .code = 422, .count = 4,
                               .message = "Pod is invalid: refused by the rbac test"});
    server.store().create(vm_id, "data",
                          json::value{{"apiVersion", "vck.intelai.org/v1alpha1"}, {"kind", "VolumeManager"},
                                      {"metadata", {{"name", "all"}, {"namespace", "data"},
                                                    {"annotations", {{std::string(volumes::refresh_annotation), "rbac"}}}}},
                                      {"spec", {{"volumeConfigs", volumes}}}});
    create_injected_pod(server);
    // A claim of a vck StorageClass, its node selected (the scheduler's part): provisioned.
    server.store().create(ResourceId{"storage.k8s.io", "v1", "storageclasses"}, "",
                          json::value{{"metadata", {{"name", "vck-scratch"}}},
                                      {"provisioner", std::string(volumes::provisioner_name)},
                                      {"volumeBindingMode", "WaitForFirstConsumer"}});
    server.store().create(pvcs, "data",
                          json::value{{"metadata", {{"name", "scratch"}, {"namespace", "data"},
                                                    {"annotations", {{std::string(volumes::selected_node_annotation), "node-1"}}}}},
                                      {"spec", {{"storageClassName", "vck-scratch"},
                                                {"accessModes", json::array{"ReadWriteOnce"}},
                                                {"resources", {{"requests", {{"storage", "1Gi"}}}}}}}});
}

} // namespace

TEST_CASE("deploy/ grants exactly the API calls vck-controller makes") {
    auto docs = deploy_documents();
    std::set<Grant> cluster, leases, certificate;
    json::value crd;
    std::vector<json::value> webhook_configurations;
    for (const auto& d : docs) {
        auto kind = api::string_at(d, {"kind"});
        auto name = api::string_at(d, {"metadata", "name"});
        if (kind == "ClusterRole") cluster = grants_of(d);
        if (kind == "Role" && name == "vck-controller-leader-election") leases = grants_of(d);
        if (kind == "Role" && name == "vck-controller-webhook-certificate") certificate = grants_of(d);
        if (kind == "MutatingWebhookConfiguration" || kind == "ValidatingWebhookConfiguration")
            webhook_configurations.push_back(d);
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
    REQUIRE(!certificate.empty());
    REQUIRE(webhook_configurations.size() == 2);
    REQUIRE(crd.is_object());
    for (const auto& [g, r, v] : cluster) {
        CHECK_MESSAGE(r != "*", "no wildcard resources");
        CHECK_MESSAGE(v != "*", "no wildcard verbs");
    }

    // The controller's calls, from a sandbox of its own.
    test::SandboxServer server;
    server.start();
    // kube-controller-manager's pvc/pv-protection: the claims VCK deletes carry their finalizers.
    sandbox::StorageProtectionController protection(server.store());
    protection.start();
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
    server.set_audit([&](const sandbox::AuditRecord& r) {
        std::lock_guard lk(mu);
        calls.emplace(r.api_group, r.resource.empty() ? r.path : r.resource, r.verb, r.namespace_);
    });

    for (const auto& w : webhook_configurations) {
        auto info = store.find_kind(api::string_at(w, {"apiVersion"}), api::string_at(w, {"kind"}));
        REQUIRE(info);
        store.create(ResourceId{info->group, info->version, info->plural}, "", w);
    }
    CHECK(run_self_managed_certificate(server, server.config()) == "");

    auto m = deploy_controller(server.config(), "rbac-test");
    std::thread t([&] { m->run(); });
    create_all_volumes(server, 2);
    auto download_pods = [&] {
        json::array out;
        for (const auto& p : items(store, pod_id, "data"))
            if (api::string_at(p, {"metadata", "name"}) != "reader" &&
                !api::string_at(p, {"metadata", "name"}).starts_with("vck-claim-"))
                out.push_back(p);
        return out;
    };
    // The claim's: its pod finishes (the kubelet's part) and its PV is made.
    REQUIRE(eventually([&] {
        for (const auto& p : items(store, pod_id, "data")) {
            std::string name(api::string_at(p, {"metadata", "name"}));
            if (!name.starts_with("vck-claim-") || api::string_at(p, {"status", "phase"}) == "Succeeded") continue;
            store.patch(pod_id, "data", name, client::PatchType::Merge, json::value{{"status", {{"phase", "Succeeded"}}}},
                        "status");
        }
        auto claim = store.get(ResourceId{"", "v1", "persistentvolumeclaims"}, "data", "scratch");
        try {
            store.get(ResourceId{"", "v1", "persistentvolumes"}, "", "pvc-" + std::string(api::string_at(claim, {"metadata", "uid"})));
            return true;
        } catch (const std::exception&) {
            return false;
        }
    }));
    // The kubelet's part, as the download pods come (the second S3 replica's once the first's
    // has ended: it has no address here to pull from).
    std::set<std::string> finished;
    auto finish_downloads = [&] {
        for (const auto& p : download_pods()) {
            std::string name(api::string_at(p, {"metadata", "name"}));
            if (!finished.insert(name).second) continue;
            store.bind("data", name, json::value{{"metadata", {{"name", name}}}, {"target", {{"kind", "Node"}, {"name", "node-1"}}}});
            bool failing = api::string_at(p, {"metadata", "labels", "vcid"}) == "failing";
            store.patch(pod_id, "data", name, client::PatchType::Merge,
                        finished_status(failing), "status");
        }
    };
    // Failed for the failing download (not still for the refused creates): the S3 copies are
    // ready (their nodes labelled) and the failed one's log has been read.
    REQUIRE(eventually([&] {
        finish_downloads();
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
        return s3_ready && download_failed && refresh_answered(vm);
    }));
    CHECK(eventually([&] { return injected_pod_ungated(store); }));
    delete_with_its_pods(store);
    REQUIRE(eventually([&] {
        for (const auto& p : download_pods()) {
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

    std::set<Grant> used_cluster, used_leases, used_certificate;
    for (const auto& [g, r, v, ns] : calls) {
        if (r.starts_with("/")) continue;  // discovery and health paths need no RBAC rules
        Grant grant{g, r, v};
        if (r == "secrets" && ns == "vck-system" && certificate_grant(g, r, v)) {
            CHECK_MESSAGE(certificate.contains(grant), (r + " " + v + " is used but not granted by the certificate Role"));
            used_certificate.insert(grant);
        } else if (g == "coordination.k8s.io") {
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
    for (const auto& [g, r, v] : certificate)
        CHECK_MESSAGE(used_certificate.contains(Grant{g, r, v}), (g + "/" + r + " " + v + " is granted but never used"));
}

namespace {

/// The controller's view of one missing grant: what an operator can read about it.
struct Reports {
    std::mutex mu;
    std::vector<std::string> log;
    void add(std::string_view line) {
        std::lock_guard lk(mu);
        log.emplace_back(line);
    }
    /// Where `text` was reported: "log", "events" or "status" (comma-separated), or empty.
    std::string where(sandbox::ObjectStore& store, const std::string& text) {
        std::string out;
        auto add = [&](const char* channel) { out += out.empty() ? channel : std::string(",") + channel; };
        {
            // A log line quotes a value holding quotes (key="...\"nodes\"..."), as JSON does.
            auto quoted = json::serialize(json::value(text));
            auto escaped = quoted.substr(1, quoted.size() - 2);
            std::lock_guard lk(mu);
            if (std::any_of(log.begin(), log.end(), [&](const std::string& l) {
                    return l.find(text) != std::string::npos || l.find(escaped) != std::string::npos;
                }))
                add("log");
        }
        for (const auto& e : items(store, ResourceId{"", "v1", "events"}, "data"))
            if (api::string_at(e, {"message"}).find(text) != std::string::npos) {
                add("events");
                break;
            }
        try {
            auto vm = store.get(vm_id, "data", "all");
            if (const auto* st = vm.as_object().if_contains("status"); st && json::serialize(*st).find(text) != std::string::npos)
                add("status");
        } catch (const std::exception&) {
        }
        return out;
    }
};

/// deploy/'s rendered objects, the ClusterRole and Role without `drop`.
std::vector<json::value> deploy_without(const std::vector<json::value>& docs, const Grant& drop) {
    std::vector<json::value> out;
    for (auto d : docs) {
        auto kind = api::string_at(d, {"kind"});
        if (kind == "ClusterRole" || kind == "Role") {
            const auto& [g, r, v] = drop;
            auto has = [](const json::value& list, const std::string& x) {
                const auto& a = list.as_array();
                return std::any_of(a.begin(), a.end(), [&](const json::value& e) { return e.as_string() == x; });
            };
            json::array rules;
            for (auto rule : d.at("rules").as_array()) {
                if (has(rule.at("apiGroups"), g) && has(rule.at("resources"), r) && has(rule.at("verbs"), v)) {
                    // Split the rule: every other resource keeps the verb, `r` loses it.
                    json::array others, verbs;
                    for (const auto& e : rule.at("resources").as_array())
                        if (e.as_string() != r) others.push_back(e);
                    for (const auto& e : rule.at("verbs").as_array())
                        if (e.as_string() != v) verbs.push_back(e);
                    if (!others.empty()) {
                        json::value o = rule;
                        o.as_object()["resources"] = others;
                        rules.push_back(std::move(o));
                    }
                    if (!verbs.empty()) {
                        rule.as_object()["resources"] = json::array{json::string(r)};
                        rule.as_object()["verbs"] = verbs;
                        rules.push_back(std::move(rule));
                    }
                } else {
                    rules.push_back(std::move(rule));
                }
            }
            d.as_object()["rules"] = std::move(rules);
        }
        out.push_back(std::move(d));
    }
    return out;
}

} // namespace

// Least privilege, rule by rule: with any one grant of deploy/'s roles taken away, the
// controller (as deploy/'s ServiceAccount) runs into the refusal and says so where an operator
// looks: the VolumeManager's events or status, or its log for what concerns no one object (a
// list or watch its caches need, its Lease, an event it could not write). It neither ends nor
// goes quiet; only a lost Lease ends it, as leader election must.
TEST_CASE("without any one of deploy/'s grants, vck-controller reports the 403 and keeps running") {
    auto docs = deploy_documents();
    std::vector<Grant> grants;
    for (const auto& d : docs) {
        auto kind = api::string_at(d, {"kind"});
        if (kind == "ClusterRole" || kind == "Role")
            for (const auto& g : grants_of(d)) grants.push_back(g);
    }
    REQUIRE(grants.size() >= 20);

    // Each grant alone; then both Secret grants, by a controller told not to watch Secrets
    // (docs/ops.md): it needs neither.
    struct Case {
        std::vector<Grant> drop;
        bool watch_secrets = true;
    };
    std::vector<Case> cases;
    for (const auto& g : grants) cases.push_back({{g}});
    cases.push_back({{Grant{"", "secrets", "list"}, Grant{"", "secrets", "watch"}}, false});
    const std::string sa_user = "system:serviceaccount:vck-system:vck-controller";
    std::string summary;  // where each refusal was reported
    for (const auto& c : cases) {
        const auto& [group, resource, verb] = c.drop.front();
        const bool needs_none = !c.watch_secrets;
        CAPTURE(needs_none);
        CAPTURE(group);
        CAPTURE(resource);
        CAPTURE(verb);
        test::SandboxServer server;
        server.start();
        // kube-controller-manager's pvc/pv-protection: the claims VCK deletes carry their finalizers.
        sandbox::StorageProtectionController protection(server.store());
        protection.start();
        auto& store = server.store();
        store.create(ResourceId{"", "v1", "namespaces"}, "", json::value{{"metadata", {{"name", "data"}}}});
        auto objects = docs;
        for (const auto& g : c.drop) objects = deploy_without(objects, g);
        for (const auto& d : objects) {
            auto kind = api::string_at(d, {"kind"});
            if (kind == "Deployment") continue;  // this controller runs here, in the test
            auto info = store.find_kind(api::string_at(d, {"apiVersion"}), kind);
            REQUIRE_MESSAGE(info, "deploy/ holds a kind the sandbox serves: " << kind);
            store.create(ResourceId{info->group, info->version, info->plural},
                         std::string(api::string_at(d, {"metadata", "namespace"})), d);
        }
        test::create_ready_node(store, "node-1", {{"disk", "ssd"}});
        store.create(ResourceId{"", "v1", "secrets"}, "data",
                     json::value{{"metadata", {{"name", "creds"}, {"namespace", "data"}}},
                                 {"data", {{"awsAccessKeyID", "eA=="}, {"awsSecretAccessKey", "eA=="}}}});
        const std::string refused_certificate_as = "cannot " + verb + " resource \"" + resource + "\"";

        Reports reports;
        log::set_sink([&](std::string_view l) { reports.add(l); });
        // As deploy/'s ServiceAccount: its token, not the sandbox admin's client certificate.
        auto config = server.config();
        config.client_cert_pem.clear();
        config.client_key_pem.clear();
        config.token = server.add_user(sa_user, {"system:serviceaccounts", "system:serviceaccounts:vck-system"});
        // The certificate work runs before the controller starts; what refuses it ends the
        // start with the refusal's message (bin/vck_controller.cpp logs it and exits).
        const std::string certificate_error = run_self_managed_certificate(server, config);
        if (certificate_grant(group, resource, verb) && !needs_none) {
            CHECK_MESSAGE(certificate_error.find(refused_certificate_as) != std::string::npos,
                          "the self-managed certificate's start fails naming the refusal: " << certificate_error);
            summary += group + "/" + resource + " " + verb + ": start\n";
            log::set_sink({});
            continue;
        }
        CHECK_MESSAGE(certificate_error == "", certificate_error);
        auto m = deploy_controller(config, "least-privilege-test", c.watch_secrets);
        std::atomic<bool> returned{false};
        std::thread t([&] {
            m->run();
            returned = true;
        });
        create_all_volumes(server);

        // Plays the kubelet and the user: pods are bound and finish; once the volumes settle (or
        // stall for want of the grant), the VolumeManager is deleted.
        const std::string refusal = "cannot " + verb + " resource \"" + resource + "\" in API group \"" + group + "\"";
        auto started = std::chrono::steady_clock::now();
        bool deleted = false, settled = false;
        std::string where;
        bool reported = eventually(
            [&] {
                for (const auto& p : items(store, pod_id, "data")) {
                    std::string name(api::string_at(p, {"metadata", "name"}));
                    if (name == "reader") continue;  // the injected pod: the controller's to ungate
                    if (api::string_at(p, {"spec", "nodeName"}).empty())
                        store.bind("data", name,
                                   json::value{{"metadata", {{"name", name}}}, {"target", {{"kind", "Node"}, {"name", "node-1"}}}});
                    if (!api::string_at(p, {"status", "phase"}).empty() && api::string_at(p, {"status", "phase"}) != "Pending")
                        continue;
                    bool failing = api::string_at(p, {"metadata", "labels", "vcid"}) == "failing" &&
                                   !p.at("spec").at("containers").at(0).at("args").at(0).as_string().starts_with("delete");
                    if (failing) server.pod_logs().append("data", name, std::string(p.at("spec").at("containers").at(0).at("name").as_string()), "no such bucket\n");
                    try {
                        store.patch(pod_id, "data", name, client::PatchType::Merge,
                                    finished_status(failing), "status");
                    } catch (const std::exception&) {
                    }
                }
                if (!deleted) {
                    // Settled: the S3 copy is in place and the failing download has failed.
                    bool s3_ready = false, download_failed = false;
                    bool refreshed = false;
                    try {
                        auto vm = store.get(vm_id, "data", "all");
                        refreshed = refresh_answered(vm);
                        auto st = vm.at("status");
                        for (const auto& v : st.at("volumes").as_array()) {
                            auto id = api::string_at(v, {"id"});
                            auto message = api::string_at(v, {"message"});
                            if (id == "s3") s3_ready = message == "success";
                            if (id == "failing") download_failed = message.starts_with("error during data download");
                        }
                    } catch (const std::exception&) {
                    }
                    // And the injected pod's gate lifted: deleting earlier would race the pass
                    // that lifts it (a deleting VolumeManager's pods are not ungated).
                    settled = s3_ready && download_failed && refreshed && injected_pod_ungated(store);
                    // 30 s: a refusal reported only after settling (the ungating patch) needs
                    // the refused creates' back-off and the downloads first, which took more
                    // than 15 s once under a parallel test's load.
                    if (settled || std::chrono::steady_clock::now() - started > std::chrono::seconds(30)) {
                        delete_with_its_pods(store);
                        deleted = true;
                    }
                }
                if (needs_none) {
                    try {
                        store.get(vm_id, "data", "all");
                        return false;
                    } catch (const std::exception&) {
                        return deleted;  // its deletion completed
                    }
                }
                where = reports.where(store, refusal);
                return !where.empty();
            },
            std::chrono::seconds(60));
        if (needs_none) {
            CHECK_MESSAGE(reported, "without the Secret grants, the VolumeManager settles and its deletion completes");
            CHECK_MESSAGE(settled, "the S3 copy is made and the failing download fails, as with them");
            CHECK_MESSAGE(reports.where(store, "is forbidden").empty(), "nothing is refused");
            m->request_stop();
            t.join();
            log::set_sink({});
            continue;
        }
        summary += group + "/" + resource + " " + verb + ": " + (reported ? where : "nothing") + "\n";
        CHECK_MESSAGE(reported, "the refusal (" << refusal << ") is reported in the log, the events or the status");
        if (!reported) {
            std::lock_guard lk(reports.mu);
            for (std::size_t i = reports.log.size() > 30 ? reports.log.size() - 30 : 0; i < reports.log.size(); ++i)
                MESSAGE(reports.log[i]);
            MESSAGE(json::serialize(items(store, ResourceId{"", "v1", "events"}, "data")));
        }
        // What concerns one VolumeManager is on it (kubectl describe); a list or watch its
        // caches need, its Lease and its events concern none, and are in its log.
        bool about_no_object = verb == "list" || verb == "watch" || group == "coordination.k8s.io" || resource == "events";
        if (about_no_object) CHECK_MESSAGE(where.find("log") != std::string::npos, "logged: " << refusal);
        else CHECK_MESSAGE((where.find("events") != std::string::npos || where.find("status") != std::string::npos),
                           "on the VolumeManager: " << refusal);
        // A cache that cannot list never syncs: /readyz fails, so the pod is not Ready.
        if (verb == "list") CHECK_FALSE(m->synced());
        if (group != "coordination.k8s.io")
            CHECK_MESSAGE(!returned.load(), "the controller keeps running");
        m->request_stop();
        t.join();
        log::set_sink({});
    }
    MESSAGE("where each refusal was reported:\n" << summary);
}
