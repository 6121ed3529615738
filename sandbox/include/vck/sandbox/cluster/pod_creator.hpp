// PodCreator: how the sandbox's workload controllers (ReplicaSet, StatefulSet, Job) create the
// pods of their templates. kube-controller-manager creates them through the API server, so
// admission sees every pod (a pod injection webhook injects a Deployment's or a Job's pods as
// it does a pod kubectl creates); ApiServer::pod_creator() is that path. store_pod_creator(),
// the default, writes to the store directly, for controllers run without a server.
// Guarantee: either way a refusal is a StoreError carrying the Status the server gives (a
// webhook's denial included), which the controllers turn into their FailedCreate events.
#pragma once

#include <vck/sandbox/storage/object_store.hpp>

#include <boost/json.hpp>

#include <functional>
#include <string>

namespace vck::sandbox {

using PodCreator = std::function<boost::json::value(const std::string& ns, boost::json::value pod)>;

inline PodCreator store_pod_creator(ObjectStore& store) {
    return [&store](const std::string& ns, boost::json::value pod) {
        return store.create(ResourceId{"", "v1", "pods"}, ns, std::move(pod));
    };
}

} // namespace vck::sandbox
