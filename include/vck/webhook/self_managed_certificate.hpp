// SelfManagedCertificate: a webhook's serving certificate when no cert-manager is installed.
// The controller keeps its CA and serving certificate in a Secret (webhook/serving_material.hpp),
// creates or renews it at start, and puts the CA into the caBundle of its own webhook
// configurations.
// Guarantees:
// - ensure_serving_secret() converges with several replicas starting at once: creates are
//   AlreadyExists-safe and updates carry the resourceVersion read (a Conflict re-reads), so
//   every replica ends with the same pair;
// - inject_ca_bundle() patches only webhooks whose caBundle differs, with a JSON patch that
//   tests each webhook's name first (a reordered list fails the patch instead of writing the
//   wrong entry), and is a no-op when every caBundle is already right.
#pragma once

#include <vck/client/client.hpp>
#include <vck/webhook/serving_material.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/json.hpp>

#include <string>

namespace vck::webhook {

namespace json = boost::json;

/// Reads, creates or renews the serving Secret until the cluster holds usable material, and
/// returns it. Needs get, create and update on the Secret.
inline boost::asio::awaitable<ServingMaterial> ensure_serving_secret(client::Client& c, SelfManagedOptions o) {
    const auto names = service_dns_names(o.service, o.namespace_);
    for (int attempt = 0;; ++attempt) {
        std::optional<api::Secret> current;
        try {
            current = co_await c.get<api::Secret>(o.namespace_, o.secret);
        } catch (const client::ApiError& e) {
            if (e.kind() != client::ErrorKind::NotFound) throw;
        }
        std::optional<ServingMaterial> stored = current ? read_serving_secret(*current) : std::nullopt;
        const auto now = std::chrono::system_clock::now();
        if (stored && !renewal_reason(*stored, names, now, o.renew_before)) co_return *stored;
        auto fresh = issue_serving_material(stored, names, o, now);
        auto secret = serving_secret(o, fresh);
        try {
            if (!current) {
                co_await c.create(secret);
            } else {
                secret.metadata = current->metadata;
                secret.metadata.labels["app.kubernetes.io/name"] = "vck";
                secret.metadata.labels["app.kubernetes.io/component"] = "webhook";
                co_await c.replace(secret);
            }
            co_return fresh;
        } catch (const client::ApiError& e) {
            // Another replica wrote first: read what it wrote and use that.
            bool raced = e.kind() == client::ErrorKind::AlreadyExists || e.kind() == client::ErrorKind::Conflict;
            if (!raced || attempt >= 4) throw;
        }
    }
}

/// Sets caBundle to `ca_pem` on every webhook of the configuration `name` (of resource `rt`:
/// mutating or validating webhook configurations) where it differs. Returns how many changed.
/// Needs get and patch on it.
inline boost::asio::awaitable<int> inject_ca_bundle(client::Client& c, const api::ResourceType& rt, std::string name,
                                                    std::string ca_pem) {
    auto config = co_await c.get(rt, "", name);
    const auto bundle = client::base64_encode(ca_pem);
    json::array ops;
    const auto* hooks = config.is_object() ? config.as_object().if_contains("webhooks") : nullptr;
    int changed = 0;
    if (hooks && hooks->is_array()) {
        const auto& list = hooks->as_array();
        for (std::size_t i = 0; i < list.size(); ++i) {
            const auto* h = list[i].if_object();
            if (!h) continue;
            const auto* cc = h->if_contains("clientConfig");
            const auto* current = cc && cc->is_object() ? cc->as_object().if_contains("caBundle") : nullptr;
            if (current && current->is_string() && current->as_string() == bundle) continue;
            const auto* hook_name = h->if_contains("name");
            const std::string at = "/webhooks/" + std::to_string(i);
            if (hook_name) ops.push_back(json::object{{"op", "test"}, {"path", at + "/name"}, {"value", *hook_name}});
            ops.push_back(json::object{{"op", "add"}, {"path", at + "/clientConfig/caBundle"}, {"value", bundle}});
            ++changed;
        }
    }
    if (changed > 0) co_await c.patch(rt, "", name, client::PatchType::Json, std::move(ops));
    co_return changed;
}

} // namespace vck::webhook
