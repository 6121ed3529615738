// vck-sandbox: a local emulated Kubernetes API server to try vck and kubectl against.
// Flags and wiring only; the server is vck::testing::ApiServer.
#include <vck/testing/api_server.hpp>

#include <CLI/CLI.hpp>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>

int main(int argc, char** argv) {
    CLI::App app{"vck-sandbox: an emulated Kubernetes API server over HTTPS (see docs/sandbox.md)"};
    vck::testing::ApiServer::Options opts;
    std::string kubeconfig_out = "sandbox.kubeconfig";
    int admin_port = -1;
    bool verbose = false;
    app.add_option("--port", opts.port, "HTTPS port on 127.0.0.1 (0 picks a free one)");
    app.add_option("--bind", opts.bind, "address to listen on");
    app.add_option("--kubeconfig-out", kubeconfig_out, "where to write the kubeconfig for this sandbox");
    app.add_option("--admin-port", admin_port, "plain-HTTP fault injection API on 127.0.0.1 (0 picks a free one)");
    app.add_option("--token", opts.token, "the admin bearer token (generated when empty)");
    app.add_flag("-v,--verbose", verbose, "log every request to stderr");
    CLI11_PARSE(app, argc, argv);
    opts.verbose = verbose;
    if (admin_port >= 0) opts.admin_port = static_cast<std::uint16_t>(admin_port);

    // Block the signals before any thread starts so that only sigwait() below sees them.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);

    try {
        vck::testing::ApiServer server(opts);
        server.start();
        {
            std::ofstream out(kubeconfig_out, std::ios::trunc);
            out << server.kubeconfig_yaml();
            if (!out) throw std::runtime_error("cannot write the kubeconfig to " + kubeconfig_out);
        }
        std::cout << "vck-sandbox: serving " << server.url() << "\n"
                  << "kubeconfig: " << kubeconfig_out << "\n";
        if (server.admin_port()) std::cout << "admin: http://127.0.0.1:" << server.admin_port() << "\n";
        std::cout << std::flush;
        int sig = 0;
        sigwait(&signals, &sig);
        std::cout << "vck-sandbox: " << (sig == SIGINT ? "SIGINT" : "SIGTERM") << ", stopping" << std::endl;
        server.stop();
    } catch (const std::exception& e) {
        std::cerr << "vck-sandbox: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
