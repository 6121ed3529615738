// cache_context(): the HandlerContext both VCK controllers lend their handlers (the
// VolumeManager reconciler and the claim provisioner): the options, and lookups of nodes and
// Secrets that read the informer caches (no API call). Without a Secret cache the handlers
// find no Secret, and say so.
#pragma once

#include <vck/api/core_v1.hpp>
#include <vck/handlers/data_handler.hpp>
#include <vck/runtime/informer.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace vck::volumes {

inline handlers::HandlerContext cache_context(handlers::HandlerOptions options,
                                              std::shared_ptr<runtime::Informer<api::Node>> nodes,
                                              std::shared_ptr<runtime::Informer<api::Secret>> secrets) {
    handlers::HandlerContext ctx;
    ctx.options = std::move(options);
    ctx.nodes = [nodes = std::move(nodes)] {
        std::vector<api::Node> out;
        for (const auto& n : nodes->store().list()) out.push_back(*n);
        return out;
    };
    if (secrets)
        ctx.secret = [secrets = std::move(secrets)](const std::string& ns, const std::string& name) -> std::optional<api::Secret> {
            auto s = secrets->store().get(runtime::ObjectKey{ns, name});
            if (!s) return std::nullopt;
            return *s;
        };
    return ctx;
}

} // namespace vck::volumes
