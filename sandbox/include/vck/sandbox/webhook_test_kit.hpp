// WebhookTestKit: an operator's admission webhook served to the sandbox's API server in a
// test, in a few lines:
//
//     sandbox::TestEnvironment env;
//     sandbox::WebhookTestKit kit(env.server());
//     kit.server().handle("/mutate-v1-pod", webhook::mutating(my_defaulter));
//     kit.apply_file("deploy/base/webhooks.yaml");   // or kit.mutating("my-hook", "/mutate-v1-pod", rules)
//     ... create pods through env.config()'s client: the API server calls the webhook ...
//
// It issues a serving certificate for 127.0.0.1 from the API server's own CA, writes it to a
// temporary directory, starts a webhook::WebhookServer on 127.0.0.1 at a free port on a
// thread of its own, and registers webhook configurations whose clientConfig points at that
// server: a configuration from a manifest keeps its rules, selectors and policies, and each
// webhook's clientConfig.service becomes a url on the kit's server with the service's path,
// with the CA as caBundle. Guarantees: the server listens once the constructor returns; the
// destructor deletes the configurations it made, stops the server, joins its thread and
// removes the directory. Writes go to the store in-process (the API server's own admission,
// not an HTTPS request), so registering a configuration never calls a webhook.
#pragma once

#include <vck/api/json.hpp>
#include <vck/api/yaml.hpp>
#include <vck/client/base64.hpp>
#include <vck/sandbox/server/api_server.hpp>
#include <vck/webhook/serving_material.hpp>
#include <vck/webhook/webhook_server.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json.hpp>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace vck::sandbox {

class WebhookTestKit {
public:
    explicit WebhookTestKit(ApiServer& api, std::shared_ptr<runtime::MetricsRegistry> metrics = nullptr)
        : api_(api), dir_(fresh_dir()) {
        auto pair = api.ca().issue_server();
        webhook::write_serving_files(dir_, {api.ca().cert_pem(), "", pair.cert_pem, pair.key_pem});
        webhook::WebhookServer::Options o;
        o.cert_file = (dir_ / "tls.crt").string();
        o.key_file = (dir_ / "tls.key").string();
        server_ = std::make_unique<webhook::WebhookServer>(ioc_.get_executor(), o, std::move(metrics));
        server_->start();
        thread_ = std::thread([this] { ioc_.run(); });
    }
    ~WebhookTestKit() {
        for (const auto& [id, name] : made_) {
            try {
                StoreDeleteOptions d;
                api_.store().remove(id, "", name, d);
            } catch (const std::exception&) {
                // Deleted by the test already.
            }
        }
        server_->stop();
        work_.reset();
        if (thread_.joinable()) thread_.join();
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
    }
    WebhookTestKit(const WebhookTestKit&) = delete;
    WebhookTestKit& operator=(const WebhookTestKit&) = delete;

    webhook::WebhookServer& server() { return *server_; }
    std::uint16_t port() const { return server_->port(); }

    /// clientConfig reaching `path` on the kit's server.
    json::object client_config(const std::string& path) const {
        return {{"url", "https://127.0.0.1:" + std::to_string(server_->port()) + path},
                {"caBundle", client::base64_encode(api_.ca().cert_pem())}};
    }

    /// Registers a MutatingWebhookConfiguration `name` with one webhook (also named `name`)
    /// calling `path`; `fields` adds or overrides the webhook's fields (rules, objectSelector,
    /// failurePolicy, ...). Returns it as stored (defaults filled in).
    json::value mutating(const std::string& name, const std::string& path, json::object fields) {
        return register_one("MutatingWebhookConfiguration", name, path, std::move(fields));
    }
    /// As mutating(), for a ValidatingWebhookConfiguration.
    json::value validating(const std::string& name, const std::string& path, json::object fields) {
        return register_one("ValidatingWebhookConfiguration", name, path, std::move(fields));
    }

    /// Registers every webhook configuration in a manifest file (other kinds are skipped),
    /// its webhooks' clientConfig pointed at the kit's server.
    std::vector<json::value> apply_file(const std::filesystem::path& file) {
        std::vector<json::value> out;
        for (auto& doc : api::yaml_file(file)) {
            if (!doc.is_object()) continue;
            auto kind = std::string(api::string_at(doc, {"kind"}));
            if (kind != "MutatingWebhookConfiguration" && kind != "ValidatingWebhookConfiguration") continue;
            out.push_back(apply(std::move(doc)));
        }
        return out;
    }

    /// Registers one webhook configuration object, its webhooks pointed at the kit's server
    /// (a service reference's path is kept; a url's path too).
    json::value apply(json::value config) {
        if (!config.is_object()) throw std::invalid_argument("webhook test kit: a configuration must be an object");
        auto kind = std::string(api::string_at(config, {"kind"}));
        auto* hooks = config.as_object().if_contains("webhooks");
        if (hooks && hooks->is_array())
            for (auto& h : hooks->as_array()) {
                if (!h.is_object()) continue;
                std::string path = "/";
                if (const auto* cc = h.as_object().if_contains("clientConfig"); cc && cc->is_object()) {
                    if (auto p = api::string_at(*cc, {"service", "path"}); !p.empty()) path = std::string(p);
                    else if (auto u = api::string_at(*cc, {"url"}); !u.empty()) path = path_of(std::string(u));
                }
                h.as_object()["clientConfig"] = client_config(path);
            }
        ResourceId id{"admissionregistration.k8s.io", "v1",
                      kind == "MutatingWebhookConfiguration" ? "mutatingwebhookconfigurations"
                                                             : "validatingwebhookconfigurations"};
        auto stored = api_.store().create(id, "", std::move(config));
        made_.emplace_back(id, std::string(api::string_at(stored, {"metadata", "name"})));
        return stored;
    }

private:
    json::value register_one(const std::string& kind, const std::string& name, const std::string& path,
                             json::object fields) {
        // kube-apiserver wants a webhook name of three or more dot-separated parts.
        const bool qualified = std::count(name.begin(), name.end(), '.') >= 2;
        json::object hook{{"name", qualified ? name : name + ".webhook.vck.test"},
                          {"admissionReviewVersions", json::array{"v1"}},
                          {"sideEffects", "None"}};
        for (auto& [k, v] : fields) hook[k] = std::move(v);
        hook["clientConfig"] = client_config(path);
        json::value config = json::object{{"apiVersion", "admissionregistration.k8s.io/v1"},
                                          {"kind", kind},
                                          {"metadata", json::object{{"name", name}}},
                                          {"webhooks", json::array{std::move(hook)}}};
        return apply(std::move(config));
    }

    static std::string path_of(const std::string& url) {
        auto scheme = url.find("://");
        auto slash = url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
        if (slash == std::string::npos) return "/";
        auto q = url.find('?', slash);
        return url.substr(slash, q == std::string::npos ? std::string::npos : q - slash);
    }

    static std::filesystem::path fresh_dir() {
        auto base = std::filesystem::temp_directory_path() / "vck-webhook-kit-XXXXXX";
        std::string t = base.string();
        if (!::mkdtemp(t.data())) throw std::runtime_error("webhook test kit: cannot make a temporary directory");
        return t;
    }

    ApiServer& api_;
    std::filesystem::path dir_;
    boost::asio::io_context ioc_;
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_{ioc_.get_executor()};
    std::unique_ptr<webhook::WebhookServer> server_;
    std::thread thread_;
    std::vector<std::pair<ResourceId, std::string>> made_;
};

} // namespace vck::sandbox
