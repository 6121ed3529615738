// Specification of Change (change.hpp) as informer handlers receive it over an in-memory
// list-and-watch: one Change per server change, what `old` and `object` hold for each type,
// and what a resync looks like.
#include <vck/api/core_v1.hpp>
#include <vck/runtime/informer.hpp>

#include "memory_loop.hpp"
#include "no_beast.hpp"

#include <doctest.h>

#include <string>
#include <vector>

using namespace vck;
using runtime::ChangeType;
using test::configmap;
namespace json = boost::json;

namespace {

using Change = runtime::Change<api::ConfigMap>;

using test::configmaps;

using test::quick;

/// A typed informer with two handlers, each writing down every Change it gets.
struct Watched {
    explicit Watched(test::MemoryLoop& l, runtime::InformerOptions o = quick())
        : loop(l), informer(std::make_shared<runtime::Informer<api::ConfigMap>>(l.server, std::move(o))) {
        informer->add_handler([this](const Change& c) { first.push_back(c); });
        informer->add_handler([this](const Change& c) { second.push_back(c); });
    }
    void start() {
        task = loop.spawn(informer->run());
        REQUIRE(loop.until([&] { return informer->has_synced(); }));
    }
    ~Watched() {
        informer->stop();
        loop.until([&] { return *task.done; });
    }

    test::MemoryLoop& loop;
    std::shared_ptr<runtime::Informer<api::ConfigMap>> informer;
    std::vector<Change> first, second;
    test::MemoryLoop::Task task;
};

std::string value_of(const std::shared_ptr<const api::ConfigMap>& cm) {
    REQUIRE(cm);
    auto it = cm->data.find("v");
    return it == cm->data.end() ? "" : it->second;
}

/// Each handler got the same Changes, pointer for pointer.
void same_for_both(const Watched& w) {
    REQUIRE(w.first.size() == w.second.size());
    for (std::size_t i = 0; i < w.first.size(); ++i) {
        CHECK(w.first[i].type == w.second[i].type);
        CHECK(w.first[i].object == w.second[i].object);
        CHECK(w.first[i].old == w.second[i].old);
    }
}

} // namespace

TEST_CASE("an informer hands every handler one Change per server change, with the replaced state for a modification and the last known state for a deletion") {
    test::MemoryLoop loop;
    loop.server->put(configmaps, configmap("c", "a", {{"v", "1"}}));
    Watched w(loop);
    w.start();
    REQUIRE(w.first.size() == 1);
    CHECK(w.first[0].type == ChangeType::Added);
    CHECK(value_of(w.first[0].object) == "1");
    CHECK(w.first[0].old == nullptr);
    auto listed = w.informer->store().get({"c", "a"});
    CHECK(w.first[0].object == listed);  // the cached snapshot itself

    loop.server->put(configmaps, configmap("c", "a", {{"v", "2"}}));
    REQUIRE(loop.until([&] { return w.first.size() == 2; }));
    const auto& modified = w.first[1];
    CHECK(modified.type == ChangeType::Modified);
    CHECK(value_of(modified.object) == "2");
    CHECK(modified.old == listed);  // the state it replaced
    CHECK_FALSE(modified.is_resync());

    loop.server->remove(configmaps, "c", "a");
    REQUIRE(loop.until([&] { return w.first.size() == 3; }));
    const auto& deleted = w.first[2];
    CHECK(deleted.type == ChangeType::Deleted);
    CHECK(value_of(deleted.object) == "2");  // the last state known
    CHECK(deleted.old == nullptr);
    CHECK(w.informer->store().size() == 0);
    loop.settle();
    CHECK(w.first.size() == 3);  // one Change per server change, no more
    CHECK(w.informer->changes() == 3);
    same_for_both(w);
}

TEST_CASE("an object that vanished while the informer was away is a Deleted carrying its cached state") {
    test::MemoryLoop loop;
    loop.server->put(configmaps, configmap("v", "goes", {{"v", "cached"}}));
    Watched w(loop);
    w.start();
    auto cached = w.informer->store().get({"v", "goes"});
    REQUIRE(cached);

    // Changed and deleted while no watch is open, then the history is compacted: a relist.
    loop.server->drop_watches();
    loop.server->put(configmaps, configmap("v", "goes", {{"v", "unseen"}}));
    loop.server->remove(configmaps, "v", "goes");
    loop.server->compact();
    REQUIRE(loop.until([&] { return w.first.size() == 2; }));
    CHECK(w.informer->reflector().relists() == 1);
    CHECK(w.first[1].type == ChangeType::Deleted);
    CHECK(w.first[1].object == cached);  // the last state this informer knew
    CHECK(w.first[1].old == nullptr);
    same_for_both(w);
}

TEST_CASE("a resync is a Modified whose old and object are the same") {
    test::MemoryLoop loop;
    loop.server->put(configmaps, configmap("r", "a", {{"v", "1"}}));
    loop.server->put(configmaps, configmap("r", "b", {{"v", "1"}}));
    auto o = quick();
    o.resync = std::chrono::milliseconds(5);
    Watched w(loop, o);
    w.start();
    REQUIRE(loop.until([&] { return w.first.size() >= 4; }));  // 2 adds, then a resync's 2
    for (std::size_t i = 2; i < 4; ++i) {
        const auto& c = w.first[i];
        CHECK(c.type == ChangeType::Modified);
        CHECK(c.old == c.object);
        CHECK(c.is_resync());
        CHECK(c.object == w.informer->store().get(runtime::key_of(*c.object)));
    }
    CHECK(w.informer->changes() == 2);  // resyncs are not server changes
    same_for_both(w);
}

TEST_CASE("a handler added late gets an Added for each cached object, and an empty handler is refused") {
    test::MemoryLoop loop;
    loop.server->put(configmaps, configmap("l", "a"));
    Watched w(loop);
    w.start();
    std::vector<Change> late;
    w.informer->add_handler([&](const Change& c) { late.push_back(c); });
    REQUIRE(late.size() == 1);
    CHECK(late[0].type == ChangeType::Added);
    CHECK(late[0].object == w.informer->store().get({"l", "a"}));
    CHECK(late[0].old == nullptr);
    CHECK_THROWS_AS(w.informer->add_handler(runtime::ChangeHandler<api::ConfigMap>{}), std::invalid_argument);
    CHECK_THROWS_AS(w.informer->add_decode_error_handler({}), std::invalid_argument);
}
