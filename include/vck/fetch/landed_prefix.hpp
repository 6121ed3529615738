// LandedPrefix: how much of a dataset has landed as a contiguous prefix of its key order —
// the files 0..n-1 of the listing (S3 lists keys in UTF-8 byte order), each whole under its
// final name. Files land out of order (parallel workers, ranges), so the prefix grows only
// when its next file lands, and then by every file after it that landed already. A job that
// may start on "the first batch" reads exactly the files of this prefix.
// Guarantees: the prefix never shrinks and never skips a file that has not landed; a file
// that never lands (it failed) stops the prefix there; files unchanged since an earlier run
// count as landed from the start. Thread-safe (a mutex: one lock per landed file).
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

namespace vck::fetch {

class LandedPrefix {
public:
    struct Counts {
        std::uint64_t files = 0, bytes = 0;
        friend bool operator==(const Counts&, const Counts&) = default;
    };

    LandedPrefix() = default;
    /// `sizes`: every file of the dataset, in key order; `landed[i]`: file i is there already.
    LandedPrefix(std::vector<std::uint64_t> sizes, std::vector<bool> landed)
        : sizes_(std::move(sizes)), landed_(std::move(landed)) {
        landed_.resize(sizes_.size(), false);
        advance();
    }

    /// File `position` (its index in key order) is whole under its final name.
    void land(std::size_t position) {
        std::lock_guard lk(mu_);
        if (position >= landed_.size()) return;
        landed_[position] = true;
        advance();
    }

    Counts counts() const {
        std::lock_guard lk(mu_);
        return prefix_;
    }

private:
    void advance() {
        while (prefix_.files < sizes_.size() && landed_[prefix_.files]) prefix_.bytes += sizes_[prefix_.files++];
    }

    mutable std::mutex mu_;
    std::vector<std::uint64_t> sizes_;
    std::vector<bool> landed_;
    Counts prefix_;
};

} // namespace vck::fetch
