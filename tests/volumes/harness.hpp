// Test support for the VolumeManager controller: one sandbox API server (with the CRD and
// three nodes) for the whole binary, vck-controller's wiring in a Manager on its own thread,
// and the rest of the cluster played by hand (binding pods, moving phases, binding claims),
// except the pvc-protection and pv-protection controllers, which run: every claim and volume
// is created with their finalizers (as on a cluster), and only they let it go.
#pragma once

#include <vck/api/yaml.hpp>
#include <vck/sandbox/cluster/storage_protection.hpp>
#include <vck/volumes/volume_manager_controller.hpp>
#include "../support/eventually.hpp"
#include "../support/ready_node.hpp"
#include "../support/sandbox_server.hpp"

#include <doctest.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

namespace vck::test {

namespace json = boost::json;
using sandbox::ResourceId;


inline const ResourceId crds{"apiextensions.k8s.io", "v1", "customresourcedefinitions"};
inline const ResourceId vms{"vck.intelai.org", "v1alpha1", "volumemanagers"};
inline const ResourceId pods{"", "v1", "pods"};
inline const ResourceId nodes{"", "v1", "nodes"};
inline const ResourceId pvs{"", "v1", "persistentvolumes"};
inline const ResourceId pvcs{"", "v1", "persistentvolumeclaims"};
inline const ResourceId secrets{"", "v1", "secrets"};
inline const ResourceId namespaces{"", "v1", "namespaces"};

inline std::filesystem::path source_root() {
    const char* r = std::getenv("VCK_SOURCE_ROOT");
    return r ? r : ".";
}

inline SandboxServer& server() {
    static SandboxServer s{[] {
        SandboxServer::Options o;
        o.bookmark_interval = std::chrono::seconds(1);
        o.verbose = std::getenv("VCK_SANDBOX_VERBOSE") != nullptr;  // every request on stderr
        return o;
    }()};
    static bool started = [] {
        s.start();
        s.store().create(crds, "", api::yaml_file(source_root() / "crds/volumemanager.yaml").at(0));
        for (int i = 1; i <= 3; ++i) {
            std::string n = "node-" + std::to_string(i);
            create_ready_node(s.store(), n);
        }
        static sandbox::StorageProtectionController protection(s.store());
        protection.start();
        return true;
    }();
    (void)started;
    return s;
}

inline sandbox::ObjectStore& store() { return server().store(); }

/// A fresh namespace per test case, so cases never see each other's objects.
inline std::string fresh_namespace() {
    static int n = 0;
    std::string ns = "vm-test-" + std::to_string(++n);
    store().create(namespaces, "", json::value{{"metadata", {{"name", ns}}}});
    return ns;
}

/// vck-controller's wiring in a Manager on a thread of its own.
struct Controller {
    std::unique_ptr<runtime::ClusterManager> manager;
    volumes::VolumeManagerController parts;
    std::thread thread;

    /// `peer_fill`: these tests play the kubelet by hand and give pods no address, and peer
    /// fill's pullers wait for their parent's address; so it is off unless a test is about it.
    explicit Controller(volumes::ControllerOptions co = {},
                        handlers::HandlerRegistry registry = handlers::HandlerRegistry::with_builtin_handlers(),
                        bool peer_fill = false) {
        co.reconciler.handler.peer_fill = peer_fill;
        runtime::ClusterManagerOptions mo;
        // In process: the reconciler's specification needs no socket and no TLS (the wire
        // has tests of its own); everything else answers as over HTTPS.
        mo.config = server().in_process_config();
        mo.config.qps = 1000;
        mo.config.burst = 1000;
        mo.handle_signals = false;
        mo.graceful_shutdown = std::chrono::seconds(20);
        co.reconciler.pending_recheck = std::chrono::milliseconds(200);
        co.reconciler.cleanup_recheck = std::chrono::milliseconds(200);
        co.reconciler.handler.data_mover_image = "vck-fetch:test";
        manager = std::make_unique<runtime::ClusterManager>(mo);
        // Compressed caches compress every object at once here (not after 256 newer ones), so
        // these tests take VCK through decoded reads, not only through whole snapshots.
        for (const auto* rt : {&api::VolumeManager::resource, &api::Pod::resource, &api::PersistentVolume::resource,
                               &api::PersistentVolumeClaim::resource})
            manager->informers().configure(*rt, [](runtime::InformerOptions& io) { io.store.recent_whole = 0; });
        parts = volumes::add_volume_manager_controller(*manager, std::move(registry), co);
        thread = std::thread([this] { manager->run(); });
    }
    ~Controller() { stop(); }
    void stop() {
        if (!thread.joinable()) return;
        manager->request_stop();
        thread.join();
    }
};

inline json::value get_vm(const std::string& ns, const std::string& name) {
    try {
        return store().get(vms, ns, name);
    } catch (const std::exception&) {
        return nullptr;
    }
}

/// The VolumeManager and its pods as JSON, for failure messages.
inline std::string dump(const std::string& ns, const std::string& name) {
    std::string out = "VolumeManager: " + json::serialize(get_vm(ns, name)) + "\npods:";
    auto list = store().list(pods, ns);  // named: the loop must not outlive it
    for (const auto& p : list.at("items").as_array())
        out += "\n  " + std::string(api::string_at(p, {"metadata", "name"})) + " phase=" +
               std::string(api::string_at(p, {"status", "phase"})) + " node=" +
               std::string(api::string_at(p, {"spec", "nodeName"}));
    for (const auto& p : list.at("items").as_array()) {
        try {
            (void)api::from_json<api::Pod>(p);  // what the controller's typed cache must read
        } catch (const std::exception& e) {
            out += "\n  does not decode as api::Pod: " + std::string(e.what()) + "\n  " + json::serialize(p);
        }
    }
    return out;
}

inline std::string state_of(const std::string& ns, const std::string& name) {
    auto vm = get_vm(ns, name);
    return vm.is_null() ? "<gone>" : std::string(api::string_at(vm, {"status", "state"}));
}

inline json::array items(const ResourceId& id, const std::string& ns, const std::string& selector = {}) {
    sandbox::StoreListOptions o;
    if (!selector.empty()) o.label_selector = selector;
    auto l = store().list(id, ns, o);
    return l.at("items").as_array();
}

inline json::value volume(std::string id, std::string source_type, json::object options, int replicas = 1,
                   std::string access = "ReadWriteOnce") {
    return json::value{{"id", id},
                       {"replicas", replicas},
                       {"sourceType", source_type},
                       {"accessMode", access},
                       {"capacity", "1Gi"},
                       {"labels", {{"key", "value"}}},
                       {"options", std::move(options)}};
}

inline json::value nfs_volume(std::string id = "vol1") {
    return volume(std::move(id), "NFS", {{"server", "10.0.0.1"}, {"path", "/exports/data"}}, 1, "ReadWriteMany");
}

inline json::value s3_volume(std::string id = "vol1", int replicas = 1) {
    return volume(std::move(id), "S3",
                  {{"sourceURL", "s3://data/set/"}, {"awsCredentialsSecretName", "s3-creds"},
                   {"endpointURL", "http://127.0.0.1:9000"}},
                  replicas);
}

inline void create_vm(const std::string& ns, const std::string& name, json::array volumes, std::string state = "Running") {
    store().create(vms, ns,
                   json::value{{"apiVersion", "vck.intelai.org/v1alpha1"},
                               {"kind", "VolumeManager"},
                               {"metadata", {{"name", name}, {"namespace", ns}}},
                               {"spec", {{"volumeConfigs", std::move(volumes)}, {"state", state}}}});
}

inline void create_secret(const std::string& ns) {
    store().create(secrets, ns,
                   json::value{{"metadata", {{"name", "s3-creds"}, {"namespace", ns}}},
                               {"data", {{"awsAccessKeyID", "UzNSVkVS"}, {"awsSecretAccessKey", "UzNSVkVS"}}}});
}

/// The kubelet's part for pod `p` of `ns`: binds it, if unbound, to the node it is pinned to
/// (copies are) or else node-1..3 by turn (`turn`). False when it went meanwhile.
inline bool bind_pod(const std::string& ns, const json::value& p, int& turn) {
    std::string name(api::string_at(p, {"metadata", "name"}));
    std::string node(api::string_at(p, {"spec", "nodeName"}));
    if (!node.empty()) return true;
    boost::system::error_code ec;
    const auto* pin = p.find_pointer("/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/"
                                     "nodeSelectorTerms/0/matchFields/0/values/0", ec);
    node = pin && pin->is_string() ? std::string(pin->as_string()) : "node-" + std::to_string(1 + (turn++ % 3));
    try {
        store().bind(ns, name, json::value{{"metadata", {{"name", name}}}, {"target", {{"kind", "Node"}, {"name", node}}}});
    } catch (const sandbox::StoreError& e) {
        if (e.code() != 404 && e.code() != 409) throw;
        return false;  // deleted (or bound) by the controller since the list: as a kubelet would
    }
    return true;
}

/// The kubelet's part: binds each pending pod of `ns` to a node and sets its phase.
inline void run_pods(const std::string& ns, const std::string& phase, const std::string& selector = {}) {
    int turn = 0;
    for (const auto& p : items(pods, ns, selector)) {
        if (!bind_pod(ns, p, turn)) continue;
        std::string name(api::string_at(p, {"metadata", "name"}));
        try {
            store().patch(pods, ns, name, client::PatchType::Merge, json::value{{"status", {{"phase", phase}}}}, "status");
        } catch (const sandbox::StoreError& e) {
            if (e.code() != 404) throw;  // deleted by the controller since the list
        }
    }
}

inline void bind_claims(const std::string& ns) {
    for (const auto& c : items(pvcs, ns)) {
        if (api::string_at(c, {"status", "phase"}) == "Bound") continue;
        std::string name(api::string_at(c, {"metadata", "name"}));
        store().patch(pvcs, ns, name, client::PatchType::Merge, json::value{{"status", {{"phase", "Bound"}}}}, "status");
    }
}

inline std::size_t count_pods(const std::string& ns) { return items(pods, ns).size(); }

/// How many of the three nodes carry label `key`.
inline int count_nodes_labelled(const std::string& key) {
    int n = 0;
    for (int i = 1; i <= 3; ++i) {
        auto node = store().get(nodes, "", "node-" + std::to_string(i));
        if (!api::string_at(node, {"metadata", "labels", key}).empty()) ++n;
    }
    return n;
}

/// The first match expression of a volume status' nodeAffinity: the node label (key) that
/// marks the nodes holding its copy, and the value those nodes carry.
inline const json::object& affinity_expression(const json::value& volume_status) {
    return volume_status.at("nodeAffinity").at("requiredDuringSchedulingIgnoredDuringExecution")
        .at("nodeSelectorTerms").at(0).at("matchExpressions").at(0).as_object();
}
inline std::string affinity_label_key(const json::value& volume_status) {
    return std::string(affinity_expression(volume_status).at("key").as_string());
}

/// Whether namespace `ns` holds exactly `n` pods, all of them cleanup pods (`vck-fetch delete`):
/// what a removed volume leaves once its download pods are gone.
inline bool only_cleanup_pods(const std::string& ns, std::size_t n) {
    auto ps = items(pods, ns);
    if (ps.size() != n) return false;
    for (const auto& p : ps)
        if (p.at("spec").at("containers").at(0).at("args").at(0) != "delete") return false;
    return true;
}

} // namespace vck::test
