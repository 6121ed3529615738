// vck-sandbox: a local emulated Kubernetes API server to try vck and kubectl against, with an
// optional simulated cluster (nodes, scheduler, kubelet, PV binder).
// Flags and wiring only; the server is vck::sandbox::ApiServer, the cluster vck::sandbox::Sandbox.
#include <vck/sandbox/server/api_server.hpp>
#include <vck/sandbox/sandbox.hpp>

#include "command_line.hpp"

#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

int main(int argc, char** argv) {
    CLI::App app{"vck-sandbox: an emulated Kubernetes API server over HTTPS (see docs/sandbox.md)"};
    vck::cli::add_version_flag(app, "vck-sandbox");
    vck::sandbox::ApiServer::Options opts;
    std::string kubeconfig_out = "sandbox.kubeconfig";
    int admin_port = -1;
    bool verbose = false;
    int nodes = -1;
    std::string nodes_file, data_root, default_image;
    std::vector<std::string> images;
    app.add_option("--port", opts.port, "HTTPS port on 127.0.0.1 (0 picks a free one)")
        ->check(vck::cli::in_range(0, 65535));
    app.add_option("--bind", opts.bind, "address to listen on");
    app.add_option("--kubeconfig-out", kubeconfig_out, "where to write the kubeconfig for this sandbox");
    app.add_option("--admin-port", admin_port, "plain-HTTP fault injection API on 127.0.0.1 (0 picks a free one)")
        ->check(vck::cli::in_range(0, 65535));
    app.add_option("--token", opts.token, "the admin bearer token (generated when empty)");
    app.add_flag("-v,--verbose", verbose, "log every request to stderr");
    auto* nodes_opt = app.add_option("--nodes", nodes, "simulate N plain nodes node-1 .. node-N")
                         ->check(vck::cli::in_range(0, 1000));
    app.add_option("--nodes-file", nodes_file, "simulate the nodes defined in this YAML or JSON file")
        ->excludes(nodes_opt);
    app.add_option("--data-root", data_root,
                   "where node N's host paths live (DIR/nodes/N/...); a temporary directory when empty");
    app.add_option("--image", images, "IMAGE=BEHAVIOUR, repeatable; BEHAVIOUR is succeed[:DELAY], "
                                      "fail[:EXIT[:DELAY]], forever, exec:PATH or root:DIR (the image's files), "
                                      "optionally followed by "
                                      ";user=UID[:GID] (the image's default user, root if not given); "
                                      "IMAGE may be a glob");
    app.add_option("--default-image", default_image, "the BEHAVIOUR of images no --image names (default succeed)");
    std::vector<std::string> users;
    app.add_option("--user", users, "NAME[:GROUP,...], repeatable: another user, authenticated by a token issued "
                                    "at start and bound by RBAC; the kubeconfig gets a context NAME for it");
    if (auto rc = vck::cli::parse(app, "vck-sandbox", argc, argv)) return *rc;
    opts.verbose = verbose;
    if (admin_port >= 0) opts.admin_port = static_cast<std::uint16_t>(admin_port);
    bool cluster = nodes >= 0 || !nodes_file.empty();

    vck::sandbox::Sandbox::Options sim;
    std::vector<std::pair<std::string, std::vector<std::string>>> principals;  // --user
    try {
        if (!cluster && (!data_root.empty() || !images.empty() || !default_image.empty()))
            throw std::invalid_argument("--data-root, --image and --default-image need --nodes or --nodes-file");
        if (!nodes_file.empty()) sim.simulated_nodes = vck::sandbox::load_simulated_nodes(nodes_file);
        sim.nodes = nodes < 0 ? 0 : nodes;
        sim.data_root = data_root;
        for (const auto& i : images) {
            auto eq = i.find('=');
            if (eq == std::string::npos || eq == 0)
                throw std::invalid_argument("--image \"" + i + "\": expected IMAGE=BEHAVIOUR");
            sim.images[i.substr(0, eq)] = vck::sandbox::ImageBehaviour::parse(i.substr(eq + 1));
        }
        if (!default_image.empty()) sim.default_image = vck::sandbox::ImageBehaviour::parse(default_image);
        for (const auto& u : users) {
            auto colon = u.find(':');
            if (colon == 0 || u.empty()) throw std::invalid_argument("--user \"" + u + "\": expected NAME[:GROUP,...]");
            std::vector<std::string> groups;
            if (colon != std::string::npos)
                for (std::size_t at = colon + 1; at <= u.size();) {
                    auto comma = std::min(u.find(',', at), u.size());
                    if (comma > at) groups.push_back(u.substr(at, comma - at));
                    at = comma + 1;
                }
            principals.emplace_back(u.substr(0, colon), std::move(groups));
        }
    } catch (const std::exception& e) {
        std::cerr << "vck-sandbox: " << e.what() << "\n";
        return 2;
    }

    // Block the signals before any thread starts so that only sigwait() below sees them
    // (container processes get a default mask: see HostProcess).
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);

    try {
        std::unique_ptr<vck::sandbox::ApiServer> plain;
        std::unique_ptr<vck::sandbox::Sandbox> sandbox;
        if (cluster) {
            sim.server = opts;
            sandbox = std::make_unique<vck::sandbox::Sandbox>(std::move(sim));
        } else {
            plain = std::make_unique<vck::sandbox::ApiServer>(opts);
            plain->store().set_root_ca(plain->ca_pem());  // kube-root-ca.crt, as with --nodes
            plain->start();
        }
        auto& server = sandbox ? sandbox->server() : *plain;
        for (auto& [name, groups] : principals) server.add_user(name, std::move(groups));
        {
            std::ofstream out(kubeconfig_out, std::ios::trunc);
            out << server.kubeconfig_yaml();
            if (!out) throw std::runtime_error("cannot write the kubeconfig to " + kubeconfig_out);
        }
        std::cout << "vck-sandbox: serving " << server.url() << "\n"
                  << "kubeconfig: " << kubeconfig_out << "\n";
        if (server.admin_port()) std::cout << "admin: http://127.0.0.1:" << server.admin_port() << "\n";
        if (sandbox)
            std::cout << "nodes: " << sandbox->nodes().size() << "\n"
                      << "data-root: " << sandbox->data_root().string() << "\n";
        std::cout << std::flush;
        int sig = 0;
        sigwait(&signals, &sig);
        std::cout << "vck-sandbox: " << (sig == SIGINT ? "SIGINT" : "SIGTERM") << ", stopping" << std::endl;
        if (sandbox) sandbox->stop();
        else plain->stop();
    } catch (const std::exception& e) {
        std::cerr << "vck-sandbox: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
