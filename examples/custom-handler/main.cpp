// vck-controller-git: vck's controller with one more source type, "GitRepo" — how an operator
// adds a handler of its own: register it beside the built-ins and run the same wiring.
//   vck-controller-git [--kubeconfig FILE] [--git-image IMAGE]
#include "git_handler.hpp"

#include <vck/client/default_config.hpp>
#include <vck/volumes/volume_manager_controller.hpp>

#include <CLI/CLI.hpp>

#include <cstdio>

int main(int argc, char** argv) {
    std::string kubeconfig, git_image = "alpine/git:2.43.0";
    CLI::App app{"vck's controller plus a GitRepo source type (example)"};
    app.add_option("--kubeconfig", kubeconfig, "Path to a kubeconfig");
    app.add_option("--git-image", git_image, "Image of the clone pods")->capture_default_str();
    CLI11_PARSE(app, argc, argv);
    try {
        vck::client::KubeconfigOptions ko;
        if (!kubeconfig.empty()) ko.path = kubeconfig;
        vck::runtime::ClusterManagerOptions mo;
        mo.config = vck::client::load_default(ko);
        vck::runtime::ClusterManager m(std::move(mo));
        auto registry = vck::handlers::HandlerRegistry::with_builtin_handlers();
        registry.add("GitRepo", example::GitHandler(git_image));  // a DownloadHandler<GitDownload>
        vck::volumes::add_volume_manager_controller(m, std::move(registry));
        return m.run();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "vck-controller-git: %s\n", e.what());
        return 1;
    }
}
