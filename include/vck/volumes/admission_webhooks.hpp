// AdmissionWebhooks: VCK's two admission webhooks on a webhook::WebhookServer, as deploy/'s
// webhook configurations call them:
// - pod injection (mutating, pod_injection_path): a pod created with the label
//   vck.intelai.org/volume-manager gets what volumes/pod_injection.hpp decides: the dataset's
//   volumes, mounts and node affinity, and the scheduling gate vck.intelai.org/data while the
//   data is not there yet; a pod naming a VolumeManager that does not exist, a failed volume,
//   and the rest of inject_pod's refusals are denied with its message;
// - VolumeManager validation (validating, volume_manager_validation_path): what
//   volumes/volume_manager_admission.hpp refuses, all failures in one message as
//   kube-apiserver words an invalid object. An update that leaves the spec as it was, and any
//   write to an object being deleted, is allowed whatever the spec says: the controller's own
//   finalizer and label writes to an object that predates the webhook must never be blocked.
// Guarantees: the handlers never throw into the server (a lookup that fails is a 500 answer
// naming the VolumeManager, which a Fail policy turns into a refused pod, never into a pod
// created without its data); they read VolumeManagers through `lookup`, which the caller
// backs with an informer cache and, on a miss, a read from the API server (a VolumeManager and
// its pods applied in one `kubectl apply` must not race the cache).
#pragma once

#include <vck/api/json.hpp>
#include <vck/api/volume_manager.hpp>
#include <vck/handlers/handler_registry.hpp>
#include <vck/volumes/pod_injection.hpp>
#include <vck/volumes/volume_manager_admission.hpp>
#include <vck/webhook/admission_handler.hpp>

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace vck::volumes {

inline constexpr std::string_view pod_injection_path = "/mutate-v1-pod";
inline constexpr std::string_view volume_manager_validation_path = "/validate-vck-intelai-org-v1alpha1-volumemanager";

/// The VolumeManager `name` in namespace `ns`, or nullopt when there is none; throws when it
/// cannot tell (the API server unreachable, say).
using VolumeManagerLookup = std::function<std::optional<api::VolumeManager>(const std::string& ns, const std::string& name)>;

/// The mutating handler of pod injection.
inline webhook::AdmissionHandler pod_injection_webhook(VolumeManagerLookup lookup, handlers::HandlerRegistry registry,
                                                       handlers::HandlerOptions options) {
    return webhook::mutating([lookup = std::move(lookup), registry = std::move(registry), options = std::move(options)](
                                 const webhook::AdmissionRequest& req, boost::json::value& pod) {
        if (req.operation != webhook::Operation::Create) return webhook::allowed();
        auto name = requested_volume_manager(req.object);
        if (!name) return webhook::allowed();
        std::optional<api::VolumeManager> vm;
        try {
            vm = lookup(req.namespace_, *name);
        } catch (const std::exception& e) {
            return webhook::errored(500, "cannot read volumemanager \"" + *name + "\" in namespace \"" + req.namespace_ +
                                             "\": " + e.what());
        }
        auto decision = inject_pod(req.object, req.namespace_, vm ? &*vm : nullptr, registry, options);
        if (!decision.allowed) return webhook::denied(decision.message);
        pod = std::move(decision.pod);
        return webhook::allowed().with_warnings(std::move(decision.warnings));
    });
}

/// The validating handler of VolumeManagers.
inline webhook::AdmissionHandler volume_manager_validation_webhook(handlers::HandlerRegistry registry,
                                                                   handlers::HandlerOptions options) {
    return webhook::validating_for<api::VolumeManager>(
        [registry = std::move(registry), options = std::move(options)](
            const webhook::AdmissionRequest&, const api::VolumeManager* vm, const api::VolumeManager* old) {
            if (!vm || !vm->metadata.deletionTimestamp.empty()) return webhook::allowed();
            if (old && api::to_json(old->spec) == api::to_json(vm->spec)) return webhook::allowed();
            handlers::HandlerContext ctx;
            ctx.options = options;
            auto review = review_volume_manager(*vm, registry, ctx);
            if (!review.allowed()) return webhook::denied(review.message()).with_warnings(std::move(review.warnings));
            return webhook::allowed().with_warnings(std::move(review.warnings));
        });
}

} // namespace vck::volumes
