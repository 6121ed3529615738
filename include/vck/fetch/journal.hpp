// Journal: what vck-fetch last wrote or uploaded in a directory, one JSON line per file
// (path, size, ETag, mtime), appended as each file lands so a killed run loses nothing.
// Guarantee: a file counts as unchanged only if its size and mtime still equal the recorded
// ones; the last line for a path wins; a torn last line (killed mid-append) is ignored.
#pragma once

#include <vck/fetch/local_error.hpp>

#include <boost/json.hpp>

#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace vck::fetch {

struct JournalEntry {
    std::uint64_t size = 0;
    std::string etag;
    std::int64_t mtime_ns = 0;
};

/// Size and mtime (ns) of a regular file; nullopt if absent or not a regular file.
inline std::optional<std::pair<std::uint64_t, std::int64_t>> file_stamp(const std::filesystem::path& p) {
    struct stat st{};
    if (::stat(p.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
    return std::pair{static_cast<std::uint64_t>(st.st_size),
                     static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec};
}

class Journal {
public:
    /// Reads `file` if it exists; later record() calls append to it.
    explicit Journal(std::filesystem::path file) : file_(std::move(file)) {
        std::ifstream in(file_);
        std::string line;
        while (std::getline(in, line)) {
            boost::system::error_code ec;
            auto v = boost::json::parse(line, ec);
            if (ec || !v.is_object()) continue;
            auto& o = v.as_object();
            auto* p = o.if_contains("p");
            auto* s = o.if_contains("s");
            auto* e = o.if_contains("e");
            auto* m = o.if_contains("m");
            if (!p || !p->is_string() || !s || !s->is_int64() || !e || !e->is_string() || !m || !m->is_int64()) continue;
            entries_[std::string(p->as_string())] =
                JournalEntry{static_cast<std::uint64_t>(s->as_int64()), std::string(e->as_string()), m->as_int64()};
        }
    }

    std::optional<JournalEntry> find(const std::string& rel) const {
        std::lock_guard lk(mu_);
        auto it = entries_.find(rel);
        if (it == entries_.end()) return std::nullopt;
        return it->second;
    }

    /// True when `abs` still is the file recorded for `rel` (and, if given, has that ETag).
    bool unchanged(const std::string& rel, const std::filesystem::path& abs, std::uint64_t size,
                   std::string_view etag) const {
        auto e = find(rel);
        auto st = file_stamp(abs);
        return e && st && st->first == size && e->size == size && e->etag == etag && e->mtime_ns == st->second;
    }

    /// True when `abs` has the size and mtime recorded for `rel` (whatever the ETag).
    bool unchanged_on_disk(const std::string& rel, const std::filesystem::path& abs) const {
        auto e = find(rel);
        auto st = file_stamp(abs);
        return e && st && st->first == e->size && st->second == e->mtime_ns;
    }

    /// Records the file as it is on disk now.
    void record(const std::string& rel, const std::filesystem::path& abs, std::string etag) {
        auto st = file_stamp(abs);
        if (!st) throw LocalError("cannot read back " + abs.string() + " after writing it");
        record(rel, JournalEntry{st->first, std::move(etag), st->second});
    }

    /// Records a stamp taken earlier (sync-back stamps a file before reading it, so a change
    /// made during the upload is seen by the next scan).
    void record(const std::string& rel, JournalEntry e) {
        boost::json::object o{{"p", rel}, {"s", static_cast<std::int64_t>(e.size)}, {"e", e.etag}, {"m", e.mtime_ns}};
        std::string line = boost::json::serialize(o) + "\n";
        std::lock_guard lk(mu_);
        entries_[rel] = std::move(e);
        if (!out_.is_open()) {
            out_.open(file_, std::ios::app);
            if (!out_) throw LocalError::from_errno("open journal", file_);
        }
        out_ << line << std::flush;
        if (!out_) throw LocalError::from_errno("append to journal", file_);
    }

    /// Rewrites the file with one line per path (atomically, via rename).
    void compact() {
        std::lock_guard lk(mu_);
        if (out_.is_open()) out_.close();
        auto tmp = file_;
        tmp += ".new";
        {
            std::ofstream o(tmp, std::ios::trunc);
            for (const auto& [p, e] : entries_)
                o << boost::json::serialize(boost::json::object{{"p", p},
                                                                {"s", static_cast<std::int64_t>(e.size)},
                                                                {"e", e.etag},
                                                                {"m", e.mtime_ns}})
                  << "\n";
            if (!o) throw LocalError::from_errno("write journal", tmp);
        }
        std::error_code ec;
        std::filesystem::rename(tmp, file_, ec);
        if (ec) throw LocalError("cannot replace journal " + file_.string() + ": " + ec.message());
    }

    std::size_t size() const {
        std::lock_guard lk(mu_);
        return entries_.size();
    }

private:
    std::filesystem::path file_;
    mutable std::mutex mu_;
    std::map<std::string, JournalEntry> entries_;
    std::ofstream out_;
};

} // namespace vck::fetch
