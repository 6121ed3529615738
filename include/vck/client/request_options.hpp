// The options of each REST verb, as plain values (no I/O types), mirroring metav1's
// ListOptions, DeleteOptions, PatchOptions and PodLogOptions query parameters.
// Each has a constructor and chainable setters: `ListOptions().labels("app=x").page(500)`.
// They are deliberately not aggregates: GCC 12 destroys a braced aggregate temporary twice
// when it appears inside a co_await expression (fixed in GCC 13), and these are passed in
// exactly such expressions. See docs/dev.md, "GCC 12 and coroutines".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace vck::client {

struct GetOptions {
    GetOptions() {}
    std::string resource_version;  // "" = most recent (quorum read)
    GetOptions& at(std::string rv) { resource_version = std::move(rv); return *this; }
};

struct ListOptions {
    ListOptions() {}
    std::string label_selector;
    std::string field_selector;
    std::optional<std::int64_t> limit;  // page size; the server hands back a continue token
    std::string continue_token;
    std::string resource_version;        // "", "0" (any cached), or an exact version
    std::string resource_version_match;  // "", "NotOlderThan", "Exact"

    ListOptions& labels(std::string s) { label_selector = std::move(s); return *this; }
    ListOptions& fields(std::string s) { field_selector = std::move(s); return *this; }
    ListOptions& page(std::int64_t n) { limit = n; return *this; }
    ListOptions& from(std::string token) { continue_token = std::move(token); return *this; }
    ListOptions& at(std::string rv) { resource_version = std::move(rv); return *this; }

    /// Moves on to the page after one whose metadata.continue is `token`; false when that was
    /// the last page. The token carries the first page's snapshot, and the API server refuses
    /// a resourceVersion or resourceVersionMatch beside it, so both are dropped.
    bool next_page(std::string token) {
        if (token.empty()) return false;
        continue_token = std::move(token);
        resource_version.clear();
        resource_version_match.clear();
        return true;
    }
};

struct WatchOptions {
    WatchOptions() {}
    std::string label_selector;
    std::string field_selector;
    std::string resource_version;        // start after this version; "" = now, with synthetic ADDs
    bool allow_bookmarks = true;
    std::optional<int> timeout_seconds;  // the server closes the stream after this long
    /// Each event's JSON in its own arena (watch_decoder.hpp EventStorage::Arena): cheaper
    /// for a consumer that decodes events into its own types and drops the JSON.
    bool arena_events = false;

    WatchOptions& labels(std::string s) { label_selector = std::move(s); return *this; }
    WatchOptions& fields(std::string s) { field_selector = std::move(s); return *this; }
    WatchOptions& since(std::string rv) { resource_version = std::move(rv); return *this; }
    WatchOptions& bookmarks(bool on) { allow_bookmarks = on; return *this; }
    WatchOptions& timeout(int seconds) { timeout_seconds = seconds; return *this; }
    WatchOptions& arena(bool on = true) { arena_events = on; return *this; }
};

struct WriteOptions {
    WriteOptions() {}
    bool dry_run = false;
    std::string field_manager;
    WriteOptions& dry(bool on = true) { dry_run = on; return *this; }
    WriteOptions& manager(std::string m) { field_manager = std::move(m); return *this; }
};

enum class PatchType { Merge, Json, StrategicMerge };

constexpr const char* content_type(PatchType t) {
    switch (t) {
    case PatchType::Merge: return "application/merge-patch+json";
    case PatchType::Json: return "application/json-patch+json";
    case PatchType::StrategicMerge: return "application/strategic-merge-patch+json";
    }
    return "application/merge-patch+json";
}

/// The patch type a Content-Type names, or nullopt (an API server answers 415).
constexpr std::optional<PatchType> patch_type_from_content_type(std::string_view ct) {
    if (ct == "application/merge-patch+json") return PatchType::Merge;
    if (ct == "application/json-patch+json") return PatchType::Json;
    if (ct == "application/strategic-merge-patch+json") return PatchType::StrategicMerge;
    return std::nullopt;
}

struct PatchOptions {
    PatchOptions() {}
    std::string subresource;  // "" or "status"
    bool dry_run = false;
    std::string field_manager;
    PatchOptions& on(std::string sub) { subresource = std::move(sub); return *this; }
    PatchOptions& dry(bool d = true) { dry_run = d; return *this; }
    PatchOptions& manager(std::string m) { field_manager = std::move(m); return *this; }
};

struct DeleteOptions {
    DeleteOptions() {}
    std::string propagation_policy;  // "", "Orphan", "Background", "Foreground"
    std::string precondition_uid;
    std::string precondition_resource_version;
    std::optional<std::int64_t> grace_period_seconds;
    bool dry_run = false;
    DeleteOptions& propagation(std::string p) { propagation_policy = std::move(p); return *this; }
    DeleteOptions& if_uid(std::string u) { precondition_uid = std::move(u); return *this; }
    DeleteOptions& if_version(std::string rv) { precondition_resource_version = std::move(rv); return *this; }
    DeleteOptions& grace(std::int64_t s) { grace_period_seconds = s; return *this; }
    DeleteOptions& dry(bool d = true) { dry_run = d; return *this; }
};

struct LogOptions {
    LogOptions() {}
    std::string container;
    std::optional<std::int64_t> tail_lines;
    std::optional<std::int64_t> limit_bytes;
    bool previous = false;
    bool timestamps = false;
    LogOptions& of(std::string c) { container = std::move(c); return *this; }
    LogOptions& tail(std::int64_t n) { tail_lines = n; return *this; }
};

} // namespace vck::client
