// Kubelet: the sandbox's simulated kubelet for a set of nodes. It registers the Node objects
// (capacity, conditions, addresses) and heartbeats them, and moves every pod bound to one of
// its nodes through its life as the real kubelet reports it: Pending (ContainerCreating,
// CreateContainerConfigError for a missing Secret/ConfigMap or key) -> Running -> Succeeded or
// Failed, with conditions, containerStatuses (waiting/running/terminated, exit code, reason,
// termination message), startTime, hostIP, podIP and Pulled/Created/Started/Failed/Killing
// events. Init containers run one at a time, in order, each to success before the next and
// before any container (initContainerStatuses, condition Initialized; a failed one fails the
// pod under restartPolicy Never and is restarted otherwise). activeDeadlineSeconds, counted
// from the pod's start, ends it: its containers are killed (SIGKILL at once, where the real
// kubelet allows a grace period) and it fails with reason DeadlineExceeded.
// Each pod gets a loopback address of its own as its IP (127.<block>.<node>.<n>, the block this
// cluster holds alone on the host: pod_network.hpp), so what it serves there is reachable; its
// containers' probes (container_probe.hpp) decide readiness (and started), and a failed liveness
// probe kills the container (SIGTERM, then SIGKILL after the pod's grace period, capped as for
// deletions), restarted per restartPolicy.
// What a container does is its image's ImageBehaviour; an executed host program gets
// the container's command+args ($(VAR) expanded from its env) as argv with each volume mapped to a host directory under
// <data_root>/nodes/<node>/ and every argument or env value under a mountPath rewritten to it.
// A volumeMount's subPath is created when missing, and refused, as the real kubelet refuses
// it, when it resolves (symlinks followed) outside its volume: the container then waits in
// CreateContainerConfigError "failed to prepare subPath for volumeMount ...".
// Users, as on a node: a container runs as its ContainerIdentity (securityContext, else the
// image's default user); runAsNonRoot with uid 0 leaves it in CreateContainerConfigError with
// the kubelet's words. The directories the kubelet makes are root's (this process's) with the
// real modes: hostPath DirectoryOrCreate and its parents 0755, emptyDir 0777, a subPath the
// mode of its volume, the termination-log file 0666. When this process is root and the data
// root is searchable by everyone, each executed program really runs as its container's uid,
// gid and supplementalGroups, so a non-root container cannot write into a root-owned 0755
// directory; otherwise (users_modelled() false) every program runs as this process's user.
// Guarantees: nothing here blocks the API server (processes are waited on by their own
// threads); restartPolicy Never, OnFailure and Always are honoured (restartCount, lastState);
// deleting a pod sends SIGTERM, then SIGKILL after its grace period (capped); the pod stays in
// the API, Terminating, until its containers have stopped, when the kubelet confirms the
// deletion (grace period 0) and removes its logs. A terminating pod on a node that does not
// exist is deleted at once (the pod garbage collector's part), and so is one whose node is
// deleted while it terminates. stop() and the destructor end every process and thread.
// Cost: work per change. The pods are listed once when the loop starts; after that the
// store's change feed brings each changed pod (decoded only when it is bound to one of these
// nodes), and a pass steps the pods still running, not every pod in the cluster. A finished
// pod whose last status is written costs nothing more until it is deleted.
#pragma once

#include <vck/api/core_v1.hpp>
#include <vck/api/time.hpp>
#include <vck/client/base64.hpp>
#include <vck/sandbox/cluster/change_feed.hpp>
#include <vck/sandbox/cluster/container_identity.hpp>
#include <vck/sandbox/cluster/container_probe.hpp>
#include <vck/sandbox/cluster/event_emitter.hpp>
#include <vck/sandbox/cluster/host_process.hpp>
#include <vck/sandbox/cluster/image_behaviour.hpp>
#include <vck/sandbox/cluster/simulated_node.hpp>
#include <vck/sandbox/cluster/pod_logs.hpp>
#include <vck/sandbox/cluster/pod_network.hpp>
#include <vck/sandbox/cluster/resource_field.hpp>
#include <vck/sandbox/admission/service_accounts.hpp>
#include <vck/sandbox/cluster/sim_loop.hpp>

#include <boost/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <variant>
#include <vector>

namespace vck::sandbox {

struct KubeletOptions {
    std::vector<SimulatedNode> nodes;
    std::filesystem::path data_root;  // node N's host paths live under data_root/nodes/N
    ImageBehaviours images;
    std::chrono::milliseconds heartbeat{10000};
    std::chrono::seconds max_grace_period{10};         // caps terminationGracePeriodSeconds
    // CrashLoopBackOff as the kubelet's: the first crash restarts at once, each later one waits
    // restart_backoff, doubled per crash up to max_restart_backoff; a container that ran
    // 2 x max_restart_backoff since its last back-off starts again from none.
    std::chrono::milliseconds restart_backoff{10000};
    std::chrono::milliseconds max_restart_backoff{300000};
    // Issues the token of a projected serviceAccountToken source: (namespace, service
    // account, TokenRequest body) -> the TokenRequest answered (ServiceAccountTokens::request).
    // Unset, such a source fails the container's mounts.
    std::function<json::value(const std::string&, const std::string&, const json::value&)> request_token;
    // The API server as the `kubernetes` service's env vars name it to every container
    // (KUBERNETES_SERVICE_HOST, ...); port 0: none are set.
    std::string api_host = "127.0.0.1";
    std::uint16_t api_port = 0;
};

class Kubelet {
public:
    using Clock = SimLoop::Clock;

    /// A duration as Go's time.Duration prints it: "10s", "1m20s", "5m0s", "50ms".
    static std::string go_duration(std::chrono::milliseconds d) {
        auto ms = d.count();
        if (ms < 1000) return std::to_string(ms) + "ms";
        auto m = ms / 60000;
        auto rest = ms % 60000;
        std::string sec = std::to_string(rest / 1000);
        if (rest % 1000) {
            char frac[8];
            std::snprintf(frac, sizeof frac, ".%03lld", static_cast<long long>(rest % 1000));
            std::string f = frac;
            while (f.back() == '0') f.pop_back();
            sec += f;
        }
        return (m ? std::to_string(m) + "m" : std::string()) + sec + "s";
    }

    Kubelet(ObjectStore& store, PodLogs& logs, KubeletOptions opts)
        : store_(store), logs_(logs), opts_(std::move(opts)), events_(store, "kubelet"),
          feed_(store, [](const StoreChange& c) { return c.group.empty() && (c.resource == "pods" || node_deleted(c)); }),
          loop_(store, "kubelet",
                [](const StoreChange& c) {
                    return c.group.empty() && (c.resource == "pods" || c.resource == "secrets" ||
                                               c.resource == "configmaps" || c.resource == "persistentvolumeclaims" ||
                                               c.resource == "persistentvolumes" || node_deleted(c));
                },
                [this] { return pass(); }, std::chrono::milliseconds(500)) {
        for (std::size_t i = 0; i < opts_.nodes.size(); ++i) node_index_[opts_.nodes[i].name] = i;
    }
    ~Kubelet() { stop(); }
    Kubelet(const Kubelet&) = delete;
    Kubelet& operator=(const Kubelet&) = delete;

    /// Registers the nodes (an existing Node object is kept, its status refreshed) and starts.
    void start() {
        auto now = api::format_rfc3339(std::chrono::system_clock::now());
        users_modelled_ = geteuid() == 0;
        for (std::size_t i = 0; i < opts_.nodes.size(); ++i) {
            const auto& n = opts_.nodes[i];
            std::error_code ec;
            make_dirs(node_dir(n.name), std::filesystem::perms(0755), ec);
            if (ec) throw std::system_error(ec, "cannot create " + node_dir(n.name).string());
            if (auto closed = unsearchable(node_dir(n.name)); closed && users_modelled_) {
                // A program that runs as another user could not reach its volumes.
                users_modelled_ = false;
                std::fprintf(stderr,
                             "vck-sandbox kubelet: containers run as uid %u, not as their securityContext says: %s is "
                             "not searchable by other users (needs o+x)\n",
                             static_cast<unsigned>(geteuid()), closed->c_str());
            }
            try {
                store_.create(nodes_id, "", node_object(n));
            } catch (const StoreError& e) {
                if (e.code() != 409) throw;
            }
            json::value patch = json::object{{"status", node_status(n, i, now)}};
            store_.patch(nodes_id, "", n.name, client::PatchType::Merge, patch, "status");
        }
        next_heartbeat_ = Clock::now() + opts_.heartbeat;
        feed_.start();  // before the loop, so no change falls between its first list and the feed
        loaded_ = false;
        loop_.start();
    }

    /// Stops the loop and ends every container process (SIGTERM, SIGKILL after 2 s).
    void stop() {
        loop_.stop();
        feed_.stop();
        std::vector<HostProcess*> live;
        for (auto& [uid, run] : runs_)
            for (auto& c : run.containers)
                if (c.proc && !c.proc->exited()) {
                    c.proc->terminate();
                    live.push_back(c.proc.get());
                }
        auto deadline = Clock::now() + std::chrono::seconds(2);
        while (Clock::now() < deadline &&
               std::any_of(live.begin(), live.end(), [](HostProcess* p) { return !p->exited(); }))
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        runs_.clear();  // kills and joins what is left
    }

    /// Where node `node`'s host paths are: hostPath /x/y is node_dir(node)/x/y.
    std::filesystem::path node_dir(const std::string& node) const { return opts_.data_root / "nodes" / node; }

    /// Whether executed programs run as their container's user (set by start(); see the top).
    bool users_modelled() const { return users_modelled_; }

private:
    static inline const ResourceId pods_id{"", "v1", "pods"};
    static inline const ResourceId nodes_id{"", "v1", "nodes"};
    static inline const ResourceId secrets_id{"", "v1", "secrets"};
    static inline const ResourceId configmaps_id{"", "v1", "configmaps"};
    static inline const ResourceId pvcs_id{"", "v1", "persistentvolumeclaims"};
    static inline const ResourceId pvs_id{"", "v1", "persistentvolumes"};

    enum class State { Waiting, Running, Terminated };

    struct ContainerRun {
        api::Container spec;
        State state = State::Waiting;
        std::string reason = "ContainerCreating";
        std::string message;
        std::string started_at, finished_at, container_id;
        int exit_code = 0;
        int restarts = 0;
        json::value last_state = json::object();
        std::optional<Clock::time_point> due;  // simulated end, or the end of a restart back-off
        std::chrono::milliseconds backoff{0};  // the next crash's wait; none before the first crash
        Clock::time_point backoff_since{};     // when the back-off last grew
        std::unique_ptr<HostProcess> proc;
        std::filesystem::path termination_file;
        bool pulled = false;
        std::string failed_event;  // the last Failed event's message, to not repeat it
        bool init = false;         // one of spec.initContainers
        // The running instance's probes (none for init containers), and how many failures of
        // each were reported as Unhealthy events.
        std::unique_ptr<ProbeWorker> liveness, readiness, startup;
        std::uint64_t reported_failures[3] = {0, 0, 0};
        bool liveness_kill = false;  // killed for a failed liveness probe; restarts per policy
        // SIGKILL follows the liveness kill's SIGTERM at the end of the grace period.
        std::optional<Clock::time_point> kill_after;
    };

    /// A projected serviceAccountToken the kubelet keeps fresh: requested again once 80% of
    /// its life has passed, as the real kubelet's token manager does.
    struct ProjectedToken {
        json::value request;  // the TokenRequest body
        std::string account;
        mode_t mode = 0644;
        Clock::time_point refresh;
    };

    struct PodRun {
        std::string ns, name, uid, node;
        json::value object;
        api::Pod pod;
        std::vector<ContainerRun> containers;
        std::string start_time, host_ip, pod_ip;
        std::map<std::string, std::pair<std::string, std::string>> transitions;  // type -> (status, time)
        bool finished = false;
        bool settled = false;  // finished, and its last status written
        bool gone = false;
        bool killing = false;
        bool killed_hard = false;
        Clock::time_point kill_deadline{};
        std::optional<Clock::time_point> active_deadline;  // spec.activeDeadlineSeconds after start
        bool deadline_exceeded = false;
        json::value written;
        std::map<std::filesystem::path, ProjectedToken> tokens;  // by the file they are written to
    };

    // ---- the pass ---------------------------------------------------------------------------

    static bool node_deleted(const StoreChange& c) { return c.resource == "nodes" && c.type == "DELETED"; }

    std::optional<Clock::time_point> pass() {
        auto now = Clock::now();
        if (!loaded_) load_pods();
        else take_feed();
        std::optional<Clock::time_point> next;
        auto soonest = [&](Clock::time_point t) {
            if (!next || t < *next) next = t;
        };
        for (auto it = runs_.begin(); it != runs_.end();) {
            auto& run = it->second;
            if (run.killing) {
                bool alive = std::any_of(run.containers.begin(), run.containers.end(),
                                         [](const ContainerRun& c) { return c.proc && !c.proc->exited(); });
                if (alive && !run.killed_hard && now >= run.kill_deadline) {
                    for (auto& c : run.containers)
                        if (c.proc) c.proc->kill();
                    run.killed_hard = true;
                }
                if (alive) soonest(run.killed_hard ? now + std::chrono::milliseconds(50) : run.kill_deadline);
                if (!alive && !run.gone) {
                    // Every container has stopped: the deletion is confirmed (grace period 0),
                    // and only now does the pod leave the API.
                    confirm_deletion(run.ns, run.name, run.uid);
                    run.gone = true;
                }
                if (!alive && run.gone) {
                    logs_.remove(run.ns, run.name);
                    std::error_code ec;
                    std::filesystem::remove_all(node_dir(run.node) / "pods" / run.uid, ec);
                    it = runs_.erase(it);
                    continue;
                }
                ++it;
                continue;
            }
            if (run.settled) {
                ++it;  // nothing changes for it until it is deleted
                continue;
            }
            if (!run.finished && run.active_deadline) {
                if (now >= *run.active_deadline) exceed_deadline(run);
                else soonest(*run.active_deadline);
            }
            if (!run.finished) step(run, now);
            if (!run.finished) {
                refresh_tokens(run, now);
                for (const auto& [file, t] : run.tokens) soonest(t.refresh);
            }
            for (const auto& c : run.containers) {
                if (c.due) soonest(*c.due);
                if (c.kill_after) soonest(*c.kill_after);
            }
            write_status(run);
            ++it;
        }
        if (now >= next_heartbeat_) {
            heartbeat();
            next_heartbeat_ = now + opts_.heartbeat;
        }
        soonest(next_heartbeat_);
        return next;
    }

    /// Every pod from a list: runs for the new ones, and those no longer listed are gone.
    void load_pods() {
        feed_.clear();  // the list below is at least as new
        std::set<std::string> seen;
        const auto pod_list = store_.list(pods_id, "");
        for (const auto& item : pod_list.at("items").as_array())
            if (auto uid = observe(item)) seen.insert(*uid);
        for (auto& [uid, run] : runs_)
            if (!seen.count(uid)) pod_gone(run);
        loaded_ = true;
    }

    /// The pods changed since the last pass, each seen in its newest state; deletions by uid.
    void take_feed() {
        const auto changes = feed_.take();
        std::map<std::string, const StoreChange*> newest;  // ns/name -> its newest state
        for (const auto& c : changes) {
            if (c.resource == "nodes") {
                for (auto it = foreign_terminating_.begin(); it != foreign_terminating_.end();) {
                    if (it->second.node != c.name) {
                        ++it;
                        continue;
                    }
                    confirm_deletion(it->second.ns, it->second.name, it->first);
                    it = foreign_terminating_.erase(it);
                }
                continue;
            }
            auto key = c.namespace_ + "/" + c.name;
            if (c.type != "DELETED") {
                newest[key] = &c;
                continue;
            }
            newest.erase(key);  // an earlier state of this very pod; a later ADDED is another pod
            auto uid = std::string(api::string_at(*c.object, {"metadata", "uid"}));
            foreign_terminating_.erase(uid);
            if (auto run = runs_.find(uid); run != runs_.end()) pod_gone(run->second);
        }
        for (const auto& [key, c] : newest) observe(*c->object);
    }

    void pod_gone(PodRun& run) {
        if (run.gone) return;
        run.gone = true;
        begin_kill(run);
    }

    /// One pod's state: a run is made or refreshed when it is bound to one of these nodes (its
    /// uid returned). A terminating pod on a node that does not exist is deleted for good: no
    /// kubelet is left to stop it.
    std::optional<std::string> observe(const json::value& item) {
        const auto node = std::string(api::string_at(item, {"spec", "nodeName"}));
        if (!node_index_.count(node)) {
            auto uid = std::string(api::string_at(item, {"metadata", "uid"}));
            if (node.empty() || api::string_at(item, {"metadata", "deletionTimestamp"}).empty()) return std::nullopt;
            if (!node_exists(node)) {
                confirm_deletion(std::string(api::string_at(item, {"metadata", "namespace"})),
                                 std::string(api::string_at(item, {"metadata", "name"})), uid);
                foreign_terminating_.erase(uid);
            } else {
                foreign_terminating_[uid] = Foreign{node, std::string(api::string_at(item, {"metadata", "namespace"})),
                                                    std::string(api::string_at(item, {"metadata", "name"}))};
            }
            return std::nullopt;
        }
        auto pod = api::from_json<api::Pod>(item);
        const auto uid = pod.metadata.uid;
        auto it = runs_.find(uid);
        if (it == runs_.end()) {
            std::string phase = pod.status ? pod.status->phase : "";
            if (phase == "Succeeded" || phase == "Failed") return uid;  // finished before we started
            it = runs_.emplace(uid, new_run(item, pod)).first;
        }
        it->second.object = item;
        // List items carry no kind or apiVersion; events name their object by both.
        it->second.object.as_object()["kind"] = "Pod";
        it->second.object.as_object()["apiVersion"] = "v1";
        it->second.pod = std::move(pod);
        if (!it->second.pod.metadata.deletionTimestamp.empty()) begin_kill(it->second);
        return uid;
    }

    PodRun new_run(const json::value& item, const api::Pod& pod) {
        PodRun run;
        run.ns = pod.metadata.namespace_;
        run.name = pod.metadata.name;
        run.uid = pod.metadata.uid;
        run.node = pod.spec.nodeName;
        run.object = item;
        run.pod = pod;
        run.start_time = api::format_rfc3339(std::chrono::system_clock::now());
        auto index = node_index_.at(run.node);
        run.host_ip = node_address(opts_.nodes[index], index);
        // A loopback address of its own (127.<block>.<node>.<n>): what a pod serves on it is
        // reachable from this machine, so probes and a Service's endpoints really connect.
        run.pod_ip = pod_network_.pod_ip(index);
        if (pod.spec.activeDeadlineSeconds)
            run.active_deadline = Clock::now() + std::chrono::seconds(std::max<std::int64_t>(*pod.spec.activeDeadlineSeconds, 0));
        // Init containers first: step() and phase_of() go through them in this order.
        for (const auto& c : pod.spec.initContainers) {
            ContainerRun cr;
            cr.spec = c;
            cr.init = true;
            run.containers.push_back(std::move(cr));
        }
        bool initializing = !run.containers.empty();
        for (const auto& c : pod.spec.containers) {
            ContainerRun cr;
            cr.spec = c;
            if (initializing) cr.reason = "PodInitializing";
            run.containers.push_back(std::move(cr));
        }
        return run;
    }

    /// activeDeadlineSeconds passed: every running container is killed and the pod fails.
    void exceed_deadline(PodRun& run) {
        run.deadline_exceeded = true;
        for (auto& c : run.containers)
            if (c.state == State::Running) finish(run, c, 137, "Error", "");  // the process is killed
        events_.emit(run.object, "Normal", "DeadlineExceeded", "Pod was active on the node longer than the specified deadline",
                     "", run.node);
    }

    static bool init_succeeded(const ContainerRun& c) { return c.state == State::Terminated && c.exit_code == 0; }

    /// Deletes a terminating pod for good (grace period 0, this very pod by uid).
    void confirm_deletion(const std::string& ns, const std::string& name, const std::string& uid) {
        StoreDeleteOptions o;
        o.precondition_uid = uid;
        o.grace_period_seconds = 0;
        try {
            store_.remove(pods_id, ns, name, o);
        } catch (const StoreError& e) {
            if (e.code() != 404 && e.code() != 409) throw;  // gone already, or another pod by now
        }
    }

    bool node_exists(const std::string& name) {
        try {
            store_.get(nodes_id, "", name);
            return true;
        } catch (const StoreError& e) {
            if (e.code() != 404) throw;
            return false;
        }
    }

    /// How long SIGTERM has before SIGKILL: the deletion's grace period, else the pod's
    /// terminationGracePeriodSeconds (30 s by default), capped by max_grace_period.
    std::chrono::seconds grace_period(const PodRun& run) const {
        auto grace = std::chrono::seconds(run.pod.metadata.deletionGracePeriodSeconds.value_or(
            run.pod.spec.terminationGracePeriodSeconds.value_or(30)));
        return std::min<std::chrono::seconds>(grace, opts_.max_grace_period);
    }

    void begin_kill(PodRun& run) {
        if (run.killing) return;
        run.killing = true;
        run.kill_deadline = Clock::now() + grace_period(run);
        for (auto& c : run.containers) {
            if (c.state != State::Running) continue;
            if (!run.gone) events_.emit(run.object, "Normal", "Killing", "Stopping container " + c.spec.name,
                                        field_path(c), run.node);
            if (c.proc) {
                if (run.gone) c.proc->discard();
                c.proc->terminate();
            }
        }
    }

    // ---- containers -------------------------------------------------------------------------

    static std::string field_path(const ContainerRun& c) {
        return (c.init ? "spec.initContainers{" : "spec.containers{") + c.spec.name + "}";
    }

    bool claims_bound(const PodRun& run) {
        for (const auto& v : run.pod.spec.volumes) {
            if (!v.persistentVolumeClaim) continue;
            try {
                auto pvc = store_.get(pvcs_id, run.ns, v.persistentVolumeClaim->claimName);
                const auto* st = pvc.as_object().if_contains("status");
                if (!st || !st->is_object()) return false;
                const auto* phase = st->as_object().if_contains("phase");
                if (!phase || !phase->is_string() || phase->get_string() != "Bound") return false;
            } catch (const StoreError&) {
                return false;
            }
        }
        return true;
    }

    void step(PodRun& run, Clock::time_point now) {
        if (!claims_bound(run)) return;  // volumes are not ready: ContainerCreating
        const auto& policy = run.pod.spec.restartPolicy;
        // A failed init container is restarted unless the pod's policy is Never.
        const std::string init_policy = policy == "Never" ? "Never" : "OnFailure";
        for (auto& c : run.containers) {
            if (!c.init) {
                step_container(run, c, now, policy);
                continue;
            }
            if (init_succeeded(c)) continue;
            step_container(run, c, now, init_policy);
            if (!init_succeeded(c)) return;  // the next one waits for this one
        }
    }

    void step_container(PodRun& run, ContainerRun& c, Clock::time_point now, const std::string& policy) {
        switch (c.state) {
        case State::Waiting:
            if (c.due && now < *c.due) break;
            start_container(run, c);
            break;
        case State::Running: {
            const auto& b = opts_.images.find(c.spec.image);
            report_probe_failures(run, c);
            if (!c.liveness_kill && started(c) && c.liveness && !c.liveness->ok()) {
                // As the kubelet: the container is killed and then restarted per restartPolicy.
                c.liveness_kill = true;
                events_.emit(run.object, "Normal", "Killing",
                             "Container " + c.spec.name + " failed liveness probe, will be restarted", field_path(c), run.node);
                if (c.proc) {
                    c.proc->terminate();
                    c.kill_after = now + grace_period(run);
                } else {
                    finish(run, c, 137, "Error", "");
                }
                break;
            }
            if (c.kill_after && c.proc && !c.proc->exited() && now >= *c.kill_after) {
                c.proc->kill();  // the grace period is over, as the kubelet's SIGKILL
                c.kill_after.reset();
            }
            if (c.proc) {
                if (c.proc->exited()) {
                    int code = c.proc->exit_code();
                    finish(run, c, code, code == 0 ? "Completed" : "Error", termination_message(run, c, code));
                }
            } else if (b.kind != ImageBehaviour::Kind::RunForever && c.due && now >= *c.due) {
                int code = b.kind == ImageBehaviour::Kind::Fail ? b.exit_code : 0;
                std::string msg = b.message;
                if (msg.empty()) msg = termination_message(run, c, code);
                finish(run, c, code, code == 0 ? "Completed" : "Error", msg);
            }
            break;
        }
        case State::Terminated:
            if (policy == "Always" || policy.empty() || (policy == "OnFailure" && c.exit_code != 0)) {
                c.last_state = json::object{{"terminated", terminated_json(c)}};
                c.state = State::Waiting;
                if (c.backoff.count() > 0 && now - c.backoff_since > 2 * opts_.max_restart_backoff)
                    c.backoff = std::chrono::milliseconds(0);  // it ran long enough: forgiven
                if (c.backoff.count() == 0) {
                    // The kubelet's back-off has no entry yet: restarted at the next sync.
                    c.reason = "ContainerCreating";
                    c.message.clear();
                    c.due = now;
                    c.backoff = opts_.restart_backoff;
                    c.backoff_since = now;
                    break;
                }
                c.reason = "CrashLoopBackOff";
                c.message = "back-off " + go_duration(c.backoff) + " restarting failed container=" + c.spec.name +
                            " pod=" + run.name + "_" + run.ns + "(" + run.uid + ")";
                c.due = now + c.backoff;
                c.backoff_since = *c.due;
                c.backoff = std::min(c.backoff * 2, opts_.max_restart_backoff);
                // The same words each time: the recorder aggregates them into one event's count.
                events_.emit(run.object, "Warning", "BackOff",
                             "Back-off restarting failed container " + c.spec.name + " in pod " + run.name + "_" +
                                 run.ns + "(" + run.uid + ")",
                             field_path(c), run.node);
            }
            break;
        }
    }

    void finish(PodRun& run, ContainerRun& c, int code, std::string reason, std::string message) {
        // The instance's log ends with it: followers (kubectl logs -f) return.
        logs_.close(run.ns, run.name, c.spec.name);
        c.state = State::Terminated;
        c.exit_code = code;
        c.reason = std::move(reason);
        c.message = std::move(message);
        c.finished_at = api::format_rfc3339(std::chrono::system_clock::now());
        c.due.reset();
        c.proc.reset();
        c.liveness.reset();
        c.readiness.reset();
        c.startup.reset();
        c.liveness_kill = false;
        c.kill_after.reset();
    }

    /// Whether a running container has passed its startup probe (or has none).
    static bool started(const ContainerRun& c) { return c.state == State::Running && (!c.startup || c.startup->ok()); }
    /// Whether a container counts as ready: running, started, and passing its readiness probe.
    static bool container_ready(const ContainerRun& c) {
        return started(c) && (!c.readiness || c.readiness->ok());
    }

    /// The container's probes, started with the instance (init containers have none).
    void start_probes(const PodRun& run, ContainerRun& c) {
        if (c.init) return;
        const auto* ports = c.spec.unknown.if_contains("ports");
        const boost::json::value no_ports;
        for (auto& n : c.reported_failures) n = 0;  // a new instance's probes count from zero
        auto make = [&](const char* key, ProbeWorker::Type type) -> std::unique_ptr<ProbeWorker> {
            const auto* probe = c.spec.unknown.if_contains(key);
            if (!probe || !probe->is_object()) return nullptr;
            return std::make_unique<ProbeWorker>(type, parse_probe(*probe, ports ? *ports : no_ports), run.pod_ip,
                                                 ProbeWorker::Clock::now(), [this] { loop_.wake(); });
        };
        c.startup = make("startupProbe", ProbeWorker::Type::Startup);
        c.liveness = make("livenessProbe", ProbeWorker::Type::Liveness);
        c.readiness = make("readinessProbe", ProbeWorker::Type::Readiness);
    }

    /// One Unhealthy event per failed probe since the last pass (the latest failure's words).
    void report_probe_failures(PodRun& run, ContainerRun& c) {
        ProbeWorker* workers[3] = {c.liveness.get(), c.readiness.get(), c.startup.get()};
        for (std::size_t i = 0; i < 3; ++i) {
            if (!workers[i]) continue;
            auto [count, message] = workers[i]->failures();
            if (count <= c.reported_failures[i]) continue;
            c.reported_failures[i] = count;
            events_.emit(run.object, "Warning", "Unhealthy", workers[i]->name() + " probe failed: " + message,
                         field_path(c), run.node);
        }
    }

    /// The termination message file's content (at most 4096 bytes), or with
    /// FallbackToLogsOnError and a failure, the log's last 80 lines (at most 2048 bytes).
    std::string termination_message(const PodRun& run, const ContainerRun& c, int code) {
        std::string msg;
        if (!c.termination_file.empty()) {
            std::ifstream in(c.termination_file, std::ios::binary);
            char buf[4096];
            in.read(buf, sizeof buf);
            msg.assign(buf, static_cast<std::size_t>(in.gcount()));
        }
        if (msg.empty() && code != 0 && c.spec.terminationMessagePolicy == "FallbackToLogsOnError") {
            msg = logs_.read(run.ns, run.name, c.spec.name, 80).value_or("");
            if (msg.size() > 2048) msg.erase(0, msg.size() - 2048);
        }
        return msg;
    }

    void fail_to_start(PodRun& run, ContainerRun& c, const std::string& reason, const std::string& message) {
        c.state = State::Waiting;
        c.reason = reason;
        c.message = message;
        if (c.failed_event != message) {
            c.failed_event = message;
            events_.emit(run.object, "Warning", "Failed", "Error: " + message, field_path(c), run.node);
        }
    }

    void start_container(PodRun& run, ContainerRun& c) {
        const auto& b = opts_.images.find(c.spec.image);
        if (!c.pulled) {
            c.pulled = true;
            events_.emit(run.object, "Normal", "Pulled",
                         "Container image \"" + c.spec.image + "\" already present on machine", field_path(c), run.node);
        }
        auto env = resolve_env(run, c);
        if (auto* err = std::get_if<std::string>(&env)) {
            fail_to_start(run, c, "CreateContainerConfigError", *err);
            return;
        }
        Mounts mounts;
        if (auto err = map_volumes(run, c, mounts)) {
            fail_to_start(run, c, "CreateContainerConfigError", *err);
            return;
        }
        // After env and mounts, as the real kubelet's generateContainerConfig checks it.
        if (auto err = verify_run_as_non_root(run.pod, c.spec, b.user)) {
            fail_to_start(run, c, "CreateContainerConfigError", *err);
            return;
        }
        bool restarting = c.last_state.is_object() && !c.last_state.as_object().empty();
        if (restarting) {
            ++c.restarts;
            // A new instance, a new log: the terminated one's is served for previous=true.
            logs_.restart(run.ns, run.name, c.spec.name);
        }
        auto cdir = node_dir(run.node) / "pods" / run.uid / "containers" / c.spec.name;
        std::error_code dir_ec;
        make_dirs(cdir, std::filesystem::perms(0755), dir_ec);
        c.termination_file = cdir / ("termination-log-" + std::to_string(c.restarts));
        std::ofstream(c.termination_file).close();
        // 0666 as the real kubelet makes it, so that a container of any uid can write it.
        ::chmod(c.termination_file.c_str(), 0666);
        auto tpath = c.spec.terminationMessagePath.empty() ? std::string("/dev/termination-log") : c.spec.terminationMessagePath;
        mounts.push_back({tpath, c.termination_file, false});
        std::sort(mounts.begin(), mounts.end(),
                  [](const auto& a, const auto& b2) { return a.path.size() > b2.path.size(); });

        c.container_id = "vck://" + run.uid.substr(0, 8) + "-" + c.spec.name + "-" + std::to_string(c.restarts);
        events_.emit(run.object, "Normal", "Created", "Created container " + c.spec.name, field_path(c), run.node);
        c.started_at = api::format_rfc3339(std::chrono::system_clock::now());
        c.failed_event.clear();
        if (b.kind == ImageBehaviour::Kind::Execute) {
            HostProcess::Spec spec;
            std::string command0 = c.spec.command.empty() ? std::string() : c.spec.command.front();
            auto program = b.program_for(command0);
            if (!program) {
                finish(run, c, 128, "StartError", b.missing_program(command0, c.spec.image));
                events_.emit(run.object, "Warning", "Failed", "Error: " + c.message, field_path(c), run.node);
                return;
            }
            spec.argv.push_back(program->string());
            // $(VAR) in command and args is the container's variable, as the kubelet expands it.
            const auto& vars = std::get<Env>(env);
            for (std::size_t i = 1; i < c.spec.command.size(); ++i)
                spec.argv.push_back(rewrite(expand(c.spec.command[i], vars), mounts));
            for (const auto& a : c.spec.args) spec.argv.push_back(rewrite(expand(a, vars), mounts));
            spec.env = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOSTNAME=" + run.name};
            for (auto& [k, v] : service_env(mounts)) spec.env.push_back(k + "=" + v);
            for (auto& [k, v] : std::get<Env>(env)) spec.env.push_back(k + "=" + rewrite(v, mounts));
            spec.cwd = cdir;
            for (const auto& m : mounts) (m.read_only ? spec.read_only : spec.writable).push_back(m.host);
            if (users_modelled_) {
                auto id = effective_identity(run.pod, c.spec, b.user);
                spec.run_as = HostProcess::Credentials{id.uid, id.gid, {id.groups.begin(), id.groups.end()}};
            }
            auto ns = run.ns, pod = run.name, name = c.spec.name;
            try {
                c.proc = HostProcess::spawn(
                    spec, [this, ns, pod, name](std::string_view out) { logs_.append(ns, pod, name, out); },
                    [this] { loop_.wake(); });
            } catch (const std::exception& e) {
                auto msg = std::string("failed to create containerd task: failed to start container \"") + c.spec.name +
                           "\": exec: " + e.what();
                finish(run, c, 128, "StartError", msg);
                events_.emit(run.object, "Warning", "Failed", "Error: " + msg, field_path(c), run.node);
                return;
            }
        } else {
            std::string text;
            for (const auto& line : b.log_lines) text += line + "\n";
            if (!text.empty()) logs_.append(run.ns, run.name, c.spec.name, text);
            if (b.kind != ImageBehaviour::Kind::RunForever) c.due = Clock::now() + b.delay;
            else c.due.reset();
        }
        c.state = State::Running;
        c.reason.clear();
        c.message.clear();
        start_probes(run, c);
        events_.emit(run.object, "Normal", "Started", "Started container " + c.spec.name, field_path(c), run.node);
    }

    // ---- environment and volumes --------------------------------------------------------

    using Env = std::vector<std::pair<std::string, std::string>>;
    /// A container's view of one volume: where it mounts, the host path behind it, and whether
    /// the container may write it (a node mounts it read-only: readOnly on the mount or the
    /// claim, a read-only NFS PV, and always configMap, secret, downwardAPI and projected).
    struct Mount {
        std::string path;
        std::filesystem::path host;
        bool read_only = false;
    };
    using Mounts = std::vector<Mount>;

    std::optional<json::value> get(const ResourceId& id, const std::string& ns, const std::string& name) {
        try {
            return store_.get(id, ns, name);
        } catch (const StoreError& e) {
            if (e.code() == 404) return std::nullopt;
            throw;
        }
    }

    /// `$(NAME)` refers to an earlier variable; `$$` escapes, as in Kubernetes' expansion.
    static std::string expand(const std::string& s, const Env& earlier) {
        std::string out;
        for (std::size_t i = 0; i < s.size(); ++i) {
            if (s[i] == '$' && i + 1 < s.size() && s[i + 1] == '$') {
                out += '$';
                ++i;
            } else if (s[i] == '$' && i + 1 < s.size() && s[i + 1] == '(') {
                auto close = s.find(')', i + 2);
                if (close == std::string::npos) {
                    out += s.substr(i);
                    break;
                }
                auto name = s.substr(i + 2, close - i - 2);
                auto it = std::find_if(earlier.rbegin(), earlier.rend(), [&](const auto& kv) { return kv.first == name; });
                out += it == earlier.rend() ? s.substr(i, close - i + 1) : it->second;
                i = close;
            } else {
                out += s[i];
            }
        }
        return out;
    }

    std::variant<Env, std::string> resolve_env(const PodRun& run, const ContainerRun& c) {
        Env env;
        for (const auto& e : c.spec.env) {
            if (!e.valueFrom) {
                env.emplace_back(e.name, expand(e.value, env));
                continue;
            }
            if (const auto& ref = e.valueFrom->secretKeyRef) {
                bool optional = ref->optional.value_or(false);
                auto secret = get(secrets_id, run.ns, ref->name);
                if (!secret) {
                    if (optional) continue;
                    return "secret \"" + ref->name + "\" not found";
                }
                const auto* data = secret->as_object().if_contains("data");
                const auto* v = data && data->is_object() ? data->as_object().if_contains(ref->key) : nullptr;
                if (!v || !v->is_string()) {
                    if (optional) continue;
                    return "couldn't find key " + ref->key + " in Secret " + run.ns + "/" + ref->name;
                }
                env.emplace_back(e.name, client::base64_decode(std::string(v->get_string())).value_or(""));
                continue;
            }
            const auto& more = e.valueFrom->unknown;
            if (const auto* cm = more.if_contains("configMapKeyRef"); cm && cm->is_object()) {
                auto str = [&](const char* k) {
                    const auto* x = cm->as_object().if_contains(k);
                    return x && x->is_string() ? std::string(x->get_string()) : std::string();
                };
                const auto* opt = cm->as_object().if_contains("optional");
                bool optional = opt && opt->is_bool() && opt->get_bool();
                auto map = get(configmaps_id, run.ns, str("name"));
                if (!map) {
                    if (optional) continue;
                    return "configmap \"" + str("name") + "\" not found";
                }
                const auto* data = map->as_object().if_contains("data");
                const auto* v = data && data->is_object() ? data->as_object().if_contains(str("key")) : nullptr;
                if (!v || !v->is_string()) {
                    if (optional) continue;
                    return "couldn't find key " + str("key") + " in ConfigMap " + run.ns + "/" + str("name");
                }
                env.emplace_back(e.name, std::string(v->get_string()));
                continue;
            }
            if (const auto* fr = more.if_contains("fieldRef"); fr && fr->is_object()) {
                const auto* p = fr->as_object().if_contains("fieldPath");
                std::string path = p && p->is_string() ? std::string(p->get_string()) : "";
                auto value = field_value(run, path);
                if (!value) return "unsupported fieldPath: " + path;
                env.emplace_back(e.name, *value);
            }
            if (const auto* rf = more.if_contains("resourceFieldRef"); rf && rf->is_object()) {
                auto value = resource_value(run, c, rf->as_object());
                if (auto* err = std::get_if<resource_field::Error>(&value)) return err->message;
                env.emplace_back(e.name, std::get<resource_field::Value>(value).text);
            }
        }
        return env;
    }

    /// A resourceFieldRef's value: of the named container (default: this one) and the node's
    /// allocatable (resource_field.hpp).
    std::variant<resource_field::Value, resource_field::Error> resource_value(const PodRun& run, const ContainerRun& c,
                                                                               const json::object& ref) {
        const api::Container* target = &c.spec;
        if (const auto* n = ref.if_contains("containerName"); n && n->is_string() && !n->get_string().empty()) {
            target = nullptr;
            for (const auto& other : run.containers)
                if (other.spec.name == n->get_string()) target = &other.spec;
            if (!target) return resource_field::Error{"container " + std::string(n->get_string()) + " not found"};
        }
        json::value allocatable;
        if (auto node = get(nodes_id, "", run.node)) {
            boost::system::error_code ec;
            if (const auto* a = node->find_pointer("/status/allocatable", ec)) allocatable = *a;
        }
        return resource_field::value_of(ref, target->resources, allocatable);
    }

    /// A downward API fieldRef's value for the pod, or nothing for a path not served.
    static std::optional<std::string> field_value(const PodRun& run, const std::string& path) {
        if (path == "metadata.name") return run.name;
        if (path == "metadata.namespace") return run.ns;
        if (path == "metadata.uid") return run.uid;
        if (path == "spec.nodeName") return run.node;
        if (path == "spec.serviceAccountName") return run.pod.spec.serviceAccountName;
        if (path == "status.hostIP") return run.host_ip;
        if (path == "status.podIP") return run.pod_ip;
        return std::nullopt;
    }

    /// What a real kubelet gives every container for the `kubernetes` service (the API
    /// server), and VCK_SERVICE_ACCOUNT_DIR: the host directory of a service-account mount,
    /// which a host program cannot reach at its mountPath (client/in_cluster.hpp reads it).
    Env service_env(const Mounts& mounts) const {
        Env env;
        if (opts_.api_port != 0) {
            auto port = std::to_string(opts_.api_port);
            auto url = "tcp://" + opts_.api_host + ":" + port;
            env = {{"KUBERNETES_SERVICE_HOST", opts_.api_host},
                   {"KUBERNETES_SERVICE_PORT", port},
                   {"KUBERNETES_SERVICE_PORT_HTTPS", port},
                   {"KUBERNETES_PORT", url},
                   {"KUBERNETES_PORT_443_TCP", url},
                   {"KUBERNETES_PORT_443_TCP_PROTO", "tcp"},
                   {"KUBERNETES_PORT_443_TCP_PORT", port},
                   {"KUBERNETES_PORT_443_TCP_ADDR", opts_.api_host}};
        }
        for (const auto& m : mounts)
            if (m.path == service_accounts::token_mount_path) env.emplace_back("VCK_SERVICE_ACCOUNT_DIR", m.host.string());
        return env;
    }

    /// Writes `text` to `file` whole (a reader never sees half of a refreshed token) with `mode`.
    static std::optional<std::string> write_file(const std::filesystem::path& file, const std::string& text, mode_t mode) {
        std::error_code ec;
        std::filesystem::create_directories(file.parent_path(), ec);
        auto tmp = file;
        tmp += ".tmp";
        {
            std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
            out << text;
            if (!out) return "cannot write " + file.string();
        }
        ::chmod(tmp.c_str(), mode);
        std::filesystem::rename(tmp, file, ec);
        if (ec) return "cannot write " + file.string() + ": " + ec.message();
        return std::nullopt;
    }

    /// The volume's files as a projected volume gives them: a projected volume itself, and a
    /// plain secret (secretName) or configMap (name) volume as the one source it is (items,
    /// optional and defaultMode as they say); nullopt for any other volume.
    static std::optional<json::value> as_projected(const api::Volume& vol) {
        if (const auto* projected = vol.unknown.if_contains("projected")) return *projected;
        for (const char* kind : {"secret", "configMap"}) {
            const auto* v = vol.unknown.if_contains(kind);
            if (!v || !v->is_object()) continue;
            json::object source = v->get_object();
            json::object out{{"sources", json::array{json::object{{kind, json::object{}}}}}};
            if (auto* mode = source.if_contains("defaultMode")) out["defaultMode"] = *mode;
            source.erase("defaultMode");
            if (std::string_view(kind) == "secret") {
                if (auto* name = source.if_contains("secretName")) source["name"] = *name;
                source.erase("secretName");
            }
            out["sources"].as_array()[0].as_object()[kind] = std::move(source);
            return json::value(std::move(out));
        }
        return std::nullopt;
    }

    /// A projected volume's files in `dir`: serviceAccountToken (a token bound to the pod,
    /// kept fresh), configMap and secret (their items, or every key), downwardAPI (fieldRef
    /// items). A missing ConfigMap, Secret or key that is not optional is an error, as the
    /// real kubelet's mount fails on it.
    std::optional<std::string> project(PodRun& run, const json::value& projected, const std::filesystem::path& dir) {
        auto str = [](const json::value* v, std::string_view k) {
            const auto* x = v && v->is_object() ? v->get_object().if_contains(k) : nullptr;
            return x && x->is_string() ? std::string(x->get_string()) : std::string();
        };
        auto member = [](const json::value* v, std::string_view k) -> const json::value* {
            return v && v->is_object() ? v->get_object().if_contains(k) : nullptr;
        };
        auto mode = static_cast<mode_t>(0644);
        if (const auto* m = member(&projected, "defaultMode"); m && m->is_number()) mode = static_cast<mode_t>(m->to_number<int>());
        const auto* sources = member(&projected, "sources");
        if (!sources || !sources->is_array()) return std::nullopt;
        for (const auto& src : sources->get_array()) {
            if (const auto* t = member(&src, "serviceAccountToken")) {
                std::int64_t seconds = 3600;
                if (const auto* e = member(t, "expirationSeconds"); e && e->is_number()) seconds = e->to_number<std::int64_t>();
                json::object spec{{"expirationSeconds", seconds},
                                  {"boundObjectRef", json::object{{"kind", "Pod"}, {"apiVersion", "v1"}, {"name", run.name}, {"uid", run.uid}}}};
                if (auto aud = str(t, "audience"); !aud.empty()) spec["audiences"] = json::array{json::string(aud)};
                ProjectedToken pt{json::object{{"spec", std::move(spec)}}, run.pod.spec.serviceAccountName, mode, {}};
                auto file = dir / str(t, "path");
                if (auto err = issue_token(run, file, pt)) return err;
                run.tokens[file] = std::move(pt);
                continue;
            }
            const bool is_secret = member(&src, "secret") != nullptr;
            if (const auto* ref = is_secret ? member(&src, "secret") : member(&src, "configMap")) {
                const auto* opt = member(ref, "optional");
                bool optional = opt && opt->is_bool() && opt->get_bool();
                auto name = str(ref, "name");
                auto obj = get(is_secret ? secrets_id : configmaps_id, run.ns, name);
                if (!obj) {
                    if (optional) continue;
                    return std::string(is_secret ? "secret" : "configmap") + " \"" + name + "\" not found";
                }
                const auto* data = member(&*obj, "data");
                auto value = [&](const json::value& v) {
                    std::string text = v.is_string() ? std::string(v.get_string()) : std::string();
                    return is_secret ? client::base64_decode(text).value_or("") : text;
                };
                const auto* items = member(ref, "items");
                if (items && items->is_array() && !items->get_array().empty()) {
                    for (const auto& item : items->get_array()) {
                        const auto* v = member(data, str(&item, "key"));
                        if (!v) {
                            if (optional) continue;
                            return "configmap references non-existent config key: " + str(&item, "key");
                        }
                        if (auto err = write_file(dir / str(&item, "path"), value(*v), mode)) return err;
                    }
                } else if (data && data->is_object()) {
                    for (const auto& kv : data->get_object())
                        if (auto err = write_file(dir / std::string(kv.key()), value(kv.value()), mode)) return err;
                }
                continue;
            }
            if (const auto* d = member(&src, "downwardAPI")) {
                const auto* items = member(d, "items");
                if (!items || !items->is_array()) continue;
                for (const auto& item : items->get_array()) {
                    auto path = str(member(&item, "fieldRef"), "fieldPath");
                    auto v = field_value(run, path);
                    if (!v) return "unsupported fieldPath: " + path;
                    if (auto err = write_file(dir / str(&item, "path"), *v, mode)) return err;
                }
            }
        }
        return std::nullopt;
    }

    /// Requests `pt`'s token and writes it; schedules its refresh at 80% of its life.
    std::optional<std::string> issue_token(const PodRun& run, const std::filesystem::path& file, ProjectedToken& pt) {
        if (!opts_.request_token) return std::string("no service account token issuer for the projected token " + file.filename().string());
        json::value answer;
        try {
            answer = opts_.request_token(run.ns, pt.account, pt.request);
        } catch (const StoreError& e) {
            return "failed to fetch token: " + e.status().message;
        }
        const auto* status = answer.is_object() ? answer.get_object().if_contains("status") : nullptr;
        const auto* token = status && status->is_object() ? status->get_object().if_contains("token") : nullptr;
        if (!token || !token->is_string()) return std::string("failed to fetch token: no token in the answer");
        std::int64_t seconds = pt.request.at("spec").at("expirationSeconds").to_number<std::int64_t>();
        pt.refresh = Clock::now() + std::chrono::milliseconds(seconds * 800);
        return write_file(file, std::string(token->get_string()), pt.mode);
    }

    /// Renews each token whose refresh time has come (a failure keeps the old one, retried soon).
    void refresh_tokens(PodRun& run, Clock::time_point now) {
        for (auto& [file, t] : run.tokens) {
            if (now < t.refresh) continue;
            if (issue_token(run, file, t)) t.refresh = now + std::chrono::seconds(1);
        }
    }

    /// node_dir(node)/<path> for a host path, refusing one that climbs out of the node.
    std::optional<std::filesystem::path> on_node(const std::string& node, const std::string& path) {
        auto base = node_dir(node).lexically_normal();
        auto p = (base / std::filesystem::path(path).relative_path()).lexically_normal();
        auto rel = p.lexically_relative(base);
        if (!rel.empty() && *rel.begin() == "..") return std::nullopt;
        return p;
    }

    std::optional<std::string> map_volumes(PodRun& run, const ContainerRun& c, Mounts& mounts) {
        for (const auto& m : c.spec.volumeMounts) {
            const api::Volume* vol = nullptr;
            for (const auto& v : run.pod.spec.volumes)
                if (v.name == m.name) vol = &v;
            if (!vol) return "volume \"" + m.name + "\" not found in the pod's volumes";
            std::optional<std::filesystem::path> host;
            bool file = false;
            std::string source;
            auto mode = std::filesystem::perms(0755);  // of a volume directory the kubelet makes
            bool read_only = m.readOnly.value_or(false);
            if (vol->hostPath) {
                host = on_node(run.node, vol->hostPath->path);
                source = vol->hostPath->path;
                file = vol->hostPath->type == "FileOrCreate" || vol->hostPath->type == "File";
            } else if (vol->persistentVolumeClaim) {
                auto pvc = get(pvcs_id, run.ns, vol->persistentVolumeClaim->claimName);
                if (!pvc) return "persistentvolumeclaim \"" + vol->persistentVolumeClaim->claimName + "\" not found";
                auto claim = api::from_json<api::PersistentVolumeClaim>(*pvc);
                auto pvj = get(pvs_id, "", claim.spec.volumeName);
                if (!pvj) return "persistentvolume \"" + claim.spec.volumeName + "\" not found";
                auto pv = api::from_json<api::PersistentVolume>(*pvj);
                read_only = read_only || vol->persistentVolumeClaim->readOnly.value_or(false) ||
                            (pv.spec.nfs && pv.spec.nfs->readOnly.value_or(false));
                if (pv.spec.hostPath) host = on_node(run.node, source = pv.spec.hostPath->path);
                else if (pv.spec.local) host = on_node(run.node, source = pv.spec.local->path);
                else if (pv.spec.nfs) {
                    // NFS is shared by every node: one directory per server under data_root/nfs.
                    auto base = (opts_.data_root / "nfs" / pv.spec.nfs->server).lexically_normal();
                    auto p = (base / std::filesystem::path(pv.spec.nfs->path).relative_path()).lexically_normal();
                    if (p.lexically_relative(base).native().starts_with("..")) host.reset();
                    else host = p;
                    source = pv.spec.nfs->path;
                } else {
                    host = node_dir(run.node) / "pods" / run.uid / "volumes" / vol->name;
                }
            } else {
                host = node_dir(run.node) / "pods" / run.uid / "volumes" / vol->name;  // emptyDir and the rest
                if (!vol->emptyDir.is_null()) mode = std::filesystem::perms(0777);     // as the kubelet makes it
            }
            if (!host) return "host path \"" + source + "\" of volume \"" + vol->name + "\" leaves the node's directory";
            std::error_code ec;
            auto parents_mode = std::filesystem::perms(0755);
            if (!m.subPath.empty()) {
                auto sub = (*host / m.subPath).lexically_normal();
                if (sub.lexically_relative(*host).native().starts_with("..")) return "subPath \"" + m.subPath + "\" leaves the volume";
                // The volume itself exists first (hostPath DirectoryOrCreate and the rest).
                make_dirs(*host, mode, ec);
                // The kubelet makes each missing directory of a subPath with its volume's mode.
                struct stat st {};
                if (::stat(host->c_str(), &st) == 0) mode = parents_mode = std::filesystem::perms(st.st_mode & 07777);
                bool existed = std::filesystem::exists(sub, ec);
                auto resolved = resolve_within(*host, sub.lexically_relative(*host));
                // The real kubelet's wording: the details stay in its own log, not the pod's.
                if (!resolved)
                    return (existed ? "failed to prepare subPath for volumeMount \"" : "failed to create subPath directory for volumeMount \"") +
                           m.name + "\" of container \"" + c.spec.name + "\"";
                host = *resolved;
            }
            if (file && m.subPath.empty()) {
                make_dirs(host->parent_path(), parents_mode, ec);
                if (!std::filesystem::exists(*host)) {
                    std::ofstream(*host).close();
                    ::chmod(host->c_str(), 0644);  // FileOrCreate's mode on a node
                }
            } else {
                make_dirs(*host, mode, ec, parents_mode);
            }
            if (ec) return "cannot create " + host->string() + ": " + ec.message();
            if (m.subPath.empty())
                if (auto projected = as_projected(*vol))
                    if (auto err = project(run, *projected, *host))
                        return "MountVolume.SetUp failed for volume \"" + vol->name + "\" : " + *err;
            // The kubelet mounts API data (configMap, secret, downwardAPI, projected) read-only.
            for (const char* kind : {"configMap", "secret", "downwardAPI", "projected"})
                if (vol->unknown.contains(kind)) read_only = true;
            if (m.mountPath != "/") mounts.push_back({m.mountPath, *host, read_only});
        }
        return std::nullopt;
    }

    /// Creates `dir` and its missing parents as the kubelet does (os.MkdirAll): owned by this
    /// process, `dir` with exactly `mode` and each parent `parents_mode`, whatever the umask.
    /// Existing directories are left as they are.
    static void make_dirs(const std::filesystem::path& dir, std::filesystem::perms mode, std::error_code& ec,
                          std::filesystem::perms parents_mode = std::filesystem::perms(0755)) {
        namespace fs = std::filesystem;
        ec.clear();
        std::vector<fs::path> missing;
        for (fs::path p = dir.lexically_normal(); !p.empty(); p = p.parent_path()) {
            if (fs::is_directory(p, ec)) break;
            missing.push_back(p);
            if (p == p.parent_path()) break;
        }
        ec.clear();
        for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
            auto m = static_cast<mode_t>(it == missing.rend() - 1 ? mode : parents_mode);
            if (::mkdir(it->c_str(), m) != 0) {
                int err = errno;
                if (err == EEXIST && fs::is_directory(*it, ec)) continue;  // made meanwhile
                ec.assign(err == EEXIST ? ENOTDIR : err, std::generic_category());
                return;
            }
            ::chmod(it->c_str(), m);
        }
    }

    /// The first directory from / down to `dir` that other users cannot search, if any.
    static std::optional<std::filesystem::path> unsearchable(const std::filesystem::path& dir) {
        std::filesystem::path p;
        for (const auto& part : std::filesystem::absolute(dir).lexically_normal()) {
            p /= part;
            struct stat st {};
            if (::stat(p.c_str(), &st) != 0 || !(st.st_mode & S_IXOTH)) return p;
        }
        return std::nullopt;
    }

    /// `base`/`rel` with each existing symlink on the way resolved, or nullopt when one dangles
    /// or leads outside `base` (what the real kubelet checks before it mounts a subPath). A
    /// symlink's absolute target is read against this machine's root, not the node's
    /// directory, so the sandbox refuses some links that a real node would accept; never the
    /// reverse.
    static std::optional<std::filesystem::path> resolve_within(const std::filesystem::path& base,
                                                               const std::filesystem::path& rel) {
        namespace fs = std::filesystem;
        std::error_code ec;
        fs::path root = fs::canonical(base, ec);
        if (ec) return std::nullopt;
        fs::path cur = root;
        for (const auto& part : rel) {
            fs::path next = cur / part;
            auto st = fs::symlink_status(next, ec);
            if (!ec && fs::is_symlink(st)) {
                next = fs::canonical(next, ec);
                if (ec) return std::nullopt;
                auto up = next.lexically_relative(root);
                if (up.empty() || *up.begin() == "..") return std::nullopt;
            }
            cur = next;
        }
        return cur;
    }

    /// An argument or value under a mountPath, itself or after the first '=', made a host path.
    static std::string rewrite(const std::string& s, const Mounts& mounts) {
        auto one = [&](const std::string& v) -> std::optional<std::string> {
            for (const auto& [mp, host, read_only] : mounts) {
                auto bare = mp.size() > 1 && mp.back() == '/' ? mp.substr(0, mp.size() - 1) : mp;
                if (v == bare) return host.string();
                if (v.size() > bare.size() && v.compare(0, bare.size(), bare) == 0 && v[bare.size()] == '/')
                    return host.string() + v.substr(bare.size());
            }
            return std::nullopt;
        };
        if (auto r = one(s)) return *r;
        if (auto eq = s.find('='); eq != std::string::npos)
            if (auto r = one(s.substr(eq + 1))) return s.substr(0, eq + 1) + *r;
        return s;
    }

    // ---- status ---------------------------------------------------------------------------

    static json::object terminated_json(const ContainerRun& c) {
        json::object t{{"exitCode", c.exit_code}, {"reason", c.reason}, {"startedAt", c.started_at},
                       {"finishedAt", c.finished_at}, {"containerID", c.container_id}};
        if (!c.message.empty()) t["message"] = c.message;
        return t;
    }

    std::string phase_of(const PodRun& run) const {
        const auto& policy = run.pod.spec.restartPolicy;
        if (run.deadline_exceeded) return "Failed";
        bool all_done = true, any_failed = false, any_main = false;
        for (const auto& c : run.containers) {
            if (c.init) {
                if (c.state == State::Terminated && c.exit_code != 0 && policy == "Never") return "Failed";
                if (!init_succeeded(c)) return "Pending";
                continue;
            }
            any_main = true;
            bool ever_ran = c.restarts > 0 || !c.last_state.as_object().empty();
            if (c.state == State::Waiting && !ever_ran) return "Pending";
            if (c.state != State::Terminated) all_done = false;
            else if (c.exit_code != 0) any_failed = true;
        }
        if (!any_main) return "Pending";
        if (all_done && policy == "Never") return any_failed ? "Failed" : "Succeeded";
        if (all_done && policy == "OnFailure" && !any_failed) return "Succeeded";
        return "Running";
    }

    json::object condition(PodRun& run, const std::string& type, bool ok, const std::string& reason = {},
                           const std::string& message = {}) {
        std::string status = ok ? "True" : "False";
        auto& [was, at] = run.transitions[type];
        if (was != status) {
            was = status;
            at = api::format_rfc3339(std::chrono::system_clock::now());
        }
        json::object c{{"type", type}, {"status", status}, {"lastProbeTime", nullptr}, {"lastTransitionTime", at}};
        if (!reason.empty()) c["reason"] = reason;
        if (!message.empty()) c["message"] = message;
        return c;
    }

    void write_status(PodRun& run) {
        auto phase = phase_of(run);
        if (phase == "Succeeded" || phase == "Failed") run.finished = true;
        std::vector<std::string> unready, uninitialized;
        for (const auto& c : run.containers) {
            if (c.init && !init_succeeded(c)) uninitialized.push_back(c.spec.name);
            if (!c.init && !container_ready(c)) unready.push_back(c.spec.name);
        }
        auto names = [](const std::vector<std::string>& v) {
            std::string out = "[";
            for (std::size_t i = 0; i < v.size(); ++i) out += (i ? " " : "") + v[i];
            return out + "]";
        };
        std::string reason, message;
        if (run.finished) reason = "PodCompleted";
        else if (!unready.empty()) {
            reason = "ContainersNotReady";
            message = "containers with unready status: " + names(unready);
        }
        bool ready = unready.empty() && !run.finished;
        bool initialized = uninitialized.empty();
        json::array conditions{initialized ? condition(run, "Initialized", true)
                                           : condition(run, "Initialized", false, "ContainersNotInitialized",
                                                       "containers with incomplete status: " + names(uninitialized)),
                               condition(run, "Ready", ready, reason, message),
                               condition(run, "ContainersReady", ready, reason, message),
                               condition(run, "PodScheduled", true)};
        json::array statuses, init_statuses;
        for (const auto& c : run.containers) {
            json::object state;
            if (c.state == State::Waiting) {
                json::object w{{"reason", c.reason}};
                if (!c.message.empty()) w["message"] = c.message;
                state["waiting"] = std::move(w);
            } else if (c.state == State::Running) {
                state["running"] = json::object{{"startedAt", c.started_at}};
            } else {
                state["terminated"] = terminated_json(c);
            }
            json::object s{{"name", c.spec.name},
                           {"state", std::move(state)},
                           {"lastState", c.last_state},
                           {"ready", c.init ? init_succeeded(c) : container_ready(c)},
                           {"restartCount", c.restarts},
                           {"image", c.spec.image},
                           {"imageID", "vck-sandbox://" + c.spec.image},
                           {"started", started(c)}};
            if (!c.container_id.empty()) s["containerID"] = c.container_id;
            (c.init ? init_statuses : statuses).push_back(std::move(s));
        }
        json::object status{{"phase", phase},
                            {"conditions", std::move(conditions)},
                            {"hostIP", run.host_ip},
                            {"hostIPs", json::array{json::object{{"ip", run.host_ip}}}},
                            {"podIP", run.pod_ip},
                            {"podIPs", json::array{json::object{{"ip", run.pod_ip}}}},
                            {"startTime", run.start_time},
                            {"containerStatuses", std::move(statuses)}};
        if (!init_statuses.empty()) status["initContainerStatuses"] = std::move(init_statuses);
        if (run.deadline_exceeded) {
            status["reason"] = "DeadlineExceeded";
            status["message"] = "Pod was active on the node longer than the specified deadline";
        }
        json::value status_value = std::move(status);
        if (run.written == status_value) {
            run.settled = run.finished;
            return;
        }
        json::value patch = json::object{{"status", status_value}};
        try {
            store_.patch(pods_id, run.ns, run.name, client::PatchType::Merge, patch, "status");
            run.written = std::move(status_value);
            run.settled = run.finished;
        } catch (const StoreError& e) {
            // Deleted meanwhile: the next pass notices. Anything else is a bug worth seeing.
            if (e.code() != 404)
                std::fprintf(stderr, "vck-sandbox kubelet: status of %s/%s: %s\n", run.ns.c_str(), run.name.c_str(),
                             e.what());
        }
    }

    void heartbeat() {
        auto now = api::format_rfc3339(std::chrono::system_clock::now());
        for (const auto& n : opts_.nodes) {
            try {
                auto node = store_.get(nodes_id, "", n.name);
                auto* st = node.as_object().if_contains("status");
                if (!st || !st->is_object()) continue;
                auto* conds = st->as_object().if_contains("conditions");
                if (!conds || !conds->is_array()) continue;
                for (auto& c : conds->as_array())
                    if (c.is_object()) c.as_object()["lastHeartbeatTime"] = now;
                store_.update(nodes_id, "", n.name, std::move(node), "status");
            } catch (const StoreError&) {
                // Changed by someone else (a test flipping a condition): next time.
            }
        }
    }

    ObjectStore& store_;
    PodLogs& logs_;
    KubeletOptions opts_;
    EventEmitter events_;
    std::map<std::string, std::size_t> node_index_;
    std::map<std::string, PodRun> runs_;  // by pod uid; touched only by the loop's thread (and stop())
    ChangeFeed feed_;
    bool loaded_ = false;  // the pods were listed since start()
    struct Foreign {
        std::string node, ns, name;
    };
    std::map<std::string, Foreign> foreign_terminating_;  // by uid: terminating on a node not simulated here
    Clock::time_point next_heartbeat_{};
    PodNetwork pod_network_;
    bool users_modelled_ = false;  // written by start() before the loop's thread starts
    SimLoop loop_;  // last: its thread uses everything above
};

} // namespace vck::sandbox
