// SimLoop: the thread that drives one simulated cluster component (scheduler, kubelet, PV
// binder). It runs the component's pass whenever the store reports a change the component
// cares about, when the pass's own deadline arrives, or at the latest every `resync`.
// Guarantees: passes never overlap; a change during a pass causes one more pass; the store's
// listener only flags and notifies (so it never waits on a pass); stop() joins the thread.
// The listener holds only a shared flag block, never the SimLoop, so it stays valid whatever
// order the store and this object go away in.
#pragma once

#include <vck/sandbox/storage/object_store.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace vck::sandbox {

class SimLoop {
public:
    using Clock = std::chrono::steady_clock;
    /// Runs once; returns when it wants to run again regardless of changes (nullopt: only on change).
    using Pass = std::function<std::optional<Clock::time_point>()>;
    using Filter = std::function<bool(const StoreChange&)>;

    SimLoop(ObjectStore& store, std::string name, Filter interesting, Pass pass,
            std::chrono::milliseconds resync = std::chrono::seconds(1))
        : store_(store), name_(std::move(name)), pass_(std::move(pass)), resync_(resync),
          flags_(std::make_shared<Flags>()) {
        flags_->interesting = std::move(interesting);
    }
    ~SimLoop() { stop(); }
    SimLoop(const SimLoop&) = delete;
    SimLoop& operator=(const SimLoop&) = delete;

    void start() {
        if (thread_.joinable()) return;
        {
            std::lock_guard lock(flags_->mu);
            flags_->stopping = false;
            flags_->dirty = true;
        }
        listener_ = store_.on_change([flags = flags_](const StoreChange& c) {
            if (!flags->interesting || flags->interesting(c)) flags->wake();
        });
        thread_ = std::thread([this] { run(); });
    }

    void stop() {
        if (!thread_.joinable()) return;
        store_.remove_listener(listener_);
        {
            std::lock_guard lock(flags_->mu);
            flags_->stopping = true;
        }
        flags_->cv.notify_all();
        thread_.join();
    }

    /// Asks for another pass soon (callable from any thread).
    void wake() { flags_->wake(); }

private:
    struct Flags {
        std::mutex mu;
        std::condition_variable cv;
        bool dirty = false;
        bool stopping = false;
        Filter interesting;

        void wake() {
            {
                std::lock_guard lock(mu);
                dirty = true;
            }
            cv.notify_all();
        }
    };

    void run() {
        std::optional<Clock::time_point> next;
        for (;;) {
            {
                auto& f = *flags_;
                std::unique_lock lock(f.mu);
                auto until = Clock::now() + resync_;
                if (next && *next < until) until = *next;
                f.cv.wait_until(lock, until, [&] { return f.dirty || f.stopping; });
                if (f.stopping) return;
                f.dirty = false;
            }
            try {
                next = pass_();
            } catch (const std::exception& e) {
                // A pass that throws is retried shortly: the components are level-triggered.
                std::fprintf(stderr, "vck-sandbox %s: %s\n", name_.c_str(), e.what());
                next = Clock::now() + std::chrono::milliseconds(100);
            }
        }
    }

    ObjectStore& store_;
    std::string name_;
    Pass pass_;
    std::chrono::milliseconds resync_;
    std::shared_ptr<Flags> flags_;
    std::size_t listener_ = 0;
    std::thread thread_;
};

} // namespace vck::sandbox
