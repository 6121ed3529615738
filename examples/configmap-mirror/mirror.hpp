// configmap-mirror: a small operator built only from the vck library. A ConfigMap labelled
// `configmap-mirror.example.com/mirror=true` is copied into every namespace labelled
// `configmap-mirror.example.com/enabled=true`, kept equal to its source, and its copies are
// removed when the source goes away or a namespace opts out. Copies carry the label
// `configmap-mirror.example.com/source-namespace` so they are never mistaken for sources.
// Of namespaces it caches only the enabled ones (a label-selected informer, configure()).
#pragma once

#include <vck/runtime/cluster_manager.hpp>

#include <set>

namespace mirror {

namespace asio = boost::asio;
using namespace vck;

inline constexpr std::string_view source_label = "configmap-mirror.example.com/mirror";
inline constexpr std::string_view enabled_label = "configmap-mirror.example.com/enabled";
inline constexpr std::string_view copy_label = "configmap-mirror.example.com/source-namespace";

inline bool is_source(const api::ConfigMap& cm) {
    auto it = cm.metadata.labels.find(std::string(source_label));
    return it != cm.metadata.labels.end() && it->second == "true" && !cm.metadata.labels.count(std::string(copy_label));
}

/// Reconciles one source key: makes the set of copies exactly {enabled namespaces} - {source's}.
class MirrorReconciler {
public:
    MirrorReconciler(client::Client& c, std::shared_ptr<runtime::Informer<api::ConfigMap>> cms,
                     std::shared_ptr<runtime::Informer<api::Namespace>> nss, runtime::EventRecorder& events)
        : client_(c), cms_(std::move(cms)), nss_(std::move(nss)), events_(events) {}

    asio::awaitable<runtime::Result> reconcile(const runtime::Request& req) {
        auto src = cms_->store().get(req);
        std::set<std::string> wanted;
        if (src && is_source(*src) && src->metadata.deletionTimestamp.empty())
            for (const auto& ns : nss_->store().by_index(runtime::label_index(enabled_label), "true"))
                if (ns->metadata.name != req.namespace_ && ns->metadata.deletionTimestamp.empty())
                    wanted.insert(ns->metadata.name);
        // Existing copies of this source, from the cache's label index.
        for (const auto& copy : cms_->store().by_index(runtime::label_index(copy_label), req.namespace_)) {
            if (copy->metadata.name != req.name) continue;
            if (wanted.count(copy->metadata.namespace_)) continue;
            try {
                co_await client_.remove<api::ConfigMap>(copy->metadata.namespace_, copy->metadata.name);
            } catch (const client::ApiError& e) {
                if (!e.is(client::ErrorKind::NotFound)) throw;
            }
        }
        int written = 0;
        for (const auto& ns : wanted) {
            auto current = cms_->store().get(runtime::ObjectKey{ns, req.name});
            api::ConfigMap desired;
            desired.metadata.name = req.name;
            desired.metadata.namespace_ = ns;
            desired.metadata.labels[std::string(copy_label)] = req.namespace_;
            desired.data = src->data;
            if (!current) {
                co_await client_.create(desired);
                ++written;
            } else if (current->data != desired.data || current->metadata.labels != desired.metadata.labels) {
                desired.metadata.resourceVersion = current->metadata.resourceVersion;  // Conflict if stale
                co_await client_.replace(desired);
                ++written;
            }
        }
        if (written > 0) {
            auto msg = "mirrored into " + std::to_string(written) + " namespace(s)";
            co_await events_.record(*src, api::ConfigMap::resource, "Normal", "Mirrored", msg);
        }
        co_return runtime::Result::done();
    }

private:
    client::Client& client_;
    std::shared_ptr<runtime::Informer<api::ConfigMap>> cms_;
    std::shared_ptr<runtime::Informer<api::Namespace>> nss_;
    runtime::EventRecorder& events_;
};

/// Wires the operator into a manager: ConfigMaps are primary; a namespace change enqueues
/// every source; a copy's change enqueues its source.
class Operator {
public:
    explicit Operator(runtime::ClusterManager& m) : events_(m.event_recorder("configmap-mirror")) {
        // Only the namespaces that opted in are cached: one that opts out leaves the cache
        // (its watch reports a delete), which is all the reconciler needs to know of it.
        m.informers().configure<api::Namespace>([](runtime::InformerOptions& o) {
            auto enabled = std::string(enabled_label) + "=true";
            o.label_selector = o.label_selector.empty() ? enabled : o.label_selector + "," + enabled;
        });
        auto cms = m.informers().informer<api::ConfigMap>();
        auto nss = m.informers().informer<api::Namespace>();
        reconciler_ = std::make_shared<MirrorReconciler>(m.client(), cms, nss, events_);
        controller_ = m.controller_for<api::ConfigMap>("configmap-mirror")
                          .with_predicate([](const runtime::Change<api::ConfigMap>& c) {
                              // Copies are reconciled through their source (below), not as keys.
                              return !c.object->metadata.labels.count(std::string(copy_label)) ||
                                     c.type == runtime::ChangeType::Deleted;
                          })
                          .watches<api::Namespace>([cms](const api::Namespace&) {
                              std::vector<runtime::Request> out;
                              for (const auto& cm : cms->store().list())
                                  if (is_source(*cm)) out.push_back(runtime::key_of(*cm));
                              return out;
                          })
                          .watches<api::ConfigMap>([](const api::ConfigMap& cm) {
                              std::vector<runtime::Request> out;
                              if (auto it = cm.metadata.labels.find(std::string(copy_label)); it != cm.metadata.labels.end())
                                  out.push_back(runtime::Request{it->second, cm.metadata.name});
                              return out;
                          })
                          .workers(2)
                          .complete(reconciler_);  // registers it with `m`: m.run() runs it
    }
    runtime::Controller<api::ConfigMap>& controller() { return *controller_; }

private:
    runtime::EventRecorder events_;
    std::shared_ptr<MirrorReconciler> reconciler_;
    std::shared_ptr<runtime::Controller<api::ConfigMap>> controller_;
};

} // namespace mirror
