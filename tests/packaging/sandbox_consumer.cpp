// A user's test built against an installed vck-sandbox (tests/packaging/packaging_test.sh):
// the sandbox's store, as an operator's test drives it without a socket. It validates and
// defaults as kube-apiserver does: a ConfigMap is created and read back, and a bad name is
// refused with kube-apiserver's wording.
#include <vck/sandbox/storage/object_store.hpp>

#include <boost/json.hpp>

#include <cstdio>
#include <exception>
#include <string>

int main() {
    vck::sandbox::ObjectStore store;
    const vck::sandbox::ResourceId configmaps{"", "v1", "configmaps"};
    store.create(configmaps, "default",
                 boost::json::parse(R"({"metadata": {"name": "c"}, "data": {"a": "1"}})"));
    auto back = store.get(configmaps, "default", "c");
    if (back.at("data").at("a") != "1") return 1;
    try {
        store.create(configmaps, "default", boost::json::parse(R"({"metadata": {"name": "Bad_Name"}})"));
        return 2;
    } catch (const std::exception& e) {
        if (std::string(e.what()).find("Bad_Name") == std::string::npos) return 3;
    }
    std::puts("sandbox consumer: ok");
    return 0;
}
