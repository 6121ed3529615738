// LabelSelector: the set-based label query of Kubernetes ("app=web,tier in (a,b),!legacy"),
// read from the `labelSelector` text form or from a metav1.LabelSelector object.
// Guarantees: parsing validates keys and values as kube-apiserver does and throws
// SelectorError with its wording; to_string() is canonical (sorted) and parses back equal.
#pragma once

#include <vck/api/string_map.hpp>

#include <boost/json.hpp>

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace vck::api {

/// A map from strings to strings: StringMap (api::Labels) or std::map<std::string, std::string>.
template <class M>
concept StringToStringMap = std::same_as<typename M::key_type, std::string> && std::same_as<typename M::mapped_type, std::string>;

/// A malformed selector; what() is worded like kube-apiserver's message.
class SelectorError : public std::invalid_argument {
public:
    using std::invalid_argument::invalid_argument;
};

class LabelSelector {
public:
    enum class Op { Equals, NotEquals, In, NotIn, Exists, DoesNotExist, GreaterThan, LessThan };

    struct Requirement {
        std::string key;
        Op op = Op::Exists;
        std::set<std::string> values; // sorted, as in Kubernetes' canonical form
        friend bool operator==(const Requirement&, const Requirement&) = default;
    };

    /// Parses the text form; "" selects everything. Throws SelectorError.
    static LabelSelector parse(std::string_view text);

    /// Reads a metav1.LabelSelector {matchLabels, matchExpressions}. `{}` selects everything;
    /// null selects nothing, as Kubernetes' LabelSelectorAsSelector does (a Service or PDB
    /// without a selector must not claim every pod). Throws SelectorError.
    static LabelSelector from_json(const boost::json::value& metav1LabelSelector);

    /// The equality-only selector of a plain label map (a Service's or ReplicationController's
    /// spec.selector). Throws SelectorError on invalid keys, values, or a non-string value.
    template <StringToStringMap Map>
    static LabelSelector from_set(const Map& labels) {
        LabelSelector s;
        for (const auto& [k, v] : labels) s.add(k, Op::Equals, {v});
        return s;
    }
    static LabelSelector from_set(const boost::json::object& labels) {
        LabelSelector s;
        for (const auto& kv : labels) {
            if (!kv.value().is_string())
                throw SelectorError("invalid label selector: the value of \"" + std::string(kv.key()) + "\" must be a string");
            s.add(std::string(kv.key()), Op::Equals, {std::string(kv.value().get_string())});
        }
        return s;
    }

    /// A selector that matches no object at all.
    static LabelSelector nothing() {
        LabelSelector s;
        s.nothing_ = true;
        return s;
    }

    /// Against an api::Labels (StringMap) or a std::map of strings.
    template <StringToStringMap Map>
    bool matches(const Map& labels) const {
        return matches_with([&](std::string_view k) -> const std::string* {
            auto it = [&] {
                if constexpr (requires { labels.find(k); }) return labels.find(k);
                else return labels.find(std::string(k));
            }();
            return it == labels.end() ? nullptr : &it->second;
        });
    }

    /// Matches raw metadata.labels; nullptr means the object has no labels. Non-string label
    /// values (invalid in Kubernetes) are treated as absent.
    bool matches(const boost::json::object* labels) const {
        std::string scratch;
        return matches_with([&](std::string_view k) -> const std::string* {
            if (!labels) return nullptr;
            const auto* v = labels->if_contains(k);
            if (!v || !v->is_string()) return nullptr;
            scratch.assign(v->get_string().data(), v->get_string().size());
            return &scratch;
        });
    }

    /// True when the selector matches every object.
    bool empty() const { return !nothing_ && reqs_.empty(); }
    /// True for the selector that matches nothing (from_json(null)).
    bool selects_nothing() const { return nothing_; }

    const std::vector<Requirement>& requirements() const { return reqs_; }

    /// Canonical text: requirements sorted by key, "=" for equality, sets sorted.
    /// The nothing-selector prints as "" like Kubernetes' does; only it does not round-trip.
    std::string to_string() const;

    /// Adds one requirement, validating it like Kubernetes' NewRequirement.
    LabelSelector& add(std::string key, Op op, std::set<std::string> values = {});

    friend bool operator==(const LabelSelector&, const LabelSelector&) = default;

private:
    template <class Lookup>
    bool matches_with(Lookup&& lookup) const;

    std::vector<Requirement> reqs_; // kept sorted by key (stable)
    bool nothing_ = false;
};

namespace detail {

inline bool is_label_alnum(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]", at most 63 characters.
inline std::string label_name_problem(std::string_view s, std::string_view what) {
    const std::string rule = " must consist of alphanumeric characters, '-', '_' or '.', and must "
                             "start and end with an alphanumeric character (e.g. 'MyName',  or "
                             "'my.name',  or '123-abc', regex used for validation is "
                             "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    if (s.size() > 63) return std::string(what) + " must be no more than 63 characters";
    if (s.empty()) return std::string(what) + " must be non-empty";
    if (!is_label_alnum(s.front()) || !is_label_alnum(s.back())) return std::string(what) + rule;
    for (char c : s)
        if (!is_label_alnum(c) && c != '-' && c != '_' && c != '.') return std::string(what) + rule;
    return {};
}

// RFC 1123 subdomain: lowercase alphanumerics, '-' and '.', at most 253 characters.
inline std::string dns_subdomain_problem(std::string_view s) {
    if (s.empty()) return "prefix part must be non-empty";
    if (s.size() > 253) return "prefix part must be no more than 253 characters";
    const std::string rule =
        "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
        "characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
        "'example.com', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
    std::size_t start = 0;
    while (start <= s.size()) {
        auto dot = s.find('.', start);
        auto label = s.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
        if (label.empty()) return rule;
        auto low = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
        if (!low(label.front()) || !low(label.back())) return rule;
        for (char c : label)
            if (!low(c) && c != '-') return rule;
        if (dot == std::string_view::npos) break;
        start = dot + 1;
    }
    return {};
}

} // namespace detail

/// Why kube-apiserver refuses `key` as a qualified name (label and annotation keys,
/// finalizers: an optional DNS-1123 subdomain prefix of at most 253 characters and '/', then a
/// name of at most 63 characters, alphanumeric at both ends with '-', '_' and '.' inside), in
/// its words (IsQualifiedName); "" when valid.
inline std::string qualified_name_problem(std::string_view key) {
    auto slash = key.find('/');
    if (slash == std::string_view::npos) return detail::label_name_problem(key, "name part");
    if (key.find('/', slash + 1) != std::string_view::npos)
        return "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and "
               "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
               "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix "
               "and '/' (e.g. 'example.com/MyName')";
    if (auto p = detail::dns_subdomain_problem(key.substr(0, slash)); !p.empty()) return p;
    return detail::label_name_problem(key.substr(slash + 1), "name part");
}

/// Why kube-apiserver refuses `value` as a label value (empty, or at most 63 characters,
/// alphanumeric at both ends with '-', '_' and '.' inside), in its words
/// (IsValidLabelValue); "" when valid.
inline std::string label_value_problem(std::string_view value) {
    if (value.size() > 63) return "must be no more than 63 characters";
    if (value.empty() || detail::label_name_problem(value, "").empty()) return {};
    return "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and "
           "must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', "
           "regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
}

namespace detail {

inline void validate_label_key(std::string_view key) {
    if (auto problem = qualified_name_problem(key); !problem.empty())
        throw SelectorError("unable to parse requirement: key: Invalid value: \"" + std::string(key) +
                            "\": " + problem);
}

inline void validate_label_value(std::string_view key, std::size_t index, std::string_view value) {
    if (auto problem = label_value_problem(value); !problem.empty())
        throw SelectorError("unable to parse requirement: values[" + std::to_string(index) + "][" +
                            std::string(key) + "]: Invalid value: \"" + std::string(value) + "\": " + problem);
}

inline bool parse_label_int(std::string_view s, std::int64_t& out) {
    if (s.empty()) return false;
    std::size_t i = 0;
    bool neg = false;
    if (s[0] == '-' || s[0] == '+') {
        neg = s[0] == '-';
        i = 1;
        if (s.size() == 1) return false;
    }
    std::int64_t v = 0;
    for (; i < s.size(); ++i) {
        if (s[i] < '0' || s[i] > '9') return false;
        if (v > (INT64_MAX - (s[i] - '0')) / 10) return false;
        v = v * 10 + (s[i] - '0');
    }
    out = neg ? -v : v;
    return true;
}

// Tokens of Kubernetes' selector lexer. Identifiers are maximal runs of anything that is not
// whitespace or one of "!=,()<>"; "in"/"notin" are keywords only as whole identifiers.
struct SelectorLexer {
    enum class Tok { End, Ident, In, NotIn, Eq, DoubleEq, NotEq, Not, Comma, Open, Close, Gt, Lt };
    struct Token {
        Tok tok;
        std::string_view text;
    };

    std::string_view in;
    std::size_t pos = 0;

    static bool special(char c) {
        return c == '!' || c == '=' || c == ',' || c == '(' || c == ')' || c == '<' || c == '>';
    }
    static bool space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

    Token next() {
        while (pos < in.size() && space(in[pos])) ++pos;
        if (pos >= in.size()) return {Tok::End, "end of string"};
        char c = in[pos];
        auto two = in.substr(pos, 2);
        if (two == "==") { pos += 2; return {Tok::DoubleEq, "=="}; }
        if (two == "!=") { pos += 2; return {Tok::NotEq, "!="}; }
        switch (c) {
        case '=': ++pos; return {Tok::Eq, "="};
        case '!': ++pos; return {Tok::Not, "!"};
        case ',': ++pos; return {Tok::Comma, ","};
        case '(': ++pos; return {Tok::Open, "("};
        case ')': ++pos; return {Tok::Close, ")"};
        case '>': ++pos; return {Tok::Gt, ">"};
        case '<': ++pos; return {Tok::Lt, "<"};
        default: break;
        }
        auto start = pos;
        while (pos < in.size() && !space(in[pos]) && !special(in[pos])) ++pos;
        auto word = in.substr(start, pos - start);
        if (word == "in") return {Tok::In, word};
        if (word == "notin") return {Tok::NotIn, word};
        return {Tok::Ident, word};
    }

    Token peek() {
        auto saved = pos;
        auto t = next();
        pos = saved;
        return t;
    }
};

[[noreturn]] inline void selector_syntax_error(std::string_view found, std::string_view expected) {
    throw SelectorError("unable to parse requirement: found '" + std::string(found) + "', expected: " +
                        std::string(expected));
}

} // namespace detail

inline LabelSelector& LabelSelector::add(std::string key, Op op, std::set<std::string> values) {
    detail::validate_label_key(key);
    switch (op) {
    case Op::Equals:
    case Op::NotEquals:
        if (values.size() != 1)
            throw SelectorError("unable to parse requirement: values: Invalid value: " +
                                std::to_string(values.size()) + ": exact-match compatibility requires one single value");
        break;
    case Op::In:
    case Op::NotIn:
        if (values.empty())
            throw SelectorError("unable to parse requirement: values: Invalid value: []: for 'in', "
                                "'notin' operators, values set can't be empty");
        break;
    case Op::Exists:
    case Op::DoesNotExist:
        if (!values.empty())
            throw SelectorError("unable to parse requirement: values: Invalid value: " +
                                std::to_string(values.size()) +
                                ": values set must be empty for exists and does not exist");
        break;
    case Op::GreaterThan:
    case Op::LessThan: {
        std::int64_t n = 0;
        if (values.size() != 1 || !detail::parse_label_int(*values.begin(), n))
            throw SelectorError("unable to parse requirement: values[0]: Invalid value: \"" +
                                (values.empty() ? std::string() : *values.begin()) +
                                "\": for 'Gt', 'Lt' operators, the value must be a single integer");
        break;
    }
    }
    if (op != Op::GreaterThan && op != Op::LessThan) {
        std::size_t i = 0;
        for (const auto& v : values) detail::validate_label_value(key, i++, v);
    }
    Requirement r{std::move(key), op, std::move(values)};
    auto at = std::upper_bound(reqs_.begin(), reqs_.end(), r,
                               [](const Requirement& a, const Requirement& b) { return a.key < b.key; });
    reqs_.insert(at, std::move(r));
    return *this;
}

inline LabelSelector LabelSelector::parse(std::string_view text) {
    using detail::SelectorLexer;
    using Tok = SelectorLexer::Tok;
    LabelSelector sel;
    SelectorLexer lex{text};
    if (lex.peek().tok == Tok::End) return sel;
    for (;;) {
        auto t = lex.next();
        bool negated = false;
        if (t.tok == Tok::Not) {
            negated = true;
            t = lex.next();
        }
        if (t.tok != Tok::Ident) detail::selector_syntax_error(t.text, negated ? "identifier" : "!, identifier");
        std::string key(t.text);
        auto after = lex.peek();
        if (negated) {
            if (after.tok != Tok::End && after.tok != Tok::Comma)
                detail::selector_syntax_error(after.text, "',' or 'end of string'");
            sel.add(std::move(key), Op::DoesNotExist);
        } else if (after.tok == Tok::End || after.tok == Tok::Comma) {
            sel.add(std::move(key), Op::Exists);
        } else {
            auto op_tok = lex.next();
            Op op;
            switch (op_tok.tok) {
            case Tok::Eq:
            case Tok::DoubleEq: op = Op::Equals; break;
            case Tok::NotEq: op = Op::NotEquals; break;
            case Tok::In: op = Op::In; break;
            case Tok::NotIn: op = Op::NotIn; break;
            case Tok::Gt: op = Op::GreaterThan; break;
            case Tok::Lt: op = Op::LessThan; break;
            default: detail::selector_syntax_error(op_tok.text, "=, !=, ==, in, notin, <, >");
            }
            std::set<std::string> values;
            if (op == Op::In || op == Op::NotIn) {
                auto open = lex.next();
                if (open.tok != Tok::Open) detail::selector_syntax_error(open.text, "'('");
                // "(a,,b)" and "(a,)" carry empty values, as in Kubernetes.
                for (;;) {
                    auto v = lex.next();
                    if (v.tok == Tok::Ident || v.tok == Tok::In || v.tok == Tok::NotIn) {
                        values.emplace(v.text);
                        v = lex.next();
                    } else if (v.tok == Tok::Comma || v.tok == Tok::Close) {
                        values.emplace();
                    } else {
                        detail::selector_syntax_error(v.text, "',', ')' or identifier");
                    }
                    if (v.tok == Tok::Close) break;
                    if (v.tok != Tok::Comma) detail::selector_syntax_error(v.text, "',' or ')'");
                }
            } else {
                auto v = lex.peek();
                if (v.tok == Tok::Ident || v.tok == Tok::In || v.tok == Tok::NotIn) {
                    lex.next();
                    values.emplace(v.text);
                } else if (v.tok == Tok::End || v.tok == Tok::Comma) {
                    values.emplace(); // "a=" selects an empty value
                } else {
                    detail::selector_syntax_error(v.text, "identifier");
                }
            }
            sel.add(std::move(key), op, std::move(values));
        }
        auto sep = lex.next();
        if (sep.tok == Tok::End) break;
        if (sep.tok != Tok::Comma) detail::selector_syntax_error(sep.text, "',' or 'end of string'");
        if (lex.peek().tok == Tok::End) detail::selector_syntax_error("end of string", "!, identifier");
    }
    return sel;
}

inline LabelSelector LabelSelector::from_json(const boost::json::value& v) {
    namespace json = boost::json;
    if (v.is_null()) return nothing();
    const auto* o = v.if_object();
    if (!o) throw SelectorError("invalid label selector: expected an object with matchLabels and matchExpressions");
    LabelSelector sel;
    auto str = [](const json::value& x, std::string_view where) {
        if (!x.is_string()) throw SelectorError("invalid label selector: " + std::string(where) + " must be a string");
        return std::string(x.get_string());
    };
    if (const auto* ml = o->if_contains("matchLabels"); ml && !ml->is_null()) {
        if (!ml->is_object()) throw SelectorError("invalid label selector: matchLabels must be an object");
        for (const auto& kv : ml->get_object())
            sel.add(std::string(kv.key()), Op::Equals, {str(kv.value(), "matchLabels." + std::string(kv.key()))});
    }
    if (const auto* me = o->if_contains("matchExpressions"); me && !me->is_null()) {
        if (!me->is_array()) throw SelectorError("invalid label selector: matchExpressions must be an array");
        std::size_t i = 0;
        for (const auto& e : me->get_array()) {
            std::string where = "matchExpressions[" + std::to_string(i++) + "]";
            if (!e.is_object()) throw SelectorError("invalid label selector: " + where + " must be an object");
            const auto& eo = e.get_object();
            const auto* key = eo.if_contains("key");
            const auto* op = eo.if_contains("operator");
            if (!key) throw SelectorError("invalid label selector: " + where + ".key is required");
            if (!op) throw SelectorError("invalid label selector: " + where + ".operator is required");
            std::set<std::string> values;
            if (const auto* vs = eo.if_contains("values"); vs && !vs->is_null()) {
                if (!vs->is_array()) throw SelectorError("invalid label selector: " + where + ".values must be an array");
                for (const auto& x : vs->get_array()) values.insert(str(x, where + ".values[]"));
            }
            auto ops = str(*op, where + ".operator");
            Op kind;
            if (ops == "In") kind = Op::In;
            else if (ops == "NotIn") kind = Op::NotIn;
            else if (ops == "Exists") kind = Op::Exists;
            else if (ops == "DoesNotExist") kind = Op::DoesNotExist;
            else
                throw SelectorError("\"" + ops + "\" is not a valid label selector operator");
            sel.add(str(*key, where + ".key"), kind, std::move(values));
        }
    }
    return sel;
}

template <class Lookup>
bool LabelSelector::matches_with(Lookup&& lookup) const {
    if (nothing_) return false;
    for (const auto& r : reqs_) {
        const std::string* have = lookup(r.key);
        bool ok = false;
        switch (r.op) {
        case Op::Equals:
        case Op::In: ok = have && r.values.count(*have) > 0; break;
        case Op::NotEquals:
        case Op::NotIn: ok = !have || r.values.count(*have) == 0; break;
        case Op::Exists: ok = have != nullptr; break;
        case Op::DoesNotExist: ok = have == nullptr; break;
        case Op::GreaterThan:
        case Op::LessThan: {
            std::int64_t lhs = 0, rhs = 0;
            if (!have || !detail::parse_label_int(*have, lhs)) break;
            detail::parse_label_int(*r.values.begin(), rhs);
            ok = r.op == Op::GreaterThan ? lhs > rhs : lhs < rhs;
            break;
        }
        }
        if (!ok) return false;
    }
    return true;
}

inline std::string LabelSelector::to_string() const {
    std::string out;
    for (const auto& r : reqs_) {
        if (!out.empty()) out += ',';
        auto set = [&] {
            out += " (";
            bool first = true;
            for (const auto& v : r.values) {
                if (!first) out += ',';
                out += v;
                first = false;
            }
            out += ')';
        };
        switch (r.op) {
        case Op::Equals: out += r.key + "=" + *r.values.begin(); break;
        case Op::NotEquals: out += r.key + "!=" + *r.values.begin(); break;
        case Op::In: out += r.key + " in"; set(); break;
        case Op::NotIn: out += r.key + " notin"; set(); break;
        case Op::Exists: out += r.key; break;
        case Op::DoesNotExist: out += "!" + r.key; break;
        case Op::GreaterThan: out += r.key + ">" + *r.values.begin(); break;
        case Op::LessThan: out += r.key + "<" + *r.values.begin(); break;
        }
    }
    return out;
}

} // namespace vck::api
