// configmap-mirror: the operator's binary. Reads the kubeconfig (or in-cluster config),
// serves /metrics, /healthz and /readyz on --health-port, and runs with leader election
// when --lease is given. Exits 0 after SIGTERM/SIGINT.
#include "mirror.hpp"

#include <vck/client/default_config.hpp>

#include <cstdio>
#include <string>

int main(int argc, char** argv) {
    std::string lease;
    int port = 8081;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--lease" && i + 1 < argc) lease = argv[++i];
        else if (a == "--health-port" && i + 1 < argc) port = std::stoi(argv[++i]);
        else {
            std::fprintf(stderr, "usage: %s [--lease NAME] [--health-port PORT]\nunknown argument: %s\n", argv[0], a.c_str());
            return 2;
        }
    }
    try {
        vck::runtime::ClusterManagerOptions o;
        o.config = vck::client::load_default();
        o.health = vck::runtime::HealthServer::Options();
        o.health->port = static_cast<std::uint16_t>(port);
        if (!lease.empty()) {
            vck::runtime::LeaderElectionOptions le;
            le.namespace_ = o.config.namespace_;
            le.name = lease;
            o.leader_election = le;
        }
        vck::runtime::ClusterManager m(o);
        mirror::Operator op(m);
        return m.run();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "configmap-mirror: %s\n", e.what());
        return 1;
    }
}
