// jsonpath_query: kubectl's JSONPath subset for printer columns and `-o jsonpath`: ".a.b", "{.a.b}",
// "[0]", "[-1]", "[1:3]", "[*]", ".*", "..a", "['k.with.dots']", ".k\.with\.dots", "[0,2]", and
// filters "[?(@.type=="Ready")]" with == != < <= > >=. Guarantees: a missing key or index yields
// no result (as printer columns need); only a malformed expression throws std::invalid_argument.
#pragma once

#include <boost/json.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace vck::sandbox {

namespace detail::jsonpath {

struct Filter;

struct Selector { // one entry of "[...]"
    enum class Kind { Index, Slice, Key, All } kind = Kind::All;
    std::int64_t index = 0;
    std::optional<std::int64_t> start, end;
    std::int64_t step = 1;
    std::string key;
};

struct Step {
    enum class Kind { Child, Wildcard, Descend, Bracket, Filter } kind = Kind::Child;
    std::string name;
    std::vector<Selector> selectors;
    std::shared_ptr<const Filter> filter;
};

using Path = std::vector<Step>;

struct Filter {
    Path lhs;                      // relative to '@'
    std::string op;                // "" tests for existence
    std::optional<boost::json::value> literal;
    std::optional<Path> rhs_path;  // "@..." on the right-hand side
    bool rhs_from_root = false;    // "$..." on the right-hand side
};

class Parser {
public:
    explicit Parser(std::string_view text) : s_(text) {}

    std::vector<Path> parse_template() {
        std::vector<Path> out;
        skip_spaces();
        if (done()) fail("empty expression");
        if (peek() != '{') {
            out.push_back(parse_root_path());
            skip_spaces();
            if (!done()) fail("unexpected '" + std::string(1, peek()) + "'");
            return out;
        }
        while (!done()) {
            if (peek() != '{') fail("text outside {...} is not supported");
            ++pos_;
            skip_spaces();
            if (peek() == '}') fail("empty expression {}");
            out.push_back(parse_root_path());
            skip_spaces();
            if (peek() != '}') fail(done() ? "missing '}'" : "unexpected '" + std::string(1, peek()) + "'");
            ++pos_;
            skip_spaces();
        }
        return out;
    }

private:
    std::string_view s_;
    std::size_t pos_ = 0;

    bool done() const { return pos_ >= s_.size(); }
    char peek(std::size_t ahead = 0) const { return pos_ + ahead < s_.size() ? s_[pos_ + ahead] : '\0'; }
    void skip_spaces() {
        while (!done() && (peek() == ' ' || peek() == '\t')) ++pos_;
    }
    [[noreturn]] void fail(const std::string& why) const {
        throw std::invalid_argument("invalid JSONPath \"" + std::string(s_) + "\" at position " +
                                    std::to_string(pos_) + ": " + why);
    }

    static bool name_char(char c) {
        switch (c) {
        case '.': case '[': case ']': case '(': case ')': case '{': case '}': case '=': case '!':
        case '<': case '>': case ',': case '\'': case '"': case ' ': case '\t': case '@': case '\0':
            return false;
        default: return true;
        }
    }

    Path parse_root_path() {
        for (std::string_view kw : {"range", "end"}) {
            auto rest = s_.substr(pos_);
            if (rest.starts_with(kw) && (rest.size() == kw.size() || !name_char(rest[kw.size()])))
                fail("{range}/{end} templates are not supported; query the list with [*] instead");
        }
        if (peek() == '$') ++pos_;
        Path p = parse_steps();
        if (p.empty() && pos_ < s_.size() && name_char(peek())) {
            // "metadata.name" without the leading dot: read as ".metadata.name".
            Step st;
            st.name = read_name();
            p.push_back(std::move(st));
            auto more = parse_steps();
            p.insert(p.end(), more.begin(), more.end());
        }
        return p;
    }

    // A backslash takes the next character literally, as kubectl's parser does, so
    // ".metadata.labels.app\.kubernetes\.io/name" names one key with dots.
    std::string read_name() {
        std::string out;
        while (!done()) {
            if (peek() == '\\' && pos_ + 1 < s_.size()) {
                out += s_[pos_ + 1];
                pos_ += 2;
            } else if (name_char(peek())) {
                out += s_[pos_++];
            } else {
                break;
            }
        }
        return out;
    }

    Path parse_steps() {
        Path p;
        while (!done()) {
            if (peek() == '.') {
                ++pos_;
                if (peek() == '.') {
                    ++pos_;
                    p.push_back(Step{Step::Kind::Descend, {}, {}, {}});
                    if (peek() == '[') continue;
                }
                if (peek() == '*') {
                    ++pos_;
                    p.push_back(Step{Step::Kind::Wildcard, {}, {}, {}});
                    continue;
                }
                auto name = read_name();
                if (name.empty()) fail("expected a field name after '.'");
                p.push_back(Step{Step::Kind::Child, std::move(name), {}, {}});
            } else if (peek() == '[') {
                ++pos_;
                p.push_back(parse_bracket());
            } else {
                break;
            }
        }
        return p;
    }

    std::string read_quoted() {
        char q = peek();
        ++pos_;
        std::string out;
        while (!done() && peek() != q) {
            if (peek() == '\\' && pos_ + 1 < s_.size()) ++pos_;
            out += peek();
            ++pos_;
        }
        if (done()) fail("unterminated string");
        ++pos_;
        return out;
    }

    std::optional<std::int64_t> read_int() {
        auto start = pos_;
        if (peek() == '-' || peek() == '+') ++pos_;
        while (peek() >= '0' && peek() <= '9') ++pos_;
        if (pos_ == start) return std::nullopt;
        auto text = s_.substr(start, pos_ - start);
        if (text.front() == '+') text.remove_prefix(1);
        std::int64_t v = 0;
        auto r = std::from_chars(text.data(), text.data() + text.size(), v);
        if (r.ec != std::errc() || r.ptr != text.data() + text.size()) {
            pos_ = start;
            fail("invalid integer '" + std::string(text) + "'");
        }
        return v;
    }

    void expect(char c) {
        skip_spaces();
        if (peek() != c) fail(std::string("expected '") + c + "'" + (done() ? " before the end" : ", found '" + std::string(1, peek()) + "'"));
        ++pos_;
    }

    Step parse_bracket() {
        skip_spaces();
        Step st{Step::Kind::Bracket, {}, {}, {}};
        if (peek() == '?') {
            ++pos_;
            expect('(');
            st.kind = Step::Kind::Filter;
            st.filter = std::make_shared<const Filter>(parse_filter());
            expect(')');
            expect(']');
            return st;
        }
        if (peek() == ']') fail("empty []");
        for (;;) {
            skip_spaces();
            Selector sel;
            if (peek() == '*') {
                ++pos_;
            } else if (peek() == '\'' || peek() == '"') {
                sel.kind = Selector::Kind::Key;
                sel.key = read_quoted();
            } else {
                auto first = read_int();
                skip_spaces();
                if (peek() == ':') {
                    sel.kind = Selector::Kind::Slice;
                    sel.start = first;
                    ++pos_;
                    skip_spaces();
                    sel.end = read_int();
                    skip_spaces();
                    if (peek() == ':') {
                        ++pos_;
                        skip_spaces();
                        if (auto step = read_int()) sel.step = *step;
                        if (sel.step == 0) fail("a slice step must not be 0");
                    }
                } else if (first) {
                    sel.kind = Selector::Kind::Index;
                    sel.index = *first;
                } else {
                    fail(done() ? "unterminated [" : "unexpected '" + std::string(1, peek()) + "' in []");
                }
            }
            st.selectors.push_back(std::move(sel));
            skip_spaces();
            if (peek() == ',') {
                ++pos_;
                continue;
            }
            expect(']');
            return st;
        }
    }

    Filter parse_filter() {
        skip_spaces();
        Filter f;
        if (peek() != '@') fail("a filter must start with '@'");
        ++pos_;
        f.lhs = parse_steps();
        skip_spaces();
        if (peek() == ')') return f;
        for (std::string_view op : {"==", "!=", "<=", ">=", "<", ">"}) {
            if (s_.substr(pos_).starts_with(op)) {
                f.op = std::string(op);
                pos_ += op.size();
                break;
            }
        }
        if (f.op.empty()) fail("expected ==, !=, <, <=, > or >= in the filter");
        skip_spaces();
        char c = peek();
        if (c == '\'' || c == '"') {
            f.literal = boost::json::value(read_quoted());
        } else if (c == '@' || c == '$') {
            ++pos_;
            f.rhs_from_root = c == '$';
            f.rhs_path = parse_steps();
        } else if (s_.substr(pos_).starts_with("true")) {
            pos_ += 4;
            f.literal = boost::json::value(true);
        } else if (s_.substr(pos_).starts_with("false")) {
            pos_ += 5;
            f.literal = boost::json::value(false);
        } else if (s_.substr(pos_).starts_with("null")) {
            pos_ += 4;
            f.literal = boost::json::value(nullptr);
        } else {
            auto start = pos_;
            while (!done() && (std::isdigit(static_cast<unsigned char>(peek())) || peek() == '-' || peek() == '+' ||
                               peek() == '.' || peek() == 'e' || peek() == 'E'))
                ++pos_;
            auto text = s_.substr(start, pos_ - start);
            boost::system::error_code ec;
            auto v = boost::json::parse(text, ec);
            if (text.empty() || ec || !v.is_number()) {
                pos_ = start;
                fail("expected a string, number, true, false, null or @path after " + f.op);
            }
            f.literal = std::move(v);
        }
        return f;
    }
};

using Nodes = std::vector<const boost::json::value*>;

inline void descendants(const boost::json::value* v, Nodes& out) {
    out.push_back(v);
    if (const auto* o = v->if_object())
        for (const auto& kv : *o) descendants(&kv.value(), out);
    else if (const auto* a = v->if_array())
        for (const auto& e : *a) descendants(&e, out);
}

inline Nodes evaluate(const Path& path, Nodes cur, const boost::json::value& root);

inline int compare_values(const boost::json::value& a, const boost::json::value& b, bool& comparable) {
    comparable = true;
    if (a.is_number() && b.is_number()) {
        double x = a.to_number<double>(), y = b.to_number<double>();
        return x < y ? -1 : x > y ? 1 : 0;
    }
    if (a.is_string() && b.is_string()) {
        auto c = std::string_view(a.get_string()).compare(std::string_view(b.get_string()));
        return c < 0 ? -1 : c > 0 ? 1 : 0;
    }
    if (a.kind() == b.kind() && (a.is_bool() || a.is_null())) return a == b ? 0 : 1;
    comparable = false;
    return 1;
}

inline bool filter_accepts(const Filter& f, const boost::json::value& item, const boost::json::value& root) {
    auto lhs = evaluate(f.lhs, {&item}, root);
    if (f.op.empty()) return !lhs.empty();
    if (lhs.empty()) return false;
    const boost::json::value* rhs = nullptr;
    Nodes rhs_nodes;
    if (f.literal) {
        rhs = &*f.literal;
    } else {
        rhs_nodes = evaluate(*f.rhs_path, {f.rhs_from_root ? &root : &item}, root);
        if (rhs_nodes.empty()) return false;
        rhs = rhs_nodes.front();
    }
    bool comparable = false;
    int c = compare_values(*lhs.front(), *rhs, comparable);
    if (f.op == "==") return comparable && c == 0;
    if (f.op == "!=") return !comparable || c != 0;
    if (!comparable || (lhs.front()->is_bool() || lhs.front()->is_null())) return false;
    if (f.op == "<") return c < 0;
    if (f.op == "<=") return c <= 0;
    if (f.op == ">") return c > 0;
    return c >= 0;
}

inline void select(const Selector& sel, const boost::json::value& v, Nodes& out) {
    switch (sel.kind) {
    case Selector::Kind::All:
        if (const auto* o = v.if_object())
            for (const auto& kv : *o) out.push_back(&kv.value());
        else if (const auto* a = v.if_array())
            for (const auto& e : *a) out.push_back(&e);
        break;
    case Selector::Kind::Key:
        if (const auto* o = v.if_object())
            if (const auto* x = o->if_contains(sel.key)) out.push_back(x);
        break;
    case Selector::Kind::Index:
        if (const auto* a = v.if_array()) {
            auto n = static_cast<std::int64_t>(a->size());
            auto i = sel.index < 0 ? n + sel.index : sel.index;
            if (i >= 0 && i < n) out.push_back(&(*a)[static_cast<std::size_t>(i)]);
        }
        break;
    case Selector::Kind::Slice:
        if (const auto* a = v.if_array()) {
            auto n = static_cast<std::int64_t>(a->size());
            auto norm = [n](std::int64_t x) { return x < 0 ? std::max<std::int64_t>(0, n + x) : std::min(x, n); };
            if (sel.step > 0) {
                auto b = sel.start ? norm(*sel.start) : 0;
                auto e = sel.end ? norm(*sel.end) : n;
                for (auto i = b; i < e; i += sel.step) out.push_back(&(*a)[static_cast<std::size_t>(i)]);
            } else {
                auto b = sel.start ? std::min(norm(*sel.start), n - 1) : n - 1;
                auto e = sel.end ? norm(*sel.end) : -1;
                for (auto i = b; i > e && i >= 0; i += sel.step) out.push_back(&(*a)[static_cast<std::size_t>(i)]);
            }
        }
        break;
    }
}

inline Nodes evaluate(const Path& path, Nodes cur, const boost::json::value& root) {
    for (const auto& step : path) {
        Nodes next;
        for (const auto* v : cur) {
            switch (step.kind) {
            case Step::Kind::Child:
                if (const auto* o = v->if_object())
                    if (const auto* x = o->if_contains(step.name)) next.push_back(x);
                break;
            case Step::Kind::Wildcard: select(Selector{}, *v, next); break;
            case Step::Kind::Descend: descendants(v, next); break;
            case Step::Kind::Bracket:
                for (const auto& sel : step.selectors) select(sel, *v, next);
                break;
            case Step::Kind::Filter:
                if (const auto* a = v->if_array()) {
                    for (const auto& e : *a)
                        if (filter_accepts(*step.filter, e, root)) next.push_back(&e);
                } else if (filter_accepts(*step.filter, *v, root)) {
                    next.push_back(v);
                }
                break;
            }
        }
        cur = std::move(next);
    }
    return cur;
}

} // namespace detail::jsonpath

/// Every value `expr` selects in `root`, in document order; several {...} blocks concatenate.
/// Throws std::invalid_argument on a malformed expression.
inline std::vector<boost::json::value> jsonpath_query(const boost::json::value& root, std::string_view expr) {
    namespace jp = detail::jsonpath;
    auto paths = jp::Parser(expr).parse_template();
    std::vector<boost::json::value> out;
    for (const auto& p : paths)
        for (const auto* v : jp::evaluate(p, {&root}, root)) out.push_back(*v);
    return out;
}

} // namespace vck::sandbox
