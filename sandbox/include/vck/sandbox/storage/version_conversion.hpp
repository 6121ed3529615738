// VersionConversion: an object as another version of its resource serves it. Versions of a
// CustomResourceDefinition share one schema here (the sandbox has no conversion webhooks),
// so their objects differ only in apiVersion; built-in kinds whose versions differ in shape
// convert field by field (Events: event_conversion.hpp). Every read path (get, list, watch,
// tables) and write path (create, update, patch) goes through convert_to_version, so what a
// client of either version sees and writes stays coherent with one storage.
#pragma once

#include <vck/sandbox/storage/event_conversion.hpp>

#include <boost/json.hpp>

#include <string>
#include <string_view>

namespace vck::sandbox {

/// `obj` in `api_version`; a non-object is returned as it is.
inline boost::json::value convert_to_version(const boost::json::value& obj, std::string_view api_version) {
    const auto* o = obj.if_object();
    if (!o) return obj;
    const auto* kind = o->if_contains("kind");
    if (kind && kind->is_string() && kind->get_string() == "Event")
        if (auto converted = convert_event(obj, api_version)) return std::move(*converted);
    boost::json::value copy = obj;
    copy.get_object()["apiVersion"] = api_version;
    return copy;
}

} // namespace vck::sandbox
