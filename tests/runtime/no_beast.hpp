// Included last by the runtime's socket-free tests: the build fails if the headers under test
// pulled in Beast or OpenSSL (the reflector, informer, controller, finalizer and manager must
// compile and be testable without the HTTP client; only client_list_watch.hpp,
// client_lease_lock.hpp and cluster_manager.hpp join them to it).
#pragma once
#if defined(BOOST_BEAST_CORE_DETAIL_CONFIG_HPP) || defined(BOOST_BEAST_VERSION) || defined(OPENSSL_SSL_H) || \
    defined(HEADER_SSL_H)
#error "a socket-free runtime test includes Beast or OpenSSL"
#endif
