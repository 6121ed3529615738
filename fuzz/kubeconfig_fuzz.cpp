// libFuzzer target: kubeconfig loading (client/kubeconfig.hpp) from arbitrary bytes written to a
// file of this process. Contract: load_kubeconfig returns a Config or throws ConfigError — a
// YAML syntax error, a wrong node type or a bad base64 included — and nothing else.
// (Paths inside the file are read as they would be; exec plugins are not run by loading.)
#include "fuzz_check.hpp"

#include <vck/client/kubeconfig.hpp>

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const std::string path =
        (std::filesystem::temp_directory_path() / ("vck-kubeconfig-fuzz-" + std::to_string(::getpid()) + ".yaml")).string();
    {
        std::ofstream f(path, std::ios::binary | std::ios::trunc);
        f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    }
    try {
        (void)vck::client::load_kubeconfig(vck::client::KubeconfigOptions{path, std::nullopt});
    } catch (const vck::client::ConfigError&) {
    }
    std::error_code ec;
    std::filesystem::remove(path, ec);  // no file left behind by the smoke test
    return 0;
}
