// RequestMetrics: what the sandbox's API server serves at /metrics, in the Prometheus text
// format and under kube-apiserver's names, for what it really counts: every answered request as
// apiserver_request_total {verb, group, version, resource, subresource, scope, component, code,
// dry_run}, with kube-apiserver's label values (verb in capitals: GET, LIST, WATCH, POST, PUT,
// PATCH, DELETE, DELETECOLLECTION; scope resource for one object, namespace, or cluster).
// Thread-safe. Only this one family: the sandbox has no etcd, admission latencies or flow
// control to report, and says nothing it does not measure.
#pragma once

#include <vck/sandbox/server/api_path.hpp>
#include <vck/sandbox/server/api_request.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace vck::sandbox {

class RequestMetrics {
public:
    /// Counts `req`, answered `code`; `verb` is the request's RBAC verb (get, list, watch, ...).
    void count(const ApiRequest& req, const std::string& verb, int code) {
        auto p = parse_api_path(req.path);
        if (!p || p->kind != ApiPath::Kind::Resource) return;  // discovery, health, /metrics
        std::string v = verb == "create" ? "POST" : verb == "update" ? "PUT" : verb;
        std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
        std::string scope = !p->name.empty() ? "resource" : p->namespace_scoped ? "namespace" : "cluster";
        std::string labels = "code=\"" + std::to_string(code) + "\",component=\"apiserver\",dry_run=\"" +
                             (req.has("dryRun") ? "All" : "") + "\",group=\"" + p->group + "\",resource=\"" +
                             p->resource + "\",scope=\"" + scope + "\",subresource=\"" + p->subresource +
                             "\",verb=\"" + v + "\",version=\"" + p->version + "\"";
        std::lock_guard lock(mu_);
        ++counts_[labels];
    }

    /// The exposition text.
    std::string text() const {
        std::string out =
            "# HELP apiserver_request_total [STABLE] Counter of apiserver requests broken out for each verb, dry run "
            "value, group, version, resource, scope, component, and HTTP response code.\n"
            "# TYPE apiserver_request_total counter\n";
        std::lock_guard lock(mu_);
        for (const auto& [labels, n] : counts_) out += "apiserver_request_total{" + labels + "} " + std::to_string(n) + "\n";
        return out;
    }

private:
    mutable std::mutex mu_;
    std::map<std::string, std::uint64_t> counts_;
};

} // namespace vck::sandbox
