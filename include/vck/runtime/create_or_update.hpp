// create_or_update: controller-runtime's controllerutil.CreateOrUpdate for typed objects.
// Reads the object named by `obj` (namespace and name) from the API server; when it does not
// exist, applies `mutate` to `obj` and creates it; otherwise applies `mutate` to what was read
// and replaces it only if that changed anything (compared as JSON, so a reconciler that
// rewrites the same desired state every time sends no write). Guarantees: returns what was
// done (Created, Updated, Unchanged) and leaves `obj` holding the server's answer (or what was
// read, when unchanged); the replace carries the resourceVersion read, so a concurrent change
// fails with Conflict rather than being overwritten; a `mutate` that changes the name or
// namespace is refused with std::invalid_argument before any write; an error of the read
// other than NotFound, and any error of the write, propagates as the client raised it.
// The client is a template parameter (client::Client, or a test's fake) with
// get<T>(ns, name), create(obj) and replace(obj) awaitables; this header needs no socket.
#pragma once

#include <vck/api/json.hpp>
#include <vck/api/resource.hpp>
#include <vck/client/error.hpp>

#include <boost/asio/awaitable.hpp>

#include <stdexcept>
#include <string>
#include <string_view>

namespace vck::runtime {

enum class OperationResult { Unchanged, Created, Updated };

constexpr std::string_view to_string(OperationResult r) {
    switch (r) {
    case OperationResult::Unchanged: return "unchanged";
    case OperationResult::Created: return "created";
    case OperationResult::Updated: return "updated";
    }
    return "?";
}

namespace detail {

template <class T>
void check_key_kept(const T& obj, const std::string& ns, const std::string& name) {
    if (obj.metadata.namespace_ != ns || obj.metadata.name != name)
        throw std::invalid_argument("create_or_update: the mutate function changed " + std::string(T::resource.kind) +
                                    " " + ns + "/" + name + "'s name or namespace (to " + obj.metadata.namespace_ +
                                    "/" + obj.metadata.name + ")");
}

} // namespace detail

template <class Client, api::ApiObject T, class Mutate>
boost::asio::awaitable<OperationResult> create_or_update(Client& c, T& obj, Mutate mutate) {
    const std::string ns = obj.metadata.namespace_;
    const std::string name = obj.metadata.name;
    bool found = true;
    try {
        obj = co_await c.template get<T>(ns, name);
    } catch (const client::ApiError& e) {
        if (!e.is(client::ErrorKind::NotFound)) throw;
        found = false;  // obj is as the caller gave it
    }
    if (!found) {
        mutate(obj);
        detail::check_key_kept(obj, ns, name);
        obj = co_await c.create(obj);
        co_return OperationResult::Created;
    }
    const auto before = api::to_json(obj);
    mutate(obj);
    detail::check_key_kept(obj, ns, name);
    if (api::to_json(obj) == before) co_return OperationResult::Unchanged;
    obj = co_await c.replace(obj);
    co_return OperationResult::Updated;
}

} // namespace vck::runtime
