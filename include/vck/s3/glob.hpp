// Glob: the patterns of distributionStrategy and --include, matched against object keys
// relative to the source prefix. `?` one character, `*` any run within one path segment,
// `**` any run across segments (`a/**/b` also matches `a/b`), `[a-z]`, `[!x]`/`[^x]` classes,
// `\` escapes. A pattern without `/` matches the key's last segment at any depth, so the
// original's `*.jpg` (aws s3 --include semantics) still selects `dir/x.jpg`.
// Guarantee: matching is O(pattern x key) — no input makes it exponential.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace vck::s3 {

class Glob {
public:
    /// Throws std::invalid_argument naming the pattern for an unterminated class or a
    /// trailing backslash.
    explicit Glob(std::string_view pattern) : pattern_(pattern) {
        basename_only_ = pattern.find('/') == std::string_view::npos;
        for (std::size_t i = 0; i < pattern.size();) {
            char c = pattern[i];
            Token t;
            if (c == '*') {
                if (i + 1 < pattern.size() && pattern[i + 1] == '*') {
                    i += 2;
                    while (i < pattern.size() && pattern[i] == '*') ++i;
                    bool at_segment_start = tokens_.empty() || tokens_.back().kind == Kind::AnyDirs ||
                                            (tokens_.back().kind == Kind::Literal && tokens_.back().ch == '/');
                    if (at_segment_start && i < pattern.size() && pattern[i] == '/') {
                        ++i;
                        t.kind = Kind::AnyDirs;
                    } else {
                        t.kind = Kind::AnyRun;
                    }
                } else {
                    ++i;
                    t.kind = Kind::SegmentRun;
                }
            } else if (c == '?') {
                ++i;
                t.kind = Kind::One;
            } else if (c == '[') {
                std::size_t j = i + 1;
                if (j < pattern.size() && (pattern[j] == '!' || pattern[j] == '^')) {
                    t.negated = true;
                    ++j;
                }
                std::size_t start = j;
                while (j < pattern.size() && (pattern[j] != ']' || j == start)) ++j;
                if (j >= pattern.size()) fail("unterminated [ character class");
                std::string_view body = pattern.substr(start, j - start);
                for (std::size_t k = 0; k < body.size(); ++k) {
                    if (k + 2 < body.size() && body[k + 1] == '-') {
                        if (body[k] > body[k + 2]) fail("character class range out of order");
                        t.ranges.push_back({body[k], body[k + 2]});
                        k += 2;
                    } else {
                        t.ranges.push_back({body[k], body[k]});
                    }
                }
                t.kind = Kind::Class;
                i = j + 1;
            } else if (c == '\\') {
                if (i + 1 >= pattern.size()) fail("trailing backslash");
                t.kind = Kind::Literal;
                t.ch = pattern[i + 1];
                i += 2;
            } else {
                t.kind = Kind::Literal;
                t.ch = c;
                ++i;
            }
            tokens_.push_back(std::move(t));
        }
    }

    const std::string& pattern() const { return pattern_; }

    /// `relative_key` is the object key with the source prefix removed.
    bool matches(std::string_view relative_key) const {
        if (basename_only_) {
            auto slash = relative_key.rfind('/');
            if (slash != std::string_view::npos) relative_key = relative_key.substr(slash + 1);
        }
        return match(relative_key);
    }

private:
    enum class Kind { Literal, One, SegmentRun, AnyRun, AnyDirs, Class };
    struct Range { char lo, hi; };
    struct Token {
        Kind kind = Kind::Literal;
        char ch = 0;
        bool negated = false;
        std::vector<Range> ranges;
    };

    [[noreturn]] void fail(std::string_view why) const {
        throw std::invalid_argument("invalid glob \"" + pattern_ + "\": " + std::string(why));
    }

    static bool in_class(const Token& t, char c) {
        if (c == '/') return false;
        bool hit = false;
        for (auto r : t.ranges) hit = hit || (c >= r.lo && c <= r.hi);
        return hit != t.negated;
    }

    // ok[i][j]: tokens i.. match text j..; filled backwards, one row at a time.
    bool match(std::string_view s) const {
        const std::size_t n = s.size();
        std::vector<char> next(n + 1, 0), cur(n + 1, 0);
        next[n] = 1;  // no tokens left matches only the empty rest
        for (std::size_t ti = tokens_.size(); ti-- > 0;) {
            const Token& t = tokens_[ti];
            bool slash_then_match = false;
            for (std::size_t j = n + 1; j-- > 0;) {
                bool v = false;
                switch (t.kind) {
                case Kind::Literal: v = j < n && s[j] == t.ch && next[j + 1]; break;
                case Kind::One: v = j < n && s[j] != '/' && next[j + 1]; break;
                case Kind::Class: v = j < n && in_class(t, s[j]) && next[j + 1]; break;
                case Kind::SegmentRun: v = next[j] || (j < n && s[j] != '/' && cur[j + 1]); break;
                case Kind::AnyRun: v = next[j] || (j < n && cur[j + 1]); break;
                case Kind::AnyDirs:
                    // empty, or any run ending in '/': j walks down, so remember whether
                    // some '/' at or after j is followed by a match.
                    if (j < n && s[j] == '/' && next[j + 1]) slash_then_match = true;
                    v = next[j] || slash_then_match;
                    break;
                }
                cur[j] = v;
            }
            std::swap(cur, next);
        }
        return next[0];
    }

    std::string pattern_;
    bool basename_only_ = false;
    std::vector<Token> tokens_;
};

/// True when no globs are given or any one matches.
inline bool matches_any(const std::vector<Glob>& globs, std::string_view relative_key) {
    if (globs.empty()) return true;
    for (const auto& g : globs)
        if (g.matches(relative_key)) return true;
    return false;
}

} // namespace vck::s3
