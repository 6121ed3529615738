// sandbox/webhook_test_kit.hpp: an operator tests its admission webhooks against the sandbox's
// API server in a few lines, and the API server calls them as kube-apiserver would (over
// HTTPS, trusting the caBundle the kit sets; mutations patched in, denials worded as kubectl
// prints them). Also VCK's own configurations, from deploy/, pointed at an in-process server.
#include <vck/client/client.hpp>
#include <vck/sandbox/test_environment.hpp>
#include <vck/sandbox/webhook_test_kit.hpp>
#include <vck/webhook/admission_handler.hpp>

#include <doctest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <cstdlib>
#include <initializer_list>
#include <string>

namespace webhook_kit_test {

namespace asio = boost::asio;
namespace json = boost::json;
using namespace vck;

json::value configmap(const std::string& name) {
    return json::value{{"apiVersion", "v1"}, {"kind", "ConfigMap"},
                       {"metadata", {{"name", name}, {"namespace", "default"}}}, {"data", {{"k", "v"}}}};
}

/// A field of a configuration's first webhook ("" when absent).
std::string first_webhook(const json::value& config, std::initializer_list<std::string_view> path) {
    const auto& hooks = config.at("webhooks").as_array();
    return hooks.empty() ? std::string() : std::string(api::string_at(hooks.front(), path));
}

/// Creates through HTTPS, as any client: what the server answers, or the error's text.
struct Creator {
    asio::io_context ioc;
    client::Client c;
    explicit Creator(const client::Config& cfg) : c(ioc.get_executor(), cfg) {}
    json::value create(const json::value& obj, std::string& error) {
        auto f = asio::co_spawn(ioc, c.create(api::ConfigMap::resource, "default", obj), asio::use_future);
        ioc.restart();
        ioc.run();
        try {
            return f.get();
        } catch (const std::exception& e) {
            error = e.what();
            return nullptr;
        }
    }
};

} // namespace webhook_kit_test

using namespace webhook_kit_test;

TEST_CASE("WebhookTestKit: the sandbox calls an operator's mutating and validating webhooks") {
    sandbox::TestEnvironment env;
    sandbox::WebhookTestKit kit(env.server());
    kit.server().handle("/default", webhook::mutating([](const webhook::AdmissionRequest&, json::value& obj) {
        obj.as_object()["data"].as_object()["defaulted"] = "yes";
        return webhook::allowed();
    }));
    kit.server().handle("/check", webhook::validating([](const webhook::AdmissionRequest& r) {
        if (r.name.starts_with("bad-")) return webhook::denied("names starting with bad- are not allowed");
        return webhook::allowed().with_warnings({"checked by the kit's webhook"});
    }));
    json::object rules{{"rules", json::array{json::object{{"operations", json::array{"CREATE"}},
                                                          {"apiGroups", json::array{""}},
                                                          {"apiVersions", json::array{"v1"}},
                                                          {"resources", json::array{"configmaps"}}}}}};
    kit.mutating("defaulter", "/default", rules);
    auto stored = kit.validating("checker", "/check", rules);
    CHECK(first_webhook(stored, {"failurePolicy"}) == "Fail");  // kube-apiserver's default

    Creator c(env.config());
    std::string error;
    auto good = c.create(configmap("good"), error);
    REQUIRE_MESSAGE(good.is_object(), error);
    CHECK(api::string_at(good, {"data", "defaulted"}) == "yes");
    auto bad = c.create(configmap("bad-one"), error);
    CHECK(bad.is_null());
    CHECK_MESSAGE(error.find("admission webhook \"checker.webhook.vck.test\" denied the request: names starting with "
                             "bad- are not allowed") != std::string::npos,
                  error);
}

TEST_CASE("WebhookTestKit: deploy/'s webhook configurations, pointed at an in-process server, call VCK's paths") {
    const char* root = std::getenv("VCK_SOURCE_ROOT");
    sandbox::TestEnvironment env;
    sandbox::WebhookTestKit kit(env.server());
    auto configs = kit.apply_file(std::string(root ? root : ".") + "/deploy/base/webhooks.yaml");
    REQUIRE(configs.size() == 2);
    for (const auto& cfg : configs) {
        auto url = first_webhook(cfg, {"clientConfig", "url"});
        CHECK(url.starts_with("https://127.0.0.1:" + std::to_string(kit.port()) + "/"));
        CHECK_FALSE(first_webhook(cfg, {"clientConfig", "caBundle"}).empty());
    }
    CHECK(first_webhook(configs[0], {"clientConfig", "url"}).ends_with("/mutate-v1-pod"));
}
