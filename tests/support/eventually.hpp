// Test support: vck's public eventually (include/vck/testing/eventually.hpp) under the tests'
// own namespace.
#pragma once

#include <vck/testing/eventually.hpp>

namespace vck::test {

using vck::testing::eventually;

} // namespace vck::test
