// StatusWriter: how VolumeManagerReconciler writes a VolumeManager's status, which also holds
// the record of its copies (status.copies, volumes/copy_planner.hpp).
// Guarantees:
// - A status is written only when it differs from the cached one (with observedGeneration
//   and the Ready condition, volumes/volume_status.hpp), as one merge patch of the status
//   subresource; a VolumeManager gone meanwhile is no error.
// - A record write carries the view's resourceVersion as precondition: it is refused when the
//   object changed meanwhile (the view was stale), and after it the reconciler acts on no
//   cached view as old as the one it wrote from (VolumeManagerMemory::stale_view).
// - Fields emptied (no copies left, no progress) are written as null, so a merge patch does
//   not keep the last ones.
// - Each write is recorded in OwnWrites (runtime/own_writes.hpp), so its watch event costs
//   no reconcile, unless `wants_event` says a later pass needs it (pods waiting for the state
//   it announces are ungated by the pass its event brings).
#pragma once

#include <vck/api/json.hpp>
#include <vck/api/time.hpp>
#include <vck/api/volume_manager.hpp>
#include <vck/client/client.hpp>
#include <vck/client/ignore_not_found.hpp>
#include <vck/runtime/own_writes.hpp>
#include <vck/volumes/volume_manager_memory.hpp>
#include <vck/volumes/volume_status.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/json.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace vck::volumes {

class StatusWriter {
public:
    using WantsEvent = std::function<bool(const api::VolumeManager&)>;

    StatusWriter(client::Client& c, VolumeManagerMemory& memory, runtime::OwnWrites& own, WantsEvent wants_event = {})
        : client_(c), memory_(memory), own_(own), wants_event_(std::move(wants_event)) {}

    /// Writes `st` (plus observedGeneration and the Ready condition) when it differs from the
    /// current status. Returns whether it wrote. With `precondition`, the write carries the
    /// view's resourceVersion (a record write) and false means the view was stale.
    boost::asio::awaitable<bool> write_status(const api::VolumeManager& vm, api::VolumeManagerStatus st, bool ready,
                                              const std::string& reason, bool precondition = false) {
        st = with_ready_condition(std::move(st), ready, reason, vm, api::format_rfc3339(std::chrono::system_clock::now()));
        if (precondition) co_return co_await write_record(vm, std::move(st));
        if (vm.status) {
            api::VolumeManagerStatus old = *vm.status;
            old.unknown.clear();
            if (api::to_json(old) == api::to_json(st)) co_return false;
        }
        boost::json::value patch{{"status", status_patch(st)}};
        auto po = client::PatchOptions().on("status");
        boost::json::value written;
        try {
            written = co_await client_.patch(api::VolumeManager::resource, vm.metadata.namespace_, vm.metadata.name,
                                             client::PatchType::Merge, std::move(patch), po);
        } catch (const client::ApiError& e) {
            // Gone while this reconcile ran (its finalizer already off): nobody is left to read
            // the status, and its deletion event ends the story.
            if (!e.is(client::ErrorKind::NotFound)) throw;
            co_return false;
        }
        wrote(vm, written);
        co_return true;
    }

    /// Writes `st` (the record in it) with the view's resourceVersion as precondition.
    /// False when the object changed meanwhile (the view was stale) or is gone.
    boost::asio::awaitable<bool> write_record(const api::VolumeManager& vm, api::VolumeManagerStatus st) {
        boost::json::value patch{{"metadata", {{"resourceVersion", vm.metadata.resourceVersion}}},
                                 {"status", status_patch(st)}};
        auto po = client::PatchOptions().on("status");
        boost::json::value written;
        try {
            written = co_await client_.patch(api::VolumeManager::resource, vm.metadata.namespace_, vm.metadata.name,
                                             client::PatchType::Merge, std::move(patch), po);
        } catch (const client::ApiError& e) {
            if (e.is(client::ErrorKind::Conflict) || e.is(client::ErrorKind::NotFound)) co_return false;
            throw;
        }
        wrote(vm, written);
        memory_.wrote_record_from(vm);
        co_return true;
    }

    /// Whether `copies` differ from the record `vm` holds.
    static bool record_changed(const api::VolumeManager& vm, const std::vector<api::CopyRecord>& copies) {
        static const std::vector<api::CopyRecord> none;
        const auto& old = vm.status ? vm.status->copies : none;
        if (old.size() != copies.size()) return true;
        for (std::size_t i = 0; i < old.size(); ++i) {
            api::CopyRecord a = old[i];
            a.unknown.clear();
            if (api::to_json(a) != api::to_json(copies[i])) return true;
        }
        return false;
    }

    std::uint64_t writes() const { return writes_; }

private:
    void wrote(const api::VolumeManager& vm, const boost::json::value& written) {
        ++writes_;
        if (wants_event_ && wants_event_(vm)) return;
        own_.record(api::VolumeManager::resource.plural, vm.metadata.namespace_, vm.metadata.name,
                    api::string_at(written, {"metadata", "resourceVersion"}));
    }

    /// `st` as a merge patch: an empty record is written as null (to_json leaves empty fields
    /// out, and a merge patch leaves out what it does not name: the last entries would stay).
    static boost::json::value status_patch(const api::VolumeManagerStatus& st) {
        auto v = api::to_json(st);
        if (v.is_object() && !v.as_object().contains("copies")) v.as_object()["copies"] = nullptr;
        if (v.is_object() && !v.as_object().contains("progress")) v.as_object()["progress"] = nullptr;
        if (v.is_object() && !v.as_object().contains("refreshes")) v.as_object()["refreshes"] = nullptr;
        return v;
    }

    client::Client& client_;
    VolumeManagerMemory& memory_;
    runtime::OwnWrites& own_;
    WantsEvent wants_event_;
    std::atomic<std::uint64_t> writes_{0};
};

} // namespace vck::volumes
