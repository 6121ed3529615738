// FieldSelector: the `fieldSelector` query of list and watch requests
// ("metadata.name=x,spec.nodeName!=y"), evaluated on a JSON object by dotted path.
// Guarantees: parsing follows Kubernetes (operators =, ==, !=; values escaped with "\\",
// "\,", "\="), an absent field compares as "", and bad text throws vck::api::SelectorError.
#pragma once

#include <vck/api/label_selector.hpp>

#include <boost/json.hpp>

#include <algorithm>
#include <charconv>
#include <string>
#include <string_view>
#include <vector>

namespace vck::sandbox {

class FieldSelector {
public:
    struct Term {
        std::string field;
        bool equals = true; // "=" and "==" are the same test; false for "!="
        std::string value;  // unescaped
        friend bool operator==(const Term&, const Term&) = default;
    };

    /// Parses the text form; "" selects everything. Throws vck::api::SelectorError.
    static FieldSelector parse(std::string_view text);

    bool matches(const boost::json::value& object) const {
        for (const auto& t : terms_)
            if ((value_at(object, t.field) == t.value) != t.equals) return false;
        return true;
    }

    /// The field names used, once each, in order of first use.
    std::vector<std::string> fields() const {
        std::vector<std::string> out;
        for (const auto& t : terms_)
            if (std::find(out.begin(), out.end(), t.field) == out.end()) out.push_back(t.field);
        return out;
    }

    bool empty() const { return terms_.empty(); }

    /// The same terms with each field renamed by `rename` (a version's labels mapped onto
    /// the labels of the storage it shares).
    template <class Rename>
    FieldSelector renamed(Rename&& rename) const {
        FieldSelector out = *this;
        for (auto& t : out.terms_) t.field = rename(t.field);
        return out;
    }
    const std::vector<Term>& terms() const { return terms_; }

    /// The text form with values escaped again; parse(to_string()) == *this.
    std::string to_string() const {
        std::string out;
        for (const auto& t : terms_) {
            if (!out.empty()) out += ',';
            out += t.field;
            // parse() trims blanks around a field, so one blank keeps a field ending in '!'
            // from joining "=" into "!=", and one ending in '\\' from escaping the operator.
            if (!t.field.empty() && ((t.equals && t.field.back() == '!') || t.field.back() == '\\')) out += ' ';
            out += t.equals ? "=" : "!=";
            for (char c : t.value) {
                if (c == '\\' || c == ',' || c == '=') out += '\\';
                out += c;
            }
        }
        return out;
    }

    /// The field at a dotted path as the server compares it: strings as they are, numbers and
    /// booleans as text, anything absent (or an object/array) as "".
    static std::string value_at(const boost::json::value& object, std::string_view path) {
        const boost::json::value* cur = &object;
        while (true) {
            auto dot = path.find('.');
            auto key = path.substr(0, dot);
            const auto* o = cur->if_object();
            if (!o) return {};
            cur = o->if_contains(key);
            if (!cur) return {};
            if (dot == std::string_view::npos) break;
            path.remove_prefix(dot + 1);
        }
        switch (cur->kind()) {
        case boost::json::kind::string: return std::string(cur->get_string());
        case boost::json::kind::bool_: return cur->get_bool() ? "true" : "false";
        case boost::json::kind::int64:
        case boost::json::kind::uint64: return boost::json::serialize(*cur);
        case boost::json::kind::double_: {
            // Shortest round-trip text ("2", "1.5"), not Boost's "2E0".
            char buf[64];
            auto r = std::to_chars(buf, buf + sizeof buf, cur->get_double());
            return std::string(buf, r.ptr);
        }
        default: return {};
        }
    }

    friend bool operator==(const FieldSelector&, const FieldSelector&) = default;

private:
    std::vector<Term> terms_;
};

inline FieldSelector FieldSelector::parse(std::string_view text) {
    using vck::api::SelectorError;
    FieldSelector sel;
    auto blank = [](std::string_view s) { return s.find_first_not_of(" \t\r\n") == std::string_view::npos; };
    if (blank(text)) return sel;

    // Split on commas that are not escaped; a backslash always takes the next character along.
    std::vector<std::string_view> raw_terms;
    std::size_t start = 0;
    for (std::size_t i = 0; i <= text.size(); ++i) {
        if (i < text.size() && text[i] == '\\') {
            ++i;
            continue;
        }
        if (i == text.size() || text[i] == ',') {
            raw_terms.push_back(text.substr(start, i - start));
            start = i + 1;
        }
    }

    for (auto term : raw_terms) {
        std::size_t at = std::string_view::npos, op_len = 0;
        bool equals = true;
        for (std::size_t i = 0; i < term.size() && at == std::string_view::npos; ++i) {
            if (term[i] == '\\') {
                ++i;
                continue;
            }
            auto rest = term.substr(i);
            if (rest.starts_with("!=")) at = i, op_len = 2, equals = false;
            else if (rest.starts_with("==")) at = i, op_len = 2;
            else if (rest.starts_with("=")) at = i, op_len = 1;
        }
        if (at == std::string_view::npos)
            throw SelectorError("invalid selector: '" + std::string(text) + "'; can't understand '" +
                                std::string(term) + "'");
        std::string field(term.substr(0, at));
        auto fb = field.find_first_not_of(" \t");
        auto fe = field.find_last_not_of(" \t");
        field = fb == std::string::npos ? std::string() : field.substr(fb, fe - fb + 1);
        if (field.empty())
            throw SelectorError("invalid selector: '" + std::string(text) + "'; missing field name in '" +
                                std::string(term) + "'");
        auto raw_value = term.substr(at + op_len);
        std::string value;
        for (std::size_t i = 0; i < raw_value.size(); ++i) {
            char c = raw_value[i];
            if (c == '\\') {
                if (i + 1 >= raw_value.size() ||
                    (raw_value[i + 1] != '\\' && raw_value[i + 1] != ',' && raw_value[i + 1] != '='))
                    throw SelectorError("invalid field selector: invalid escape sequence in '" +
                                        std::string(raw_value) + "' (only \\\\, \\, and \\= are allowed)");
                value += raw_value[++i];
            } else if (c == '=' || c == ',') {
                throw SelectorError("invalid field selector: unescaped '" + std::string(1, c) + "' in value '" +
                                    std::string(raw_value) + "'");
            } else {
                value += c;
            }
        }
        sel.terms_.push_back(Term{std::move(field), equals, std::move(value)});
    }
    return sel;
}

} // namespace vck::sandbox
