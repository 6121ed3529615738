// Object names as kube-apiserver validates and generates them: RFC 1123 labels (namespaces)
// and subdomains (everything else we serve), and generateName's random suffix.
// Guarantee: validation failures are FieldErrors worded exactly like apimachinery's
// (length first, then the pattern), so a 422 from the emulator reads like a real one.
#pragma once

#include <vck/sandbox/validation/field_error.hpp>

#include <boost/json.hpp>

#include <cstddef>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace vck::sandbox {

namespace object_name_detail {

inline bool lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

inline bool is_label(std::string_view s) {
    if (s.empty() || !lower_alnum(s.front()) || !lower_alnum(s.back())) return false;
    for (char c : s)
        if (!lower_alnum(c) && c != '-') return false;
    return true;
}

inline bool is_subdomain(std::string_view s) {
    if (s.empty()) return false;
    std::size_t start = 0;
    while (true) {
        auto dot = s.find('.', start);
        if (!is_label(s.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start)))
            return false;
        if (dot == std::string_view::npos) return true;
        start = dot + 1;
    }
}

constexpr std::string_view label_regex = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
constexpr std::string_view subdomain_regex = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";

} // namespace object_name_detail

/// The generated part of a generateName: this many random [a-z0-9] characters.
inline constexpr std::size_t generated_name_suffix_length = 5;
/// Longest generateName prefix kept; the real server truncates longer ones.
inline constexpr std::size_t max_generated_name_prefix = 63 - generated_name_suffix_length;

/// RFC 1123 label (at most 63 characters): the rule for namespace names.
inline std::vector<FieldError> validate_dns1123_label(std::string_view name, const std::string& field) {
    using namespace object_name_detail;
    std::vector<FieldError> errs;
    boost::json::value v(boost::json::string(name.data(), name.size()));
    if (name.size() > 63) errs.push_back(field::invalid(field, v, "must be no more than 63 characters"));
    if (!is_label(name))
        errs.push_back(field::invalid(
            field, v,
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
            "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
            "validation is '" + std::string(label_regex) + "')"));
    return errs;
}

/// RFC 1123 subdomain (at most 253 characters): the rule for most object names.
inline std::vector<FieldError> validate_dns1123_subdomain(std::string_view name, const std::string& field) {
    using namespace object_name_detail;
    std::vector<FieldError> errs;
    boost::json::value v(boost::json::string(name.data(), name.size()));
    if (name.size() > 253) errs.push_back(field::invalid(field, v, "must be no more than 253 characters"));
    if (!is_subdomain(name))
        errs.push_back(field::invalid(
            field, v,
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
            "must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation "
            "is '" + std::string(subdomain_regex) + "')"));
    return errs;
}

/// path.ValidatePathSegmentName: the only rule some kinds' names follow (core/v1 Events):
/// not "." or "..", and no '/' or '%'.
inline std::vector<FieldError> validate_path_segment_name(std::string_view name, const std::string& field) {
    boost::json::value v(boost::json::string(name.data(), name.size()));
    if (name == "." || name == "..")
        return {field::invalid(field, v, "may not be '" + std::string(name) + "'")};
    std::vector<FieldError> errs;
    for (std::string_view bad : {"/", "%"})
        if (name.find(bad) != std::string_view::npos)
            errs.push_back(field::invalid(field, v, "may not contain '" + std::string(bad) + "'"));
    return errs;
}

/// generateName + 5 random characters of [a-z0-9] (Kubernetes' alphabet: no vowels, so no
/// words), the prefix cut to 58 characters.
template <class Rng>
std::string generate_name(std::string_view prefix, Rng& rng) {
    static constexpr std::string_view alphabet = "bcdfghjklmnpqrstvwxz2456789";
    if (prefix.size() > max_generated_name_prefix) prefix = prefix.substr(0, max_generated_name_prefix);
    std::string name(prefix);
    std::uniform_int_distribution<std::size_t> pick(0, alphabet.size() - 1);
    for (std::size_t i = 0; i < generated_name_suffix_length; ++i) name += alphabet[pick(rng)];
    return name;
}

} // namespace vck::sandbox
