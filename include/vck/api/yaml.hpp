// YAML documents (manifests, kubeconfig-like files) as JSON values, through yaml-cpp, the way
// kubectl reads them: plain scalars that are numbers, booleans or null become those JSON
// types; quoted scalars stay strings. Guarantees: every document of a multi-document stream
// is returned in order (empty documents skipped); a YAML syntax error throws
// std::runtime_error naming the file and line.
#pragma once

#include <boost/json.hpp>

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

namespace vck::api {

inline boost::json::value yaml_to_json(const YAML::Node& n) {
    switch (n.Type()) {
    case YAML::NodeType::Map: {
        boost::json::object o;
        for (const auto& kv : n) o[kv.first.as<std::string>()] = yaml_to_json(kv.second);
        return o;
    }
    case YAML::NodeType::Sequence: {
        boost::json::array a;
        for (const auto& item : n) a.push_back(yaml_to_json(item));
        return a;
    }
    case YAML::NodeType::Scalar: {
        const std::string& s = n.Scalar();
        if (n.Tag() == "!") return boost::json::string(s);  // quoted: always a string
        if (s == "null" || s == "~" || s.empty()) return nullptr;
        if (s == "true") return true;
        if (s == "false") return false;
        boost::system::error_code ec;
        auto v = boost::json::parse(s, ec);
        if (!ec && v.is_number()) return v;
        return boost::json::string(s);
    }
    default: return nullptr;
    }
}

inline std::vector<boost::json::value> yaml_documents(const std::string& text, const std::string& source = "<yaml>") {
    std::vector<boost::json::value> out;
    try {
        for (const auto& doc : YAML::LoadAll(text))
            if (doc.IsDefined() && !doc.IsNull()) out.push_back(yaml_to_json(doc));
    } catch (const YAML::Exception& e) {
        throw std::runtime_error(source + ": line " + std::to_string(e.mark.line + 1) + ": " + e.msg);
    }
    return out;
}

inline std::vector<boost::json::value> yaml_file(const std::filesystem::path& p) {
    std::ifstream in(p);
    if (!in) throw std::runtime_error(p.string() + ": cannot be read");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return yaml_documents(text, p.string());
}

} // namespace vck::api
