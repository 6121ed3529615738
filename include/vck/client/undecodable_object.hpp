// UndecodableObject: the api::DecodeError of one object in a list or a watch, with the
// identity of the object it is about (namespace, name, uid, resourceVersion, read leniently
// from its JSON), so that a caller can skip that object, name it, and go on with the rest.
// what() stays the DecodeError's ("spec.replicas: expected integer, got string").
#pragma once

#include <vck/api/json.hpp>

#include <string>

namespace vck::client {

class UndecodableObject : public api::DecodeError {
public:
    /// `object` is the JSON that failed to decode into its type with `error`.
    UndecodableObject(const boost::json::value& object, const api::DecodeError& error)
        : api::DecodeError(error), ns_(meta(object, "namespace")), name_(meta(object, "name")),
          uid_(meta(object, "uid")), resource_version_(meta(object, "resourceVersion")) {}

    /// "" when the object does not say (an object without metadata decodes to nothing either).
    const std::string& namespace_() const noexcept { return ns_; }
    const std::string& name() const noexcept { return name_; }
    const std::string& uid() const noexcept { return uid_; }
    const std::string& resource_version() const noexcept { return resource_version_; }

private:
    // Leniently: a bad metadata field is the very error being reported, not a second one.
    static std::string meta(const boost::json::value& object, std::string_view field) {
        return std::string(api::string_at(object, {"metadata", field}));
    }

    std::string ns_, name_, uid_, resource_version_;
};

} // namespace vck::client
