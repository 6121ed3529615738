// eventually: waits for a condition in a test without timing anything. Polls `cond` until it
// holds or `limit` passes (a generous bound: a hung component, not a slow shared machine),
// then asks cond() once more, so a failing check always reports the final state.
#pragma once

#include <chrono>
#include <thread>

namespace vck::sandbox {

template <class F>
bool eventually(F cond, std::chrono::seconds limit = std::chrono::seconds(60),
                std::chrono::milliseconds poll = std::chrono::milliseconds(10)) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
        if (cond()) return true;
        std::this_thread::sleep_for(poll);
    }
    return cond();
}

} // namespace vck::sandbox
