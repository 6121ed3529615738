// Test support: vck's public eventually (sandbox/include/vck/sandbox/eventually.hpp) under the tests'
// own namespace.
#pragma once

#include <vck/sandbox/eventually.hpp>

namespace vck::test {

using vck::sandbox::eventually;

} // namespace vck::test
