// ServiceAccountTokens: the sandbox's service-account token issuer and authenticator, as
// kube-apiserver's TokenRequest (POST serviceaccounts/NAME/token) and its service-account
// token authenticator behave. Tokens are JWTs signed RS256 with a key made on first use
// (OpenSSL 3 EVP), with the real claims: iss https://kubernetes.default.svc.cluster.local,
// sub system:serviceaccount:NS:NAME, aud, exp, iat, nbf and kubernetes.io {namespace,
// serviceaccount {name, uid}, and pod or secret {name, uid} when bound}.
// request(): spec.audiences default to the API server's (the issuer), expirationSeconds to
// 3600 and at least 600, a boundObjectRef names a Pod (running as that account) or a Secret
// whose uid, when given, must match; refusals are the real server's Statuses.
// authenticate(): a token is accepted only if its signature verifies, it is ours (iss), it
// is within [nbf, exp), an audience is the API server's, the account still exists with the
// token's uid and a bound object still exists with its uid; the identity is
// system:serviceaccount:NS:NAME in groups system:serviceaccounts, system:serviceaccounts:NS
// and system:authenticated. Time is the injectable clock's. Thread-safe (const after
// construction, set_clock aside).
#pragma once

#include <vck/api/json.hpp>
#include <vck/api/time.hpp>
#include <vck/client/base64.hpp>
#include <vck/sandbox/server/api_request.hpp>
#include <vck/sandbox/validation/field_error.hpp>
#include <vck/sandbox/storage/object_store.hpp>
#include <vck/sandbox/validation/store_error.hpp>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include <boost/json.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace vck::sandbox {

class ServiceAccountTokens {
public:
    using Clock = std::function<std::chrono::system_clock::time_point()>;
    static constexpr std::string_view issuer = "https://kubernetes.default.svc.cluster.local";
    static constexpr std::int64_t default_expiration_seconds = 3600;
    static constexpr std::int64_t min_expiration_seconds = 600;

    explicit ServiceAccountTokens(Clock clock = {}) { set_clock(std::move(clock)); }

    /// The clock tokens are issued and checked by (default: the system clock).
    void set_clock(Clock clock) {
        std::lock_guard lock(mu_);
        clock_ = clock ? std::move(clock) : Clock([] { return std::chrono::system_clock::now(); });
    }
    std::chrono::system_clock::time_point now() const {
        std::lock_guard lock(mu_);
        return clock_();
    }

    /// The API server's audiences: what a TokenRequest without audiences gets, and what a
    /// token must name to authenticate against the API server.
    static std::vector<std::string> api_audiences() { return {std::string(issuer)}; }

    /// POST .../namespaces/NS/serviceaccounts/NAME/token with `body` (an
    /// authentication.k8s.io/v1 TokenRequest): the TokenRequest answered (201), or StoreError.
    json::value request(const ObjectStore& store, const std::string& ns, const std::string& name,
                        const json::value& body) const {
        static const ResourceId accounts{"", "v1", "serviceaccounts"}, pods{"", "v1", "pods"},
            secrets{"", "v1", "secrets"};
        json::object req = body.is_object() ? body.get_object() : json::object();
        auto md = object_at(req, "metadata");
        auto spec = object_at(req, "spec");
        if (auto n = str(md, "name"); !n.empty() && n != name)
            throw StoreError(store_status::invalid(
                "TokenRequest", "authentication.k8s.io", name,
                {field::invalid("metadata.name", json::value(n), "must match the service account name if specified")}));
        if (auto n = str(md, "namespace"); !n.empty() && n != ns)
            throw StoreError(store_status::invalid(
                "TokenRequest", "authentication.k8s.io", name,
                {field::invalid("metadata.namespace", json::value(n), "must match the service account namespace if specified")}));
        auto account = store.get(accounts, ns, name);

        json::array audiences;
        if (const auto* a = spec.if_contains("audiences"); a && a->is_array())
            for (const auto& x : a->get_array())
                if (x.is_string()) audiences.push_back(x);
        if (audiences.empty())
            for (const auto& a : api_audiences()) audiences.push_back(json::string(a));
        std::int64_t seconds = default_expiration_seconds;
        if (const auto* e = spec.if_contains("expirationSeconds"); e && e->is_number()) seconds = e->to_number<std::int64_t>();
        const auto issued = now();

        // ValidateTokenRequest
        std::vector<FieldError> errs;
        if (seconds < min_expiration_seconds)
            errs.push_back(field::invalid("spec.expirationSeconds", json::value(seconds),
                                          "may not specify a duration less than 10 minutes"));
        if (seconds > (std::int64_t(1) << 32))
            errs.push_back(field::invalid("spec.expirationSeconds", json::value(seconds),
                                          "may not specify a duration larger than 2^32 seconds"));
        if (!errs.empty()) throw StoreError(store_status::invalid("TokenRequest", "authentication.k8s.io", "", errs));

        json::object k8s{{"namespace", ns},
                         {"serviceaccount", json::object{{"name", name}, {"uid", meta_str(account, "uid")}}}};
        json::value bound_ref = nullptr;
        if (const auto* ref = spec.if_contains("boundObjectRef"); ref && ref->is_object()) {
            const auto& r = ref->get_object();
            auto kind = str(r, "kind"), api_version = str(r, "apiVersion"), ref_name = str(r, "name"), ref_uid = str(r, "uid");
            std::string group, version = api_version;
            if (auto slash = api_version.find('/'); slash != std::string::npos) {
                group = api_version.substr(0, slash);
                version = api_version.substr(slash + 1);
            }
            json::value object;
            if (group.empty() && kind == "Pod") {
                object = store.get(pods, ns, ref_name);
                const auto* ospec = object.get_object().if_contains("spec");
                auto running_as = ospec && ospec->is_object() ? str(ospec->get_object(), "serviceAccountName") : std::string();
                if (running_as != name)
                    throw StoreError(store_status::bad_request("cannot bind token for serviceaccount " + go::quote(name) +
                                                               " to pod running with different serviceaccount name."));
                k8s["pod"] = json::object{{"name", ref_name}, {"uid", meta_str(object, "uid")}};
            } else if (group.empty() && kind == "Secret") {
                object = store.get(secrets, ns, ref_name);
                k8s["secret"] = json::object{{"name", ref_name}, {"uid", meta_str(object, "uid")}};
            } else {
                throw StoreError(store_status::bad_request("cannot bind token to object of type " + group + "/" + version +
                                                           ", Kind=" + kind));
            }
            if (!ref_uid.empty() && ref_uid != meta_str(object, "uid"))
                throw StoreError(store_status::conflict(
                    "", kind, ref_name,
                    "the UID in the bound object reference (" + ref_uid +
                        ") does not match the UID in record. The object might have been deleted and then recreated"));
            bound_ref = *ref;
        }

        const auto t = std::chrono::duration_cast<std::chrono::seconds>(issued.time_since_epoch()).count();
        json::object claims{{"aud", audiences},
                            {"exp", t + seconds},
                            {"iat", t},
                            {"iss", issuer},
                            {"kubernetes.io", std::move(k8s)},
                            {"nbf", t},
                            {"sub", "system:serviceaccount:" + ns + ":" + name}};
        json::object out_spec{{"audiences", std::move(audiences)}, {"expirationSeconds", seconds}, {"boundObjectRef", bound_ref}};
        json::object out_md{{"name", name}, {"namespace", ns}, {"creationTimestamp", api::format_rfc3339(issued)}};
        return json::object{
            {"kind", "TokenRequest"},
            {"apiVersion", "authentication.k8s.io/v1"},
            {"metadata", std::move(out_md)},
            {"spec", std::move(out_spec)},
            {"status", json::object{{"token", sign(claims)},
                                    {"expirationTimestamp", api::format_rfc3339(issued + std::chrono::seconds(seconds))}}}};
    }

    /// The identity of a bearer token this issuer signed and that is still valid (see the
    /// contract above), or nothing.
    std::optional<Identity> authenticate(const ObjectStore& store, std::string_view token) const {
        auto claims = verified_claims(token);
        if (!claims || str(*claims, "iss") != issuer) return std::nullopt;
        const auto t = std::chrono::duration_cast<std::chrono::seconds>(now().time_since_epoch()).count();
        const auto* exp = claims->if_contains("exp");
        const auto* nbf = claims->if_contains("nbf");
        if (!exp || !exp->is_number() || t >= exp->to_number<std::int64_t>()) return std::nullopt;
        if (nbf && nbf->is_number() && t < nbf->to_number<std::int64_t>()) return std::nullopt;
        bool audience = false;
        if (const auto* aud = claims->if_contains("aud"); aud && aud->is_array())
            for (const auto& a : aud->get_array())
                for (const auto& mine : api_audiences())
                    if (a.is_string() && a.get_string() == mine) audience = true;
        if (!audience) return std::nullopt;
        auto k8s = object_at(*claims, "kubernetes.io");
        auto ns = str(k8s, "namespace");
        auto account = object_at(k8s, "serviceaccount");
        auto name = str(account, "name");
        if (ns.empty() || name.empty() || str(*claims, "sub") != "system:serviceaccount:" + ns + ":" + name) return std::nullopt;
        // The account, and the object the token is bound to, must still be the ones it was issued for.
        auto same = [&](const ResourceId& id, const json::object& who) {
            try {
                return meta_str(store.get(id, ns, str(who, "name")), "uid") == str(who, "uid");
            } catch (const StoreError&) {
                return false;
            }
        };
        if (!same({"", "v1", "serviceaccounts"}, account)) return std::nullopt;
        if (k8s.contains("pod") && !same({"", "v1", "pods"}, object_at(k8s, "pod"))) return std::nullopt;
        if (k8s.contains("secret") && !same({"", "v1", "secrets"}, object_at(k8s, "secret"))) return std::nullopt;
        std::string user = "system:serviceaccount:" + ns + ":" + name;
        return Identity{user, {"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}};
    }

    /// header.payload.signature, RS256 over `claims`.
    std::string sign(const json::object& claims) const {
        EVP_PKEY* k = key();
        json::object header{{"alg", "RS256"}, {"kid", kid_}};
        std::string input = base64url(json::serialize(header)) + "." + base64url(json::serialize(claims));
        std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
        std::size_t len = 0;
        if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, EVP_sha256(), nullptr, k) != 1 ||
            EVP_DigestSign(ctx.get(), nullptr, &len, reinterpret_cast<const unsigned char*>(input.data()), input.size()) != 1)
            throw std::runtime_error("service account token: signing failed");
        std::string sig(len, '\0');
        if (EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(sig.data()), &len,
                           reinterpret_cast<const unsigned char*>(input.data()), input.size()) != 1)
            throw std::runtime_error("service account token: signing failed");
        sig.resize(len);
        return input + "." + base64url(sig);
    }

    /// The claims of a token whose RS256 signature verifies with this issuer's key.
    std::optional<json::object> verified_claims(std::string_view token) const {
        auto dot1 = token.find('.');
        auto dot2 = dot1 == std::string_view::npos ? dot1 : token.find('.', dot1 + 1);
        if (dot2 == std::string_view::npos || token.find('.', dot2 + 1) != std::string_view::npos) return std::nullopt;
        auto header = from_base64url(token.substr(0, dot1));
        auto payload = from_base64url(token.substr(dot1 + 1, dot2 - dot1 - 1));
        auto sig = from_base64url(token.substr(dot2 + 1));
        if (!header || !payload || !sig) return std::nullopt;
        try {
            auto h = json::parse(*header);
            if (!h.is_object() || str(h.get_object(), "alg") != "RS256") return std::nullopt;
        } catch (const std::exception&) {
            return std::nullopt;
        }
        auto input = token.substr(0, dot2);
        std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
        bool ok = ctx && EVP_DigestVerifyInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key()) == 1 &&
                  EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(sig->data()), sig->size(),
                                   reinterpret_cast<const unsigned char*>(input.data()), input.size()) == 1;
        ERR_clear_error();
        if (!ok) return std::nullopt;
        try {
            auto p = json::parse(*payload);
            if (p.is_object()) return p.get_object();
        } catch (const std::exception&) {
        }
        return std::nullopt;
    }

    static std::string base64url(std::string_view in) {
        auto s = client::base64_encode(in);
        while (!s.empty() && s.back() == '=') s.pop_back();
        for (auto& c : s) c = c == '+' ? '-' : c == '/' ? '_' : c;
        return s;
    }
    static std::optional<std::string> from_base64url(std::string_view in) {
        std::string s(in);
        for (auto& c : s) {
            if (c == '+' || c == '/' || c == '=') return std::nullopt;  // not the URL alphabet, or padded
            c = c == '-' ? '+' : c == '_' ? '/' : c;
        }
        while (s.size() % 4) s += '=';
        return client::base64_decode(s);
    }

private:
    struct KeyFree {
        void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
    };

    /// The signing key, made on first use: an RSA key takes a while, and most servers a
    /// test starts never issue a token.
    EVP_PKEY* key() const {
        std::call_once(key_once_, [this] {
            key_.reset(EVP_RSA_gen(2048));
            if (!key_) throw std::runtime_error("service account token key: RSA key generation failed");
            unsigned char* der = nullptr;
            int n = i2d_PUBKEY(key_.get(), &der);
            if (n <= 0) throw std::runtime_error("service account token key: cannot encode the public key");
            unsigned char md[EVP_MAX_MD_SIZE];
            unsigned int len = 0;
            EVP_Digest(der, static_cast<std::size_t>(n), md, &len, EVP_sha256(), nullptr);
            OPENSSL_free(der);
            kid_ = base64url(std::string_view(reinterpret_cast<const char*>(md), len));
        });
        return key_.get();
    }

    static json::object object_at(const json::object& o, std::string_view key) {
        const auto* v = o.if_contains(key);
        return v && v->is_object() ? v->get_object() : json::object();
    }
    static std::string str(const json::object& o, std::string_view key) {
        const auto* v = o.if_contains(key);
        return v && v->is_string() ? std::string(v->get_string()) : std::string();
    }
    static std::string meta_str(const json::value& obj, std::string_view key) {
        return obj.is_object() ? str(object_at(obj.get_object(), "metadata"), key) : std::string();
    }

    mutable std::once_flag key_once_;
    mutable std::unique_ptr<EVP_PKEY, KeyFree> key_;
    mutable std::string kid_;
    mutable std::mutex mu_;
    Clock clock_;
};

} // namespace vck::sandbox
