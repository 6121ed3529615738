// How doctest prints the handlers' result types in failure messages (included by every
// translation unit of handlers_test, before any CHECK, so all agree on the specialisation).
#pragma once

#include <doctest.h>

#include <optional>
#include <string>

namespace doctest {
template <>
struct StringMaker<std::optional<std::string>> {
    static String convert(const std::optional<std::string>& v) {
        return v ? String(("\"" + *v + "\"").c_str()) : String("nullopt");
    }
};
} // namespace doctest
