// Test support: wait for a condition without timing anything. Polls `cond` until it holds or
// `limit` passes (a generous bound for a shared, noisy machine), then returns cond() once more,
// so a failure always reports the final state.
#pragma once

#include <chrono>
#include <thread>

namespace vck::test {

template <class F>
bool eventually(F cond, std::chrono::seconds limit = std::chrono::seconds(60),
                std::chrono::milliseconds poll = std::chrono::milliseconds(20)) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
        if (cond()) return true;
        std::this_thread::sleep_for(poll);
    }
    return cond();
}

} // namespace vck::test
