// VolumeManagerEvents: the events VolumeManagerReconciler records on a VolumeManager, so that
// `kubectl describe` tells a person what happened (Deployed, Failed, a refusal of this
// controller's rights, a lost copy) without the controller's log. Without a recorder it
// records nothing.
#pragma once

#include <vck/api/volume_manager.hpp>
#include <vck/client/error.hpp>
#include <vck/runtime/event_recorder.hpp>
#include <vck/volumes/volume_status.hpp>

#include <boost/asio/awaitable.hpp>

#include <exception>
#include <memory>
#include <string>
#include <type_traits>

namespace vck::volumes {

class VolumeManagerEvents {
public:
    explicit VolumeManagerEvents(std::shared_ptr<runtime::EventRecorder> recorder) : recorder_(std::move(recorder)) {}

    /// The event of a state reached: Normal Deployed, or Warning Failed with every failure.
    boost::asio::awaitable<void> announce(const api::VolumeManager& vm, const StatusDecision& d) {
        if (d.state == api::VolumeManagerState::Running) co_await note(vm, "Normal", "Deployed", d.status.message);
        if (d.state == api::VolumeManagerState::Failed) {
            std::string msg = d.status.message;
            for (const auto& f : d.failures) msg += "; " + f;
            co_await note(vm, "Warning", "Failed", msg);
        }
    }

    /// Awaits `op`; an API refusal of this controller's own rights (RBAC) is also shown on the
    /// object it stops (`kubectl describe`), not only in the controller's log; then rethrown
    /// (retried with backoff).
    template <class T>
    boost::asio::awaitable<T> forbidden_shown(const api::VolumeManager* vm, boost::asio::awaitable<T> op) {
        std::exception_ptr failure;
        std::string forbidden;
        if constexpr (std::is_void_v<T>) {
            try {
                co_await std::move(op);
                co_return;
            } catch (const client::ApiError& e) {
                if (e.is(client::ErrorKind::Forbidden)) forbidden = e.what();
                failure = std::current_exception();
            }
        } else {
            try {
                co_return co_await std::move(op);
            } catch (const client::ApiError& e) {
                if (e.is(client::ErrorKind::Forbidden)) forbidden = e.what();
                failure = std::current_exception();
            }
        }
        if (!forbidden.empty() && vm) co_await warn(*vm, "Forbidden", forbidden);
        std::rethrow_exception(failure);
    }

    boost::asio::awaitable<void> warn(const api::VolumeManager& vm, std::string reason, std::string message) {
        co_await note(vm, "Warning", std::move(reason), std::move(message));
    }

    boost::asio::awaitable<void> note(const api::VolumeManager& vm, std::string type, std::string reason, std::string message) {
        if (!recorder_) co_return;
        auto ref = runtime::EventRecorder::reference_to(vm, api::VolumeManager::resource);
        co_await recorder_->record(std::move(ref), std::move(type), std::move(reason), std::move(message));
    }

    const std::shared_ptr<runtime::EventRecorder>& recorder() const { return recorder_; }

private:
    std::shared_ptr<runtime::EventRecorder> recorder_;
};

} // namespace vck::volumes
