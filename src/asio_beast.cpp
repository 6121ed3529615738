// The compiled parts of Boost.Asio (with its SSL layer) and Boost.Beast, once for all of vck's
// own programs, tests and examples, which are built with BOOST_ASIO_SEPARATE_COMPILATION and
// BOOST_BEAST_SEPARATE_COMPILATION (the root meson.build): each of their translation units then
// declares these functions instead of compiling them again (about 13% less compile time per
// unit that uses Beast). The installed headers and pkg-config files keep the header-only
// default: a user's program needs nothing of this file.
#include <boost/asio/impl/src.hpp>
#include <boost/asio/ssl/impl/src.hpp>
#include <boost/beast/src.hpp>
