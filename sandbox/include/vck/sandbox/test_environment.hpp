// TestEnvironment: an API server for an operator's own tests, as controller-runtime's envtest:
// the sandbox's HTTPS API server (sandbox/server/api_server.hpp) started on 127.0.0.1 at a free port,
// with the manifests it is given (a CRD from crds/, say) applied in order, and the
// client::Config that reaches it. Guarantees: once the constructor returns the server listens
// and every manifest object exists (a CRD's resource is served); apply() creates through the
// same admission as an HTTPS create (defaults, validation), so an object the real API server
// would refuse is refused here, with its Status message; an object of a kind the server does
// not serve is refused with std::invalid_argument naming the kind and the file; nothing is
// left running after destruction. in_process_config() reaches the same server without a
// socket or TLS (server/in_process_transport.hpp), for tests that are not about the wire.
// Link vck-sandbox.
#pragma once

#include <vck/api/json.hpp>
#include <vck/api/yaml.hpp>
#include <vck/sandbox/server/api_server.hpp>
#include <vck/sandbox/server/in_process_transport.hpp>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace vck::sandbox {

class TestEnvironment {
public:
    struct Options {
        Options() {}
        std::vector<std::filesystem::path> manifests;  // YAML or JSON files, documents separated by ---
        ApiServer::Options server;
    };

    explicit TestEnvironment(Options o = {}) : server_(o.server) {
        server_.start();
        for (const auto& m : o.manifests) apply_file(m);
    }

    /// Creates every object of a manifest file, in order; returns them as stored.
    std::vector<boost::json::value> apply_file(const std::filesystem::path& file) {
        std::vector<boost::json::value> out;
        for (auto& doc : api::yaml_file(file))
            if (!doc.is_null()) out.push_back(apply(std::move(doc), file.string()));
        return out;
    }

    /// Creates one object (in metadata.namespace, or "default" for a namespaced kind).
    boost::json::value apply(boost::json::value obj, const std::string& source = "<object>") {
        if (!obj.is_object()) throw std::invalid_argument(source + ": a manifest document is not an object");
        std::string api_version(api::string_at(obj, {"apiVersion"})), kind(api::string_at(obj, {"kind"}));
        auto info = server_.store().find_kind(api_version, kind);
        if (!info)
            throw std::invalid_argument(source + ": the server does not serve kind \"" + kind + "\" of \"" +
                                        api_version + "\"");
        std::string ns;
        if (info->namespaced) {
            ns = std::string(api::string_at(obj, {"metadata", "namespace"}));
            if (ns.empty()) ns = "default";
        }
        return server_.store().create(ResourceId{info->group, info->version, info->plural}, ns, std::move(obj));
    }

    /// How a client reaches the server (an admin's token; trust in its CA).
    client::Config config() const { return server_.config(); }
    /// The same admin, in process: every request answered as over HTTPS, without the wire.
    client::Config in_process_config() { return sandbox::in_process_config(server_); }
    ObjectStore& store() { return server_.store(); }
    ApiServer& server() { return server_; }

private:
    ApiServer server_;
};

} // namespace vck::sandbox
