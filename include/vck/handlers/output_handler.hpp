// OutputHandler: a CopyingHandler whose copies are a job's output rather than a dataset. Its
// "download" prepares an empty directory per replica; before a copy's directory is removed
// (spec.state Completed, the VolumeManager deleted, the volume out of the spec) the reconciler
// runs upload_pod() on the copy's node, and removes the directory only once that pod has
// succeeded (volumes/copy_planner.hpp, phase Uploading).
// Contract: upload_pod(ctx, vm, vc, t) is pinned to t.node, reads t.path, writes nothing there,
// and leaves a `vck-fetch sync-back` one-line summary as its termination message
// (volumes/output_upload.hpp reads it back).
#pragma once

#include <vck/api/core_v1.hpp>
#include <vck/api/volume_manager.hpp>
#include <vck/handlers/data_handler.hpp>

#include <concepts>

namespace vck::handlers {

template <class H>
concept OutputHandler = CopyingHandler<H> && requires(const H& h, const HandlerContext& ctx, const api::VolumeManager& vm,
                                                      const api::VolumeConfig& vc, const CopyTarget& t) {
    { h.upload_pod(ctx, vm, vc, t) } -> std::same_as<api::Pod>;
};

} // namespace vck::handlers
