// LocalReuse: a new version of a dataset built from an older version's files on the same disk
// (vck-fetch fetch --reuse-from DIR): each planned file whose object (relative path, size,
// ETag) is what DIR's journal records, and whose file in DIR still has its journaled size and
// mtime (nobody wrote to it since it landed), is copied into DEST instead of downloaded, so
// only new and changed objects leave the store.
// Guarantees: a copy is a reflink or a real copy (AtomicFile::copy_from), never a hard link or
// a symlink, so a job writing into one version never changes another; it is staged and renamed
// into place like a download and journaled with the object's ETag, so make_plan then counts it
// unchanged. A file that cannot be reused for any reason (absent, changed, unreadable, a full
// disk) is left to the download: reuse never fails a fetch and never reads outside DIR.
#pragma once

#include <vck/fetch/atomic_file.hpp>
#include <vck/fetch/fetch_plan.hpp>
#include <vck/fetch/journal.hpp>
#include <vck/fetch/state_dir.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>

namespace vck::fetch {

struct ReuseCounts {
    std::uint64_t files = 0;
    std::uint64_t bytes = 0;
};

/// Copies into `dest` (staging in `staging`, journaling in `journal`) every download of `plan`
/// that DIR `from` holds unchanged. `from` keeps its state in its default sibling directory.
inline ReuseCounts reuse_local(const FetchPlan& plan, const std::filesystem::path& dest,
                               const std::filesystem::path& staging, Journal& journal,
                               const std::filesystem::path& from) {
    ReuseCounts counts;
    std::error_code ec;
    if (from.empty() || !std::filesystem::is_directory(from, ec)) return counts;
    if (std::filesystem::equivalent(from, dest, ec)) return counts;
    const auto root = std::filesystem::canonical(from, ec);
    if (ec) return counts;
    const Journal old(StateDir(from).journal());
    // Where an open file really is: a directory on the way that a job replaced by a symlink
    // must not lead the copy out of DIR.
    auto inside_root = [&](int fd) {
        std::error_code e;
        auto real = std::filesystem::read_symlink("/proc/self/fd/" + std::to_string(fd), e);
        auto rel = real.lexically_relative(root);
        return !e && !rel.empty() && *rel.begin() != "..";
    };
    for (const auto& f : plan.downloads) {
        auto entry = old.find(f.relative);
        if (!entry || entry->size != f.size || entry->etag != f.etag) continue;
        const auto source = from / f.relative;
        if (!old.unchanged_on_disk(f.relative, source)) continue;
        int fd = ::open(source.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0) continue;
        struct stat st{};
        if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || static_cast<std::uint64_t>(st.st_size) != f.size ||
            !inside_root(fd)) {
            ::close(fd);
            continue;
        }
        try {
            AtomicFile out(dest / f.relative, staging);
            out.copy_from(fd, f.size);
            out.commit();
            journal.record(f.relative, dest / f.relative, f.etag);
            ++counts.files;
            counts.bytes += f.size;
        } catch (const std::exception& e) {
            std::fprintf(stderr, "vck-fetch: cannot reuse %s (%s); downloading it\n", source.c_str(), e.what());
        }
        ::close(fd);
    }
    return counts;
}

} // namespace vck::fetch
