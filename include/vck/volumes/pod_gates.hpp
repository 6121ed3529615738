// PodGates: the reconciler's side of pod injection (volumes/pod_injection.hpp). For the pods
// that name one VolumeManager (label vck.intelai.org/volume-manager, cached by an informer view
// of their own), settle() carries out what ungate() decides:
// - Ungate: the pod is patched from the cached version to the one ungate() returns (gate
//   vck.intelai.org/data removed, node affinity narrowed to the nodes holding the data), with
//   a JSON patch that first tests the resourceVersion it was computed from, so a pod changed
//   meanwhile is decided again from its new version, never patched blindly; a Normal event
//   DataReady on the pod says so;
// - Stuck (a gated pod that can never run as made) and DataLost (a running pod whose node no
//   longer holds its data): a Warning event on the pod (DataUnavailable, DataLost) and, for
//   DataLost, on the VolumeManager; the pod is never deleted or changed: the user decides;
// - Wait and None: nothing.
// Guarantees: each (pod, decision, message) is reported once, not at every pass; a pod that is
// gone or changed before its patch is skipped quietly (its watch event brings it back); any
// other API refusal propagates (the reconcile is retried with backoff).
#pragma once

#include <vck/api/json.hpp>
#include <vck/client/client.hpp>
#include <vck/runtime/event_recorder.hpp>
#include <vck/runtime/informer.hpp>
#include <vck/runtime/object_key.hpp>
#include <vck/runtime/reconciler.hpp>
#include <vck/volumes/pod_injection.hpp>
#include <vck/webhook/json_patch.hpp>

#include <boost/asio/awaitable.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <vector>
#include <string>

namespace vck::volumes {

class PodGates {
public:
    PodGates(client::Client& c, std::shared_ptr<runtime::Informer<api::Pod>> injected, handlers::HandlerRegistry registry,
             handlers::HandlerOptions options, std::shared_ptr<runtime::EventRecorder> events)
        : client_(c), injected_(std::move(injected)), registry_(std::move(registry)), options_(std::move(options)),
          events_(std::move(events)) {}

    /// The informer view selecting the pods that name a VolumeManager.
    static void select(runtime::InformerOptions& o) {
        o.label_selector = std::string(volume_manager_label);
        o.drop_managed_fields = true;
    }
    /// The VolumeManager a pod names, as a reconcile request (none for a pod without the label).
    static std::vector<runtime::Request> request_of(const api::Pod& p) {
        auto it = p.metadata.labels.find(std::string(volume_manager_label));
        if (it == p.metadata.labels.end() || it->second.empty()) return {};
        return {runtime::Request{p.metadata.namespace_, it->second}};
    }

    /// Acts on every pod naming the VolumeManager `key`; `vm` is nullptr when it is gone.
    /// Returns how many pods were ungated.
    boost::asio::awaitable<int> settle(const runtime::ObjectKey& key, const api::VolumeManager* vm) {
        int ungated = 0;
        std::set<std::string> seen;
        // The store's label index: the pods naming this name, not every injected pod.
        for (const auto& p : injected_->store().by_index(runtime::label_index(volume_manager_label), key.name)) {
            if (p->metadata.namespace_ != key.namespace_) continue;
            seen.insert(p->metadata.uid);
            auto pod = api::to_json(*p);
            auto d = ungate(pod, vm, registry_, options_);
            switch (d.action) {
            case PodDataAction::Ungate:
                if (co_await patch(*p, pod, d.pod)) {
                    ++ungated;
                    co_await report(*p, nullptr, "Normal", "DataReady", d.message);
                }
                break;
            case PodDataAction::Stuck:
                co_await report(*p, nullptr, "Warning", "DataUnavailable", d.message);
                break;
            case PodDataAction::DataLost:
                co_await report(*p, vm, "Warning", "DataLost", d.message);
                break;
            case PodDataAction::Wait:
            case PodDataAction::None:
                break;
            }
        }
        forget_except(key, seen);
        co_return ungated;
    }

private:
    boost::asio::awaitable<bool> patch(const api::Pod& p, const boost::json::value& before, const boost::json::value& after) {
        boost::json::array ops{boost::json::object{
            {"op", "test"}, {"path", "/metadata/resourceVersion"}, {"value", p.metadata.resourceVersion}}};
        for (auto& op : webhook::create_json_patch(before, after)) ops.push_back(std::move(op));
        try {
            co_await client_.patch(api::Pod::resource, p.metadata.namespace_, p.metadata.name, client::PatchType::Json,
                                   std::move(ops));
            co_return true;
        } catch (const client::ApiError& e) {
            // Gone, or changed since it was cached (the resourceVersion test failed: 422 on a
            // 1.32 server, 409 on some): its watch event brings the new version back here.
            if (e.is(client::ErrorKind::NotFound) || e.is(client::ErrorKind::Conflict) ||
                e.is(client::ErrorKind::Invalid))
                co_return false;
            throw;
        }
    }

    boost::asio::awaitable<void> report(const api::Pod& p, const api::VolumeManager* vm, const char* type,
                                        const char* reason, const std::string& message) {
        {
            std::lock_guard lk(mu_);
            auto& last = reported_[p.metadata.uid];
            if (last == std::string(reason) + "\n" + message) co_return;
            last = std::string(reason) + "\n" + message;
        }
        if (!events_) co_return;
        co_await events_->record(p, api::Pod::resource, type, reason, message);
        if (vm) co_await events_->record(*vm, api::VolumeManager::resource, type, reason, message);
    }

    /// Drops the memory of pods of `key` that are gone, so it stays as large as the pods are.
    void forget_except(const runtime::ObjectKey& key, const std::set<std::string>& seen) {
        std::lock_guard lk(mu_);
        auto& mine = pods_of_[key.str()];
        for (const auto& uid : mine)
            if (!seen.count(uid)) reported_.erase(uid);
        mine = seen;
        if (mine.empty()) pods_of_.erase(key.str());
    }

    client::Client& client_;
    std::shared_ptr<runtime::Informer<api::Pod>> injected_;
    handlers::HandlerRegistry registry_;
    handlers::HandlerOptions options_;
    std::shared_ptr<runtime::EventRecorder> events_;
    std::mutex mu_;
    std::map<std::string, std::string> reported_;            // pod uid -> last "reason\nmessage"
    std::map<std::string, std::set<std::string>> pods_of_;   // VolumeManager key -> its pods' uids
};

} // namespace vck::volumes
