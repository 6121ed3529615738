// Certificates for the sandbox, generated in memory at start: a self-signed CA, a serving
// certificate for 127.0.0.1/localhost (plus extra names), and client certificates whose
// subject says who the caller is (CN = user name, O = groups, as kube-apiserver reads them).
// The sandbox's face of webhook/certificate_authority.hpp (the library's CA): the same keys,
// extensions and chain, with the names the sandbox always serves under.
#pragma once

#include <vck/webhook/certificate_authority.hpp>

#include <string>
#include <vector>

namespace vck::sandbox {

using webhook::PemPair;

/// A CA that signs serving and client certificates. Not copyable (it owns its key).
class SandboxCertificateAuthority : public webhook::CertificateAuthority {
public:
    explicit SandboxCertificateAuthority(const std::string& common_name = "vck-sandbox-ca")
        : webhook::CertificateAuthority(common_name) {}

    /// A serving certificate for IP 127.0.0.1, DNS localhost and `extra_names` (each an IP
    /// address or a DNS name).
    PemPair issue_server(const std::vector<std::string>& extra_names = {}) const {
        std::vector<std::string> names{"127.0.0.1", "localhost"};
        names.insert(names.end(), extra_names.begin(), extra_names.end());
        return webhook::CertificateAuthority::issue_server(names);
    }
};

} // namespace vck::sandbox
