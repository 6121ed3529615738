// ConfigError: the client's configuration could not be loaded: a kubeconfig, the in-cluster
// service-account files or a credential plugin is missing or wrong. what() is one sentence
// that names the file (or plugin) and the problem, fit to show a user as it is.
#pragma once

#include <stdexcept>

namespace vck::client {

class ConfigError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

} // namespace vck::client
