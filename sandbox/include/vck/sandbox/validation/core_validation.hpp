// CoreValidation: what kube-apiserver 1.32 refuses in ConfigMaps and Secrets
// (ValidateConfigMap[Update], ValidateSecret[Update] of pkg/apis/core/validation), with its
// messages and field paths:
// - keys of data / binaryData are config keys ([-._a-zA-Z0-9]+, at most 253 characters, not
//   "." or "..", not starting with ".."); a ConfigMap key may not be in both data and
//   binaryData; the values total at most 1 MiB;
// - `immutable: true` freezes data, binaryData and immutable itself (a Secret's stringData is
//   merged into data first, so it is frozen too); a Secret's type never changes;
// - a Secret of a known type carries its keys: tls.crt and tls.key (kubernetes.io/tls),
//   username or password (basic-auth), ssh-privatekey (ssh-auth), .dockercfg /
//   .dockerconfigjson (dockercfg / dockerconfigjson), the service-account.name annotation
//   (service-account-token). Not checked: that the docker config is well-formed JSON (the
//   real message is encoding/json's).
#pragma once

#include <vck/sandbox/validation/spec_validation.hpp>

#include <boost/json.hpp>

#include <algorithm>
#include <string>
#include <vector>

namespace vck::sandbox {

namespace core_validation_detail {

using namespace spec_validation;

/// core.MaxSecretSize, the limit of a ConfigMap's and a Secret's values together.
inline constexpr std::size_t max_secret_size = 1024 * 1024;

/// validation.IsConfigMapKey.
inline std::vector<std::string> config_key_problems(std::string_view k) {
    std::vector<std::string> out;
    if (k.size() > 253) out.push_back("must be no more than 253 characters");
    bool ok = !k.empty();
    for (char c : k)
        ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                    c == '.' || c == '_');
    if (!ok)
        out.push_back("a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. "
                      "'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')");
    if (k == ".") out.push_back("must not be '.'");
    else if (k == "..") out.push_back("must not be '..'");
    else if (k.substr(0, 2) == "..") out.push_back("must not start with '..'");
    return out;
}

inline std::vector<std::string> sorted_keys(const json::object* m) {
    std::vector<std::string> out;
    if (m)
        for (const auto& kv : *m) out.emplace_back(kv.key());
    std::sort(out.begin(), out.end());
    return out;
}

/// The length of the bytes a base64 value (data of a Secret, binaryData) decodes to.
inline std::size_t decoded_size(const json::value& v) {
    if (!v.is_string()) return 0;
    auto n = v.get_string().size();
    std::size_t pad = 0;
    const auto& s = v.get_string();
    if (n && s[n - 1] == '=') ++pad;
    if (n > 1 && s[n - 2] == '=') ++pad;
    return n / 4 * 3 - pad;
}

inline bool is_immutable(const json::value& obj) {
    const auto* v = at(&obj, "immutable");
    return v && v->is_bool() && v->get_bool();
}

inline Errors frozen(const json::value& obj, const json::value& old, std::initializer_list<const char*> fields) {
    Errors errs;
    if (!is_immutable(old)) return errs;
    if (!is_immutable(obj)) errs.push_back(field::forbidden("immutable", "field is immutable when `immutable` is set"));
    for (const char* f : fields)
        if (!same(at(&obj, f), at(&old, f)))
            errs.push_back(field::forbidden(f, "field is immutable when `immutable` is set"));
    return errs;
}

} // namespace core_validation_detail

inline std::vector<FieldError> validate_config_map(const boost::json::value& cm) {
    using namespace core_validation_detail;
    Errors errs;
    const auto* data = object_at(&cm, "data");
    const auto* binary = object_at(&cm, "binaryData");
    std::size_t total = 0;
    for (const auto& k : sorted_keys(data)) {
        for (const auto& m : config_key_problems(k)) errs.push_back(field::invalid(key("data", k), sv(k), m));
        if (binary && binary->contains(k))
            errs.push_back(field::invalid(key("data", k), sv(k), "duplicate of key present in binaryData"));
        const auto& v = data->at(k);
        total += v.is_string() ? v.get_string().size() : 0;
    }
    for (const auto& k : sorted_keys(binary)) {
        for (const auto& m : config_key_problems(k)) errs.push_back(field::invalid(key("binaryData", k), sv(k), m));
        total += decoded_size(binary->at(k));
    }
    if (total > max_secret_size) errs.push_back(field::too_long("", max_secret_size));
    return errs;
}

inline std::vector<FieldError> validate_config_map_update(const boost::json::value& cm, const boost::json::value& old) {
    using namespace core_validation_detail;
    Errors errs = frozen(cm, old, {"data", "binaryData"});
    append(errs, validate_config_map(cm));
    return errs;
}

inline std::vector<FieldError> validate_secret(const boost::json::value& secret) {
    using namespace core_validation_detail;
    Errors errs;
    const auto* data = object_at(&secret, "data");
    std::size_t total = 0;
    for (const auto& k : sorted_keys(data)) {
        for (const auto& m : config_key_problems(k)) errs.push_back(field::invalid(key("data", k), sv(k), m));
        total += decoded_size(data->at(k));
    }
    if (total > max_secret_size) errs.push_back(field::too_long("data", max_secret_size));
    auto type = str(&secret, "type");
    auto present = [&](const char* k) { return data && data->contains(k); };
    auto require = [&](const char* k) { errs.push_back(field::required(key("data", k))); };
    if (type == "kubernetes.io/service-account-token") {
        if (str(at(at(&secret, "metadata"), "annotations"), "kubernetes.io/service-account.name").empty())
            errs.push_back(field::required("metadata.annotations[kubernetes.io/service-account.name]"));
    } else if (type == "kubernetes.io/dockercfg") {
        if (!present(".dockercfg")) require(".dockercfg");
    } else if (type == "kubernetes.io/dockerconfigjson") {
        if (!present(".dockerconfigjson")) require(".dockerconfigjson");
    } else if (type == "kubernetes.io/basic-auth") {
        if (!present("username") && !present("password")) {
            require("username");
            require("password");
        }
    } else if (type == "kubernetes.io/ssh-auth") {
        const auto* v = data ? data->if_contains("ssh-privatekey") : nullptr;
        if (!v || decoded_size(*v) == 0) require("ssh-privatekey");
    } else if (type == "kubernetes.io/tls") {
        if (!present("tls.crt")) require("tls.crt");
        if (!present("tls.key")) require("tls.key");
    }
    return errs;
}

inline std::vector<FieldError> validate_secret_update(const boost::json::value& secret, const boost::json::value& old) {
    using namespace core_validation_detail;
    Errors errs = immutable(at(&secret, "type"), at(&old, "type"), "type");
    append(errs, frozen(secret, old, {"data"}));
    append(errs, validate_secret(secret));
    return errs;
}

} // namespace vck::sandbox
