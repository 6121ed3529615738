// The self-managed webhook certificate's decisions (include/vck/webhook/serving_material.hpp,
// certificate_authority.hpp): what a stored pair can serve, when it is renewed, and that a
// renewal keeps the CA every caBundle already trusts.
#include <vck/webhook/serving_material.hpp>

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace vck;
using namespace std::chrono_literals;

namespace {

webhook::SelfManagedOptions serving_options() {
    webhook::SelfManagedOptions o;
    o.namespace_ = "vck-system";
    o.service = "vck-webhook";
    return o;
}

const std::vector<std::string> serving_names = webhook::service_dns_names("vck-webhook", "vck-system");

std::string slurp(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

} // namespace

TEST_CASE("a Service is reached as <svc>.<ns>.svc first, the name kube-apiserver calls") {
    CHECK(serving_names == std::vector<std::string>{"vck-webhook.vck-system.svc", "vck-webhook", "vck-webhook.vck-system",
                                                    "vck-webhook.vck-system.svc.cluster.local"});
}

TEST_CASE("a serving certificate names its DNS names and IPs, chains to its CA and expires when asked") {
    webhook::CertificateAuthority ca("test-ca", 48h);
    auto leaf = ca.issue_server({"hook.ns.svc", "10.0.0.7", "::1"}, 24h);
    auto info = webhook::certificate_info(leaf.cert_pem);
    CHECK(info.dns_names == std::vector<std::string>{"hook.ns.svc"});
    CHECK(info.ip_addresses == std::vector<std::string>{"10.0.0.7", "::1"});
    CHECK_FALSE(info.is_ca);
    CHECK(webhook::certificate_info(ca.cert_pem()).is_ca);
    auto left = info.not_after - std::chrono::system_clock::now();
    CHECK(left > 23h);
    CHECK(left < 25h);
    CHECK(webhook::signed_by(leaf.cert_pem, ca.cert_pem()));
    CHECK_FALSE(webhook::signed_by(leaf.cert_pem, webhook::CertificateAuthority("other").cert_pem()));
    CHECK(webhook::key_matches(leaf.cert_pem, leaf.key_pem));
    CHECK_FALSE(webhook::key_matches(leaf.cert_pem, ca.key_pem()));
    CHECK_THROWS_WITH_AS(ca.issue_server({}), "a serving certificate needs at least one name", std::invalid_argument);
    CHECK_THROWS_AS(webhook::certificate_info("not a certificate"), std::runtime_error);
}

TEST_CASE("a CA loaded from its PEM pair signs as the original does; a key of another CA is refused") {
    webhook::CertificateAuthority ca("original");
    webhook::CertificateAuthority again(webhook::PemPair{ca.cert_pem(), ca.key_pem()});
    CHECK(webhook::signed_by(again.issue_server({"x.y.svc"}).cert_pem, ca.cert_pem()));
    webhook::CertificateAuthority other("other");
    CHECK_THROWS_AS(webhook::CertificateAuthority(webhook::PemPair{ca.cert_pem(), other.key_pem()}), std::runtime_error);
}

TEST_CASE("stored serving material is renewed only when it cannot serve the Service") {
    auto o = serving_options();
    const auto now = std::chrono::system_clock::now();
    auto good = webhook::issue_serving_material(std::nullopt, serving_names, o, now);
    CHECK_FALSE(webhook::renewal_reason(good, serving_names, now, o.renew_before));

    SUBCASE("a name of the Service missing") {
        auto names = serving_names;
        names.push_back("vck-webhook.other.svc");
        CHECK(webhook::renewal_reason(good, names, now, o.renew_before) == "tls.crt does not name vck-webhook.other.svc");
    }
    SUBCASE("expiring within the renewal window") {
        CHECK(webhook::renewal_reason(good, serving_names, now + o.validity - 24h, o.renew_before) ==
              "tls.crt expires within the renewal window");
    }
    SUBCASE("a key that is not the certificate's") {
        auto bad = good;
        bad.tls_key = good.ca_key;
        CHECK(webhook::renewal_reason(bad, serving_names, now, o.renew_before) == "tls.key does not belong to tls.crt");
    }
    SUBCASE("a leaf another CA signed") {
        auto other = webhook::issue_serving_material(std::nullopt, serving_names, o, now);
        auto bad = good;
        bad.tls_crt = other.tls_crt;
        bad.tls_key = other.tls_key;
        CHECK(webhook::renewal_reason(bad, serving_names, now, o.renew_before) == "tls.crt was not signed by ca.crt");
    }
    SUBCASE("a leaf in place of the CA") {
        auto bad = good;
        bad.ca_crt = good.tls_crt;
        bad.ca_key = good.tls_key;
        CHECK(webhook::renewal_reason(bad, serving_names, now, o.renew_before) == "ca.crt is not a CA certificate");
    }
    SUBCASE("garbage") {
        auto bad = good;
        bad.tls_crt = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
        auto why = webhook::renewal_reason(bad, serving_names, now, o.renew_before);
        REQUIRE(why);
        CHECK(why->starts_with("unreadable: certificate: reading a PEM certificate"));
    }
}

TEST_CASE("a renewal keeps a CA that outlives the new leaf, and replaces one that does not") {
    auto o = serving_options();
    const auto now = std::chrono::system_clock::now();
    auto first = webhook::issue_serving_material(std::nullopt, serving_names, o, now);
    auto renewed = webhook::issue_serving_material(first, serving_names, o, now);
    CHECK(renewed.ca_crt == first.ca_crt);
    CHECK(renewed.tls_crt != first.tls_crt);
    CHECK(webhook::signed_by(renewed.tls_crt, first.ca_crt));

    auto short_ca = o;
    short_ca.ca_validity = o.validity;  // the CA ends with the first leaf: no room for another
    auto brief = webhook::issue_serving_material(std::nullopt, serving_names, short_ca, now);
    auto replaced = webhook::issue_serving_material(brief, serving_names, short_ca, now);
    CHECK(replaced.ca_crt != brief.ca_crt);
    CHECK_FALSE(webhook::renewal_reason(replaced, serving_names, now, o.renew_before));
}

TEST_CASE("the Secret holds the four keys base64-encoded, and a Secret missing one is not material") {
    auto o = serving_options();
    auto m = webhook::issue_serving_material(std::nullopt, serving_names, o, std::chrono::system_clock::now());
    auto s = webhook::serving_secret(o, m);
    CHECK(s.type == "kubernetes.io/tls");
    CHECK(s.metadata.name == "vck-webhook-server-cert");
    CHECK(s.metadata.namespace_ == "vck-system");
    auto back = webhook::read_serving_secret(s);
    REQUIRE(back);
    CHECK(back->tls_crt == m.tls_crt);
    CHECK(back->ca_key == m.ca_key);
    s.data.erase("ca.key");
    CHECK_FALSE(webhook::read_serving_secret(s));
    s = webhook::serving_secret(o, m);
    s.data["tls.key"] = "%%% not base64";
    CHECK_FALSE(webhook::read_serving_secret(s));
}

TEST_CASE("serving files are written owner-only and replaced whole") {
    auto dir = std::filesystem::temp_directory_path() / ("vck-serving-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    auto o = serving_options();
    auto now = std::chrono::system_clock::now();
    auto a = webhook::issue_serving_material(std::nullopt, serving_names, o, now);
    webhook::write_serving_files(dir / "certs", a);
    CHECK(slurp(dir / "certs" / "tls.crt") == a.tls_crt);
    CHECK(slurp(dir / "certs" / "tls.key") == a.tls_key);
    auto perms = std::filesystem::status(dir / "certs" / "tls.key").permissions();
    CHECK((perms & std::filesystem::perms::group_read) == std::filesystem::perms::none);
    CHECK((perms & std::filesystem::perms::others_read) == std::filesystem::perms::none);
    auto b = webhook::issue_serving_material(a, serving_names, o, now);
    webhook::write_serving_files(dir / "certs", b);
    CHECK(slurp(dir / "certs" / "tls.crt") == b.tls_crt);
    CHECK(std::distance(std::filesystem::directory_iterator(dir / "certs"), std::filesystem::directory_iterator()) == 2);
    std::filesystem::remove_all(dir);
}
