// Naming: the deterministic names and labels of everything VCK creates for a volume, derived
// from (VolumeManager uid, volume id, replica index) so a restarted controller finds what it
// made instead of making it twice. Guarantees: object names are DNS-1123 labels (<= 63 chars,
// [a-z0-9-], alphanumeric at both ends) whatever the input lengths; label keys and values are
// valid for any namespace/name/id length (a readable prefix plus a hash when too long).
#pragma once

#include <vck/api/digest.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace vck::handlers::naming {

/// The domain of every label key VCK puts on nodes and sub-resources.
inline constexpr std::string_view label_domain = "vck.intelai.org";
/// Labels the original put on sub-resources; scripts select on them.
inline constexpr std::string_view name_label = "vckname";
inline constexpr std::string_view id_label = "vcid";
/// Selects the pods of one volume (anti-affinity spreads them one per node).
inline constexpr std::string_view volume_label = "vck.intelai.org/volume";

/// The first `n` hex digits of SHA-256(text): stable across runs, platforms and versions.
inline std::string short_hash(std::string_view text, std::size_t n = 10) {
    return api::sha256_hex(text).substr(0, n);
}

namespace detail {
inline bool alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z'); }

/// Lower-case, every other character turned into '-', runs of '-' squeezed, trimmed to
/// `max` and stripped of non-alphanumeric ends: a readable, DNS-safe fragment.
inline std::string dns_fragment(std::string_view in, std::size_t max) {
    std::string out;
    for (char c : in) {
        char l = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
        if (!alnum(l)) l = '-';
        if (l == '-' && (out.empty() || out.back() == '-')) continue;
        out += l;
    }
    if (out.size() > max) out.resize(max);
    while (!out.empty() && out.back() == '-') out.pop_back();
    return out;
}

/// Label-value characters ([A-Za-z0-9-_.], alphanumeric ends), at most `max`.
inline std::string label_fragment(std::string_view in, std::size_t max) {
    std::string out;
    for (char c : in) out += (alnum(c) || c == '-' || c == '_' || c == '.') ? c : '-';
    if (out.size() > max) out.resize(max);
    while (!out.empty() && !alnum(out.back())) out.pop_back();
    std::size_t start = 0;
    while (start < out.size() && !alnum(out[start])) ++start;
    return out.substr(start);
}
} // namespace detail

/// The identity of one volume of one VolumeManager, hashed into every name.
inline std::string volume_key(std::string_view vm_uid, std::string_view volume_id) {
    return short_hash(std::string(vm_uid) + "/" + std::string(volume_id), 16);
}

/// "vck-<id fragment>-<hash>-<suffix>", at most 63 characters.
inline std::string object_name(std::string_view vm_uid, std::string_view volume_id, std::string_view suffix) {
    std::string tail = "-" + short_hash(std::string(vm_uid) + "/" + std::string(volume_id)) +
                       (suffix.empty() ? "" : "-" + detail::dns_fragment(suffix, 20));
    std::string head = "vck";
    std::string id = detail::dns_fragment(volume_id, 63 - head.size() - 1 - tail.size());
    if (!id.empty()) head += "-" + id;
    return head + tail;
}

/// The download pod of replica `replica` of a volume.
inline std::string replica_pod_name(std::string_view vm_uid, std::string_view volume_id, std::size_t replica) {
    return object_name(vm_uid, volume_id, "r" + std::to_string(replica));
}

/// The pod that removes a volume's data directory from one node.
inline std::string cleanup_pod_name(std::string_view vm_uid, std::string_view volume_id, std::string_view node) {
    return object_name(vm_uid, volume_id, "c" + short_hash(node, 8));
}

/// A label value (<= 63 chars) standing for `value`: itself when valid, else a prefix + hash.
inline std::string label_value(std::string_view value) {
    std::string plain = detail::label_fragment(value, 63);
    if (plain == value) return plain;
    std::string hash = short_hash(value);
    return detail::label_fragment(detail::label_fragment(value, 63 - 1 - hash.size()) + "-" + hash, 63);
}

/// The label VCK puts on every node holding a replica of the volume: "vck.intelai.org/<name>"
/// with a name part of at most 63 characters. Readable ("<ns>.<name>.<id>") when that fits and
/// is unambiguous (namespaces never contain '.', so neither may the name or id: "b.c"/"d" and
/// "b"/"c.d" would otherwise share a key), otherwise a prefix of it plus a hash of the
/// (length-prefixed) triple, with no '.', so distinct volumes never share a key.
inline std::string node_label_key(std::string_view ns, std::string_view vm_name, std::string_view volume_id) {
    std::string full = std::string(ns) + "." + std::string(vm_name) + "." + std::string(volume_id);
    std::string name = detail::label_fragment(full, 63);
    bool ambiguous = vm_name.find('.') != std::string_view::npos || volume_id.find('.') != std::string_view::npos ||
                     ns.find('.') != std::string_view::npos;
    if (name != full || ambiguous) {
        std::string identity = std::to_string(ns.size()) + ":" + std::string(ns) + "/" + std::to_string(vm_name.size()) +
                               ":" + std::string(vm_name) + "/" + std::string(volume_id);
        std::string hash = short_hash(identity, 16);
        // No '.' in the hashed form: a readable key has exactly two, so the forms never meet.
        std::string prefix = detail::label_fragment(full, 63 - 1 - hash.size());
        for (char& c : prefix)
            if (c == '.') c = '-';
        name = detail::label_fragment(prefix + "-" + hash, 63);
        if (name.empty()) name = hash;
    }
    return std::string(label_domain) + "/" + name;
}

/// The directory, under the volume's data path, that holds one volume's data on a node.
inline std::string volume_directory(std::string_view data_path, std::string_view vm_uid, std::string_view volume_id) {
    std::string base(data_path);
    while (base.size() > 1 && base.back() == '/') base.pop_back();
    if (base != "/") base += "/";
    return base + "vck-resource-" + volume_key(vm_uid, volume_id);
}

/// The digest of what a volume's copies hold: its source type and options (not its replica
/// count, labels or placement, which change where copies are, not what they hold). A copy
/// made from one config is never reused for another.
template <class VolumeConfigLike>
std::string source_config_digest(const VolumeConfigLike& vc) {
    std::string text = std::to_string(vc.sourceType.size()) + ":" + vc.sourceType;
    for (const auto& [k, v] : vc.options) {  // sorted by key
        if (k == "refreshInterval") continue;  // when to look at the source, not what it holds
        text += "|" + std::to_string(k.size()) + ":" + k + "=" + std::to_string(v.size()) + ":" + v;
    }
    return short_hash(text, 16);
}

/// The directory, under the data path, of the copies of one volume made from one source
/// config (`config` a source_config_digest): a new config never writes into an old one's.
inline std::string copy_directory(std::string_view data_path, std::string_view vm_uid, std::string_view volume_id,
                                  std::string_view config) {
    return volume_directory(data_path, vm_uid, volume_id) + "-" + std::string(config);
}

/// The config key of version `version` of a volume's data (volumes/source_refresh.hpp): the
/// source config digest itself for the first version, a digest of it and the version after a
/// refresh found the source changed, so each version has directories of its own.
inline std::string versioned_config(const std::string& config, std::int64_t version) {
    if (version <= 0) return config;
    return short_hash(config + "/version/" + std::to_string(version), 16);
}

/// The directory, under the data path, of a copy that VolumeManagers whose source configs are
/// equal share (volumes/shared_copies.hpp): named after the config key only, so every volume
/// of that config finds it. It starts "vck-resource-" as every directory vck makes (a
/// volume_key is hex, so "shared" never begins one of a single volume).
inline constexpr std::string_view shared_directory_prefix = "vck-resource-shared-";
inline std::string shared_copy_directory(std::string_view data_path, std::string_view config) {
    std::string base(data_path);
    while (base.size() > 1 && base.back() == '/') base.pop_back();
    if (base != "/") base += "/";
    return base + std::string(shared_directory_prefix) + std::string(config);
}

/// Whether `path` is a shared copy's directory.
inline bool is_shared_directory(std::string_view path) {
    auto slash = path.rfind('/');
    return path.substr(slash == std::string_view::npos ? 0 : slash + 1).starts_with(shared_directory_prefix);
}

/// The download pod of a copy: one name per (node, config, attempt), so a retry never waits
/// for the failed attempt's pod to be gone.
inline std::string copy_pod_name(std::string_view vm_uid, std::string_view volume_id, std::string_view node,
                                 std::string_view config, std::int64_t attempt) {
    return object_name(vm_uid, volume_id,
                       "d" + short_hash(std::string(node) + "/" + std::string(config) + "/" + std::to_string(attempt), 10));
}

/// The pod that removes one copy's directory from its node, for the removal that began at
/// `removing_at` (the record's removingAt; "" for an entry recorded without one): each
/// removal of a directory has a pod of its own.
inline std::string copy_cleanup_pod_name(std::string_view vm_uid, std::string_view volume_id, std::string_view node,
                                         std::string_view path, std::string_view removing_at = {}) {
    std::string what = std::string(node) + "/" + std::string(path);
    if (!removing_at.empty()) what += "@" + std::string(removing_at);
    return object_name(vm_uid, volume_id, "c" + short_hash(what, 10));
}

} // namespace vck::handlers::naming
