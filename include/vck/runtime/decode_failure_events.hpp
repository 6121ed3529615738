// DecodeFailed events: an informer's decode-error handler that, for each object its informer skips because
// the object cannot be decoded (informer.hpp), records a Warning Event "DecodeFailed" on it
// with the decode error and its field path, and logs a line naming it, so that whoever owns
// the object sees in `kubectl describe` why it is ignored. Best effort, as every event:
// recording runs detached on the given executor and never throws.
#pragma once

#include <vck/api/resource.hpp>
#include <vck/runtime/event_recorder.hpp>
#include <vck/runtime/informer.hpp>
#include <vck/runtime/log.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include <memory>
#include <string>

namespace vck::runtime {

/// The reason of the Event recorded on an object that cannot be decoded.
inline constexpr std::string_view decode_failed_reason = "DecodeFailed";

/// A decode-error handler for an informer of `rt`'s objects (add_decode_error_handler() it):
/// it records the event through `events` on `ex`, referring to the object by namespace, name
/// and uid.
inline DecodeErrorHandler decode_failure_events(std::shared_ptr<EventRecorder> events, asio::any_io_executor ex,
                                                api::ResourceType rt) {
    if (!events) throw std::invalid_argument("decode_failure_events: no event recorder");
    return [events = std::move(events), ex = std::move(ex), rt](const client::UndecodableObject& e) {
        api::ObjectReference about;
        about.apiVersion = rt.api_version();
        about.kind = std::string(rt.kind);
        about.namespace_ = e.namespace_();
        about.name = e.name();
        about.uid = e.uid();
        about.resourceVersion = e.resource_version();
        log::warning("ignoring an object that cannot be decoded until it is fixed",
                     {{"kind", about.kind}, {"namespace", about.namespace_}, {"name", about.name}, {"error", e.what()}});
        if (about.name.empty()) return;  // nothing an Event could point at
        std::string message = std::string("cannot be decoded, so it is ignored until it is fixed: ") + e.what();
        asio::co_spawn(
            ex,
            [events, about = std::move(about), message = std::move(message)]() mutable -> asio::awaitable<void> {
                co_await events->record(std::move(about), "Warning", std::string(decode_failed_reason), std::move(message));
            },
            asio::detached);
    };
}

template <api::ApiObject T>
DecodeErrorHandler decode_failure_events(std::shared_ptr<EventRecorder> events, asio::any_io_executor ex) {
    return decode_failure_events(std::move(events), std::move(ex), T::resource);
}

} // namespace vck::runtime
