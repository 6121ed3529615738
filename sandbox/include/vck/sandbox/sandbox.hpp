// Sandbox: a whole emulated cluster in one object: the ApiServer (HTTPS) plus N simulated
// nodes with their kubelet, the scheduler, the PV binder, the replicaset, deployment, endpoints,
// statefulset and job controllers, the pod garbage collector and the pvc/pv-protection
// controllers (with the `kubernetes` Service pointing at the server), started
// together by the constructor and stopped together by stop() or the destructor (controllers
// first, then the server). Each node's host paths live under data_root/nodes/<node>/; without a data_root a
// fresh temporary directory is used and removed again at destruction.
#pragma once

#include <vck/sandbox/server/api_server.hpp>
#include <vck/sandbox/cluster/deployment_controller.hpp>
#include <vck/sandbox/cluster/endpoints_controller.hpp>
#include <vck/sandbox/cluster/image_behaviour.hpp>
#include <vck/sandbox/cluster/job_controller.hpp>
#include <vck/sandbox/cluster/pod_gc.hpp>
#include <vck/sandbox/cluster/kubelet.hpp>
#include <vck/sandbox/cluster/kubernetes_service.hpp>
#include <vck/sandbox/cluster/replicaset_controller.hpp>
#include <vck/sandbox/cluster/scheduler.hpp>
#include <vck/sandbox/cluster/simulated_node.hpp>
#include <vck/sandbox/cluster/statefulset_controller.hpp>
#include <vck/sandbox/cluster/storage_protection.hpp>
#include <vck/sandbox/cluster/volume_binder.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <sys/stat.h>
#include <vector>

namespace vck::sandbox {

class Sandbox {
public:
    struct Options {
        int nodes = 3;                       // node-1 .. node-N, unless simulated_nodes is given
        std::vector<SimulatedNode> simulated_nodes;  // when not empty, exactly these nodes
        std::filesystem::path data_root;     // empty: a temporary directory, removed afterwards
        std::map<std::string, ImageBehaviour> images;  // image name or glob -> behaviour
        ImageBehaviour default_image = ImageBehaviour::succeed();
        ApiServer::Options server;
        std::chrono::milliseconds heartbeat{10000};
        std::chrono::seconds max_grace_period{10};
        std::chrono::milliseconds restart_backoff{10000};      // CrashLoopBackOff: kubelet.hpp
        std::chrono::milliseconds max_restart_backoff{300000};
        bool serve = true;  // start the HTTPS server (in-process users may only need the store)
    };

    Sandbox() : Sandbox(Options{}) {}
    explicit Sandbox(Options opts) : opts_(std::move(opts)), server_(opts_.server) {
        specs_ = opts_.simulated_nodes.empty() ? default_simulated_nodes(opts_.nodes) : opts_.simulated_nodes;
        if (opts_.data_root.empty()) {
            std::string tmpl = (std::filesystem::temp_directory_path() / "vck-sandbox-XXXXXX").string();
            if (!mkdtemp(tmpl.data())) throw std::system_error(errno, std::generic_category(), "mkdtemp " + tmpl);
            // Searchable by all: containers that run as other users reach their volumes through it.
            ::chmod(tmpl.c_str(), 0755);
            data_root_ = tmpl;
            owns_root_ = true;
        } else {
            data_root_ = std::filesystem::absolute(opts_.data_root);
            std::filesystem::create_directories(data_root_);
        }
        KubeletOptions k;
        k.nodes = specs_;
        k.data_root = data_root_;
        k.images.images = opts_.images;
        k.images.fallback = opts_.default_image;
        k.heartbeat = opts_.heartbeat;
        k.max_grace_period = opts_.max_grace_period;
        k.restart_backoff = opts_.restart_backoff;
        k.max_restart_backoff = opts_.max_restart_backoff;
        // root-ca-cert-publisher's part: kube-root-ca.crt in every namespace.
        server_.store().set_root_ca(server_.ca_pem());
        if (opts_.serve) {
            server_.start();
            publish_kubernetes_service(server_.store(), server_.port());
        }
        k.request_token = [this](const std::string& ns, const std::string& account, const json::value& body) {
            return server_.service_account_tokens().request(server_.store(), ns, account, body);
        };
        k.api_port = opts_.serve ? server_.port() : 0;
        binder_ = std::make_unique<VolumeBinder>(server_.store());
        scheduler_ = std::make_unique<Scheduler>(server_.store());
        kubelet_ = std::make_unique<Kubelet>(server_.store(), server_.pod_logs(), std::move(k));
        kubelet_->start();
        binder_->start();
        scheduler_->start();
        replicasets_ = std::make_unique<ReplicaSetController>(server_.store());
        deployments_ = std::make_unique<DeploymentController>(server_.store());
        // Their pods go through admission, as kube-controller-manager's do (pod_creator.hpp).
        replicasets_->set_pod_creator(server_.pod_creator("replicaset-controller"));
        replicasets_->start();
        deployments_->start();
        endpoints_ = std::make_unique<EndpointsController>(server_.store());
        statefulsets_ = std::make_unique<StatefulSetController>(server_.store());
        statefulsets_->set_pod_creator(server_.pod_creator("statefulset-controller"));
        endpoints_->start();
        statefulsets_->start();
        jobs_ = std::make_unique<JobController>(server_.store());
        jobs_->set_pod_creator(server_.pod_creator("job-controller"));
        jobs_->start();
        pod_gc_ = std::make_unique<PodGarbageCollector>(server_.store());
        pod_gc_->start();
        storage_protection_ = std::make_unique<StorageProtectionController>(server_.store());
        storage_protection_->start();
    }
    ~Sandbox() {
        stop();
        if (owns_root_) {
            std::error_code ec;
            std::filesystem::remove_all(data_root_, ec);
        }
    }
    Sandbox(const Sandbox&) = delete;
    Sandbox& operator=(const Sandbox&) = delete;

    /// Stops the controllers (killing container processes), then the server. Idempotent.
    void stop() {
        if (storage_protection_) storage_protection_->stop();
        if (pod_gc_) pod_gc_->stop();
        if (jobs_) jobs_->stop();
        if (deployments_) deployments_->stop();
        if (replicasets_) replicasets_->stop();
        if (statefulsets_) statefulsets_->stop();
        if (endpoints_) endpoints_->stop();
        if (scheduler_) scheduler_->stop();
        if (binder_) binder_->stop();
        if (kubelet_) kubelet_->stop();
        server_.stop();
    }

    ApiServer& server() { return server_; }
    ObjectStore& store() { return server_.store(); }
    client::Config config() const { return server_.config(); }
    const std::filesystem::path& data_root() const { return data_root_; }
    /// data_root/nodes/<node>: where hostPath /x of a pod on `node` is.
    std::filesystem::path node_dir(const std::string& node) const { return data_root_ / "nodes" / node; }
    const std::vector<SimulatedNode>& nodes() const { return specs_; }
    /// Whether executed programs run as their container's user (root and a searchable data
    /// root needed); otherwise as this process's user. See Kubelet.
    bool users_modelled() const { return kubelet_->users_modelled(); }

private:
    Options opts_;
    std::vector<SimulatedNode> specs_;
    std::filesystem::path data_root_;
    bool owns_root_ = false;
    ApiServer server_;
    std::unique_ptr<VolumeBinder> binder_;
    std::unique_ptr<Scheduler> scheduler_;
    std::unique_ptr<Kubelet> kubelet_;
    std::unique_ptr<ReplicaSetController> replicasets_;
    std::unique_ptr<DeploymentController> deployments_;
    std::unique_ptr<EndpointsController> endpoints_;
    std::unique_ptr<StatefulSetController> statefulsets_;
    std::unique_ptr<JobController> jobs_;
    std::unique_ptr<PodGarbageCollector> pod_gc_;
    std::unique_ptr<StorageProtectionController> storage_protection_;
};

} // namespace vck::sandbox
