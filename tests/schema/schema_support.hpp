// What the schema specifications share: a StructuralSchema from its JSON text.
#pragma once

#include <vck/sandbox/validation/crd_schema.hpp>

#include <string_view>

namespace vck::test {

inline sandbox::StructuralSchema schema_of(std::string_view text) {
    return sandbox::StructuralSchema::from_json(boost::json::parse(text));
}

} // namespace vck::test
