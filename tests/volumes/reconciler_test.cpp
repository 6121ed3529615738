// Specification of the VolumeManager controller (include/vck/controller), run in a real
// Manager against the sandbox's API server. The test plays the rest of the cluster by hand:
// it binds pods to nodes, moves their phases and binds claims, so each step of the
// reconciler is observed on its own, with no timing involved.
#include "harness.hpp"

#include <vck/runtime/client_list_watch.hpp>
#include <vck/runtime/event_recorder.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

using namespace vck;
using namespace vck::test;


TEST_CASE("an NFS VolumeManager gets a finalizer, a pre-bound PV and PVC, and Running once the claim binds") {
    auto ns = fresh_namespace();
    Controller c;
    create_vm(ns, "nfs", json::array{nfs_volume()});
    REQUIRE(eventually([&] { return items(pvcs, ns).size() == 1; }));
    auto vm = get_vm(ns, "nfs");
    CHECK(vm.at("metadata").at("finalizers").as_array().size() == 1);
    CHECK(vm.at("metadata").at("finalizers").at(0) == "vck.intelai.org/cleanup");
    auto claim = items(pvcs, ns).at(0);
    std::string pv_name(api::string_at(claim, {"spec", "volumeName"}));
    auto pv = store().get(pvs, "", pv_name);
    CHECK(api::string_at(pv, {"spec", "nfs", "server"}) == "10.0.0.1");
    CHECK(api::string_at(pv, {"spec", "claimRef", "name"}) == api::string_at(claim, {"metadata", "name"}));
    CHECK(api::string_at(pv, {"metadata", "annotations", "vck.intelai.org/owner"}) == ns + "/nfs");

    bind_claims(ns);
    REQUIRE_MESSAGE(eventually([&] { return state_of(ns, "nfs") == "Running"; }), dump(ns, "nfs"));
    vm = get_vm(ns, "nfs");
    CHECK(api::string_at(vm, {"status", "message"}) == "successfully deployed all sub-resources");
    CHECK(api::string_at(vm, {"status", "readyVolumes"}) == "1/1");
    auto& v0 = vm.at("status").at("volumes").at(0);
    CHECK(v0.at("message") == "success");
    CHECK(api::string_at(v0, {"volumeSource", "persistentVolumeClaim", "claimName"}) == api::string_at(claim, {"metadata", "name"}));
    auto& cond = vm.at("status").at("conditions").at(0);
    CHECK(cond.at("type") == "Ready");
    CHECK(cond.at("status") == "True");
    CHECK(vm.at("status").at("observedGeneration") == vm.at("metadata").at("generation"));
}

TEST_CASE("the reconciler's specification runs in process: a VolumeManager's whole life without a socket or a TLS handshake") {
    // The harness's Controller reaches the sandbox through its in-process transport
    // (sandbox/server/in_process_transport.hpp): the same admission, validation, storage and
    // watches as over HTTPS, without the wire. Tests about the wire (client_test, rbac) keep it.
    auto handshakes = server().tls_handshakes();
    auto in_process = server().in_process_requests();
    auto ns = fresh_namespace();
    create_secret(ns);
    {
        Controller c;
        create_vm(ns, "life", json::array{nfs_volume("nfs"), s3_volume("s3", 2)});
        REQUIRE(eventually([&] { return items(pvcs, ns).size() == 1 && count_pods(ns) == 2; }));
        bind_claims(ns);
        run_pods(ns, "Succeeded");
        REQUIRE_MESSAGE(eventually([&] { return state_of(ns, "life") == "Running"; }), dump(ns, "life"));
        store().remove(vms, ns, "life");
        REQUIRE(eventually([&] { return only_cleanup_pods(ns, 2); }));
        run_pods(ns, "Succeeded");
        REQUIRE_MESSAGE(eventually([&] { return get_vm(ns, "life").is_null(); }), dump(ns, "life"));
    }
    CHECK(server().tls_handshakes() == handshakes);
    CHECK(server().in_process_requests() > in_process + 10);  // lists, watches, creates, status writes, deletes
}

TEST_CASE("an NFS VolumeManager costs at most four writes, and no GET once the caches are synced") {
    auto ns = fresh_namespace();
    Controller c;
    REQUIRE(eventually([&] { return c.manager->synced(); }));
    // Every request the controller makes from here on, by verb and resource, as the API
    // server's audit log would show it (watches re-open now and then; they are not reads).
    std::mutex mu;
    std::map<std::string, int> calls;  // "verb resource"
    server().set_audit([&](const sandbox::AuditRecord& r) {
        std::lock_guard lock(mu);
        ++calls[r.verb + " " + r.resource];
    });
    auto count = [&](auto pred) {
        std::lock_guard lock(mu);
        int n = 0;
        for (const auto& [k, v] : calls)
            if (pred(k)) n += v;
        return n;
    };
    auto summary = [&] {
        std::lock_guard lock(mu);
        std::string out;
        for (const auto& [k, v] : calls) out += k + "=" + std::to_string(v) + " ";
        return out;
    };
    create_vm(ns, "nfs", json::array{nfs_volume()});  // in-process: not audited
    REQUIRE(eventually([&] { return items(pvcs, ns).size() == 1; }));
    bind_claims(ns);
    REQUIRE_MESSAGE(eventually([&] { return state_of(ns, "nfs") == "Running"; }), dump(ns, "nfs"));
    std::this_thread::sleep_for(std::chrono::seconds(3));  // past the Pending grace: any late write shows
    server().set_audit({});

    auto is_write = [](const std::string& k) {
        return k.starts_with("create ") || k.starts_with("update ") || k.starts_with("patch ") ||
               k.starts_with("delete ");
    };
    // The finalizer, the PV, the PVC and one status write (never a Pending one in between).
    CHECK_MESSAGE(count([&](const std::string& k) { return is_write(k) && !k.ends_with(" events"); }) <= 4, summary());
    CHECK_MESSAGE(count([&](const std::string& k) { return k == "patch volumemanagers/status"; }) == 1, summary());
    // And the one Normal "Deployed" event.
    CHECK_MESSAGE(count([&](const std::string& k) { return is_write(k) && k.ends_with(" events"); }) <= 1, summary());
    CHECK(c.parts.reconciler->status_writes() == 1);
    CHECK_MESSAGE(count([](const std::string& k) { return k.starts_with("get ") || k.starts_with("list "); }) == 0,
                  summary());
}

TEST_CASE("S3 volumes: one download pod per replica with argv and secretKeyRef, node labels, hostPath status") {
    auto ns = fresh_namespace();
    create_secret(ns);
    Controller c;
    create_vm(ns, "s3", json::array{s3_volume("vol1", 2)});
    REQUIRE(eventually([&] { return count_pods(ns) == 2; }));
    for (const auto& p : items(pods, ns)) {
        const auto& ctr = p.at("spec").at("containers").at(0);
        CHECK(ctr.at("command").at(0) == "vck-fetch");
        CHECK(ctr.at("args").at(0) == "fetch");
        CHECK(ctr.at("args").at(1) == "s3://data/set/");
        CHECK(ctr.at("image") == "vck-fetch:test");
        bool secret_ref = false;
        for (const auto& e : ctr.at("env").as_array())
            if (e.at("name") == "AWS_ACCESS_KEY_ID")
                secret_ref = api::string_at(e, {"valueFrom", "secretKeyRef", "name"}) == "s3-creds";
        CHECK(secret_ref);
        // Pinned to the node the controller chose (and recorded) for it.
        CHECK(p.at("spec").at("affinity").at("nodeAffinity").at("requiredDuringSchedulingIgnoredDuringExecution")
                  .at("nodeSelectorTerms").at(0).at("matchFields").at(0).at("key") == "metadata.name");
    }
    {
        auto copies = get_vm(ns, "s3").at("status").at("copies").as_array();
        REQUIRE(copies.size() == 2);
        CHECK(copies.at(0).at("node") != copies.at(1).at("node"));
        CHECK(copies.at(0).at("phase") == "Downloading");
    }
    // Pending shows once the controller looks again after creating the pods.
    CHECK_MESSAGE(eventually([&] { return state_of(ns, "s3") == "Pending"; }), dump(ns, "s3"));
    run_pods(ns, "Running");
    run_pods(ns, "Succeeded");
    REQUIRE_MESSAGE(eventually([&] { return state_of(ns, "s3") == "Running"; }), dump(ns, "s3"));
    auto vm = get_vm(ns, "s3");
    auto& v0 = vm.at("status").at("volumes").at(0);
    std::string host_path(api::string_at(v0, {"volumeSource", "hostPath", "path"}));
    CHECK(host_path.starts_with("/var/datasets/vck-resource-"));
    std::string key = affinity_label_key(v0);
    CHECK(key.size() <= 63 + 16);
    // The label's value is the config the status names: the nodes it selects hold that data.
    auto digest = affinity_expression(v0).at("values").at(0).as_string();
    CHECK(host_path.ends_with(std::string("-") + digest.c_str()));
    int labelled = 0;
    for (int i = 1; i <= 3; ++i) {
        auto n = store().get(nodes, "", "node-" + std::to_string(i));
        if (api::string_at(n, {"metadata", "labels", key}) == digest) ++labelled;
    }
    CHECK(labelled == 2);
    for (const auto& e : vm.at("status").at("copies").as_array()) {
        CHECK(e.at("phase") == "Ready");
        CHECK(e.at("path").as_string() == host_path);
    }
}

namespace progress_spec {

/// The download pod's `fetch` container as the kubelet reports it (running, or exited 0 with
/// `summary` as its termination message).
json::value fetch_status(const std::string& phase, const std::string& summary = {}) {
    json::object state;
    if (summary.empty()) state["running"] = json::object{{"startedAt", "2026-01-01T00:00:00Z"}};
    else state["terminated"] = json::object{{"exitCode", 0}, {"reason", "Completed"}, {"message", summary}};
    json::object cs{{"name", "fetch"}, {"ready", summary.empty()}, {"restartCount", 0}, {"image", "vck-fetch:test"},
                    {"imageID", ""}, {"state", state}};
    return json::value{{"status", {{"phase", phase}, {"containerStatuses", json::array{cs}}}}};
}

std::string progress_line(int files, int bytes) {
    return "vck-fetch: fetched " + std::to_string(files) + "/10 files, 0.0/0.0 MiB, 0.0 MiB/s, 0 errors {\"filesDone\":" +
           std::to_string(files) + ",\"filesTotal\":10,\"bytesDone\":" + std::to_string(bytes) + ",\"bytesTotal\":1000}\n";
}

/// An S3 VolumeManager "s3" in `ns` and its download pod, once the controller made it: its name.
std::string started_download(const std::string& ns) {
    create_vm(ns, "s3", json::array{s3_volume()});
    REQUIRE(eventually([&] { return count_pods(ns) == 1; }));
    return std::string(api::string_at(items(pods, ns).at(0), {"metadata", "name"}));
}

} // namespace progress_spec

TEST_CASE("a running download's progress is read from its log tail at most once per interval, written only when it moved, exact at the end") {
    auto ns = fresh_namespace();
    create_secret(ns);
    volumes::ControllerOptions co;
    co.reconciler.progress_interval = std::chrono::milliseconds(300);
    Controller c(co);
    auto pod = progress_spec::started_download(ns);
    run_pods(ns, "Running");
    store().patch(pods, ns, pod, client::PatchType::Merge, progress_spec::fetch_status("Running"), "status");
    server().pod_logs().append(ns, pod, "fetch", "vck-fetch: listing s3://data/set/\n" + progress_spec::progress_line(3, 370));
    REQUIRE_MESSAGE(eventually([&] { return api::string_at(get_vm(ns, "s3"), {"status", "progress"}) == "37%"; }), dump(ns, "s3"));
    auto vm = get_vm(ns, "s3");
    const auto& copy = vm.at("status").at("copies").at(0);
    CHECK(copy.at("phase") == "Downloading");
    CHECK(copy.at("filesDone") == 3);
    CHECK(copy.at("bytesDone") == 370);
    CHECK(copy.at("bytesTotal") == 1000);
    CHECK(vm.at("status").at("volumes").at(0).at("bytesDone") == 370);
    CHECK(vm.at("status").at("state") == "Pending");

    // Progress that does not move costs log reads at the interval's pace, and no write.
    std::mutex mu;
    int log_reads = 0, status_writes = 0;
    server().set_audit([&](const sandbox::AuditRecord& r) {
        std::lock_guard lock(mu);
        if (r.verb == "get" && r.resource == "pods/log") ++log_reads;
        if (r.verb == "patch" && r.resource == "volumemanagers/status") ++status_writes;
    });
    // Counted from the first read on: a pass already under way when the audit began (the one
    // that wrote 37%, woken again by its own write) is not this pace's.
    REQUIRE(eventually([&] {
        std::lock_guard lock(mu);
        return log_reads >= 1;
    }));
    {
        std::lock_guard lock(mu);
        log_reads = status_writes = 0;
    }
    auto started = std::chrono::steady_clock::now();
    REQUIRE(eventually([&] {
        std::lock_guard lock(mu);
        return log_reads >= 3;
    }));
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
    {
        auto elapsed = std::chrono::steady_clock::now() - started;
        std::lock_guard lock(mu);
        // At most one read per 300 ms (and one at the start of the window).
        CHECK(log_reads <= 1 + elapsed / std::chrono::milliseconds(300));
        CHECK(status_writes == 0);
    }
    server().pod_logs().append(ns, pod, "fetch", progress_spec::progress_line(9, 900));
    REQUIRE_MESSAGE(eventually([&] { return api::string_at(get_vm(ns, "s3"), {"status", "progress"}) == "90%"; }), dump(ns, "s3"));
    server().set_audit({});

    // Finished: the summary's exact totals (files unchanged since an earlier attempt included).
    store().patch(pods, ns, pod, client::PatchType::Merge,
                  progress_spec::fetch_status("Succeeded", R"({"command":"fetch","files":8,"skipped":2,"bytes":900,)"
                                                           R"("skippedBytes":124,"seconds":2,"errors":0,"exitCode":0})"),
                  "status");
    REQUIRE_MESSAGE(eventually([&] { return state_of(ns, "s3") == "Running"; }), dump(ns, "s3"));
    vm = get_vm(ns, "s3");
    CHECK(api::string_at(vm, {"status", "progress"}) == "100%");
    const auto& done = vm.at("status").at("copies").at(0);
    CHECK(done.at("phase") == "Ready");
    CHECK(done.at("filesDone") == 10);
    CHECK(done.at("filesTotal") == 10);
    CHECK(done.at("bytesDone") == 1024);
    CHECK(done.at("bytesTotal") == 1024);
    CHECK(vm.at("status").at("volumes").at(0).at("bytesTotal") == 1024);
}

TEST_CASE("a download that has just started shows progress within seconds however long the interval, at the cost of two early reads") {
    auto ns = fresh_namespace();
    create_secret(ns);
    volumes::ControllerOptions co;
    co.reconciler.progress_interval = std::chrono::minutes(10);
    Controller c(co);
    auto pod = progress_spec::started_download(ns);
    std::mutex mu;
    int log_reads = 0;
    server().set_audit([&](const sandbox::AuditRecord& r) {
        std::lock_guard lock(mu);
        if (r.verb == "get" && r.resource == "pods/log") ++log_reads;
    });
    // vck-fetch has listed its source: totals known, no byte moved yet.
    server().pod_logs().append(ns, pod, "fetch", "vck-fetch: listing s3://data/set/\n" + progress_spec::progress_line(0, 0));
    run_pods(ns, "Running");
    store().patch(pods, ns, pod, client::PatchType::Merge, progress_spec::fetch_status("Running"), "status");
    REQUIRE(eventually([&] {
        std::lock_guard lock(mu);
        return log_reads >= 1;
    }));
    // A second later it has moved bytes; the next read at the interval would be 10 minutes off.
    server().pod_logs().append(ns, pod, "fetch", progress_spec::progress_line(3, 370));
    REQUIRE_MESSAGE(eventually([&] { return api::string_at(get_vm(ns, "s3"), {"status", "progress"}) == "37%"; },
                               std::chrono::seconds(30)),
                    dump(ns, "s3"));
    // Seen moving, it is read at the interval's pace again: no read beyond the first and the two early ones.
    std::this_thread::sleep_for(std::chrono::seconds(3));
    {
        std::lock_guard lock(mu);
        CHECK(log_reads <= 3);
    }
    server().set_audit({});
    // Finished, so that no download of this case runs on for the controllers of later ones.
    store().patch(pods, ns, pod, client::PatchType::Merge,
                  progress_spec::fetch_status("Succeeded", R"({"command":"fetch","files":10,"skipped":0,"bytes":1000,)"
                                                           R"("skippedBytes":0,"seconds":2,"errors":0,"exitCode":0})"),
                  "status");
    REQUIRE_MESSAGE(eventually([&] { return state_of(ns, "s3") == "Running"; }), dump(ns, "s3"));
    CHECK(api::string_at(get_vm(ns, "s3"), {"status", "progress"}) == "100%");
}

TEST_CASE("a failed download fails the volume with the pod's log tail once its attempts are used up, and the failed pod stays") {
    auto ns = fresh_namespace();
    create_secret(ns);
    volumes::ControllerOptions co;
    co.reconciler.copies.max_download_attempts = 1;
    Controller c(co);
    create_vm(ns, "s3", json::array{s3_volume()});
    REQUIRE(eventually([&] { return count_pods(ns) == 1; }));
    auto pod = items(pods, ns).at(0);
    std::string pod_name(api::string_at(pod, {"metadata", "name"}));
    server().pod_logs().append(ns, pod_name, "fetch", "vck-fetch: s3://data/set/: NoSuchBucket: the bucket does not exist\n");
    run_pods(ns, "Failed");
    REQUIRE_MESSAGE(eventually([&] { return state_of(ns, "s3") == "Failed"; }), dump(ns, "s3"));
    auto vm = get_vm(ns, "s3");
    CHECK(api::string_at(vm, {"status", "message"}) == "failed to deploy all the sub-resources");
    std::string msg(api::string_at(vm.at("status").at("volumes").at(0), {"message"}));
    CHECK(msg.starts_with("error during data download using pod " + pod_name));
    CHECK(msg.find("NoSuchBucket") != std::string::npos);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    CHECK(count_pods(ns) == 1);
}

TEST_CASE("volumes that cannot be deployed fail with the original's messages and deploy nothing") {
    auto ns = fresh_namespace();
    Controller c;
    SUBCASE("no credentials Secret") {
        create_vm(ns, "s3", json::array{s3_volume()});
        REQUIRE_MESSAGE(eventually([&] { return state_of(ns, "s3") == "Failed"; }), dump(ns, "s3"));
        CHECK(api::string_at(get_vm(ns, "s3").at("status").at("volumes").at(0), {"message"}) ==
              "awsCredentialsSecretName: Secret \"s3-creds\" not found in namespace \"" + ns + "\"");
    }
    SUBCASE("an unknown sourceType lists the known ones") {
        create_vm(ns, "x", json::array{volume("vol1", "Aeon", {{"a", "b"}})});
        REQUIRE_MESSAGE(eventually([&] { return state_of(ns, "x") == "Failed"; }), dump(ns, "x"));
        std::string msg(api::string_at(get_vm(ns, "x").at("status").at("volumes").at(0), {"message"}));
        CHECK(msg.find("unknown sourceType \"Aeon\"") == 0);
        CHECK(msg.find("NFS") != std::string::npos);
    }
    SUBCASE("NFS without a server") {
        create_vm(ns, "nfs", json::array{volume("vol1", "NFS", {{"path", "/x"}}, 1, "ReadWriteMany")});
        REQUIRE_MESSAGE(eventually([&] { return state_of(ns, "nfs") == "Failed"; }), dump(ns, "nfs"));
        CHECK(api::string_at(get_vm(ns, "nfs").at("status").at("volumes").at(0), {"message"}) ==
              "server has to be set in options");
    }
    SUBCASE("replicas greater than the nodes") {
        create_secret(ns);
        create_vm(ns, "s3", json::array{s3_volume("vol1", 5)});
        REQUIRE_MESSAGE(eventually([&] { return state_of(ns, "s3") == "Failed"; }), dump(ns, "s3"));
        CHECK(api::string_at(get_vm(ns, "s3").at("status").at("volumes").at(0), {"message"}) ==
              "replicas [5] greater than number of nodes [3]");
    }
    SUBCASE("a dataPath outside the allowed roots") {
        create_secret(ns);
        auto v = s3_volume();
        v.at("options").as_object()["dataPath"] = "/var/datasets/../etc";
        create_vm(ns, "s3", json::array{v});
        REQUIRE_MESSAGE(eventually([&] { return state_of(ns, "s3") == "Failed"; }), dump(ns, "s3"));
        std::string msg(api::string_at(get_vm(ns, "s3").at("status").at("volumes").at(0), {"message"}));
        CHECK(msg.find("dataPath") != std::string::npos);
    }
    CHECK(count_pods(ns) == 0);
    CHECK(items(pvcs, ns).empty());
}

TEST_CASE("desired state Failed deploys nothing; Completed removes the sub-resources and keeps the object") {
    auto ns = fresh_namespace();
    Controller c;
    create_vm(ns, "f", json::array{nfs_volume()}, "Failed");
    REQUIRE_MESSAGE(eventually([&] { return state_of(ns, "f") == "Failed"; }), dump(ns, "f"));
    CHECK(items(pvcs, ns).empty());

    create_vm(ns, "done", json::array{nfs_volume("v2")});
    REQUIRE(eventually([&] { return items(pvcs, ns).size() == 1; }));
    store().patch(vms, ns, "done", client::PatchType::Merge, json::value{{"spec", {{"state", "Completed"}}}});
    REQUIRE_MESSAGE(eventually([&] { return state_of(ns, "done") == "Completed"; }), dump(ns, "done"));
    REQUIRE(eventually([&] { return items(pvcs, ns).empty(); }));
    CHECK_FALSE(get_vm(ns, "done").is_null());
}

TEST_CASE("reclaimPolicy Retain: a going volume's PV stays and is let go of; Delete removes it; a changed one is replaced") {
    auto ns = fresh_namespace();
    Controller c;
    auto retained = [](std::string id, std::string path) {
        auto v = nfs_volume(std::move(id));
        v.at("options").as_object()["path"] = path;
        v.at("options").as_object()["reclaimPolicy"] = "Retain";
        return v;
    };
    auto pv_of = [&](const std::string& vm, const std::string& id) -> json::value {
        for (const auto& pv : items(pvs, "", "vckname=" + vm + ",vcid=" + id)) return pv;
        return nullptr;
    };
    create_vm(ns, "keep", json::array{retained("a", "/exports/a"), retained("b", "/exports/b")});
    create_vm(ns, "drop", json::array{nfs_volume("a")});
    REQUIRE(eventually([&] { return items(pvcs, ns).size() == 3; }));
    bind_claims(ns);
    REQUIRE_MESSAGE(eventually([&] { return state_of(ns, "keep") == "Running"; }), dump(ns, "keep"));
    REQUIRE(eventually([&] { return state_of(ns, "drop") == "Running"; }));
    std::string pv_a(api::string_at(pv_of("keep", "a"), {"metadata", "name"}));
    std::string pv_b(api::string_at(pv_of("keep", "b"), {"metadata", "name"}));
    std::string pv_drop(api::string_at(pv_of("drop", "a"), {"metadata", "name"}));
    REQUIRE(!pv_a.empty());

    // A changed volume is not a volume that goes: its PV is rebuilt under the same name.
    auto changed = retained("b", "/exports/b2");
    store().patch(vms, ns, "keep", client::PatchType::Merge,
                  json::value{{"spec", {{"volumeConfigs", json::array{retained("a", "/exports/a"), changed}}}}});
    REQUIRE(eventually([&] { return api::string_at(pv_of("keep", "b"), {"spec", "nfs", "path"}) == "/exports/b2"; }));
    CHECK(api::string_at(pv_of("keep", "b"), {"metadata", "annotations", "vck.intelai.org/owner"}) == ns + "/keep");
    CHECK(api::string_at(pv_of("keep", "b"), {"metadata", "annotations", "vck.intelai.org/retained-from"}).empty());

    // Removed from the spec: retained, no longer owned, labels, source and claimRef intact.
    store().patch(vms, ns, "keep", client::PatchType::Merge, json::value{{"spec", {{"volumeConfigs", json::array{changed}}}}});
    REQUIRE_MESSAGE(eventually([&] {
        return api::string_at(pv_of("keep", "a"), {"metadata", "annotations", "vck.intelai.org/retained-from"}) ==
               ns + "/keep volume a";
    }), dump(ns, "keep"));
    auto a = store().get(pvs, "", pv_a);
    CHECK(api::string_at(a, {"metadata", "annotations", "vck.intelai.org/owner"}).empty());
    CHECK(api::string_at(a, {"metadata", "annotations", "vck.intelai.org/owner-uid"}).empty());
    CHECK(api::string_at(a, {"metadata", "labels", "vckname"}) == "keep");
    CHECK(api::string_at(a, {"metadata", "labels", "key"}) == "value");
    CHECK(api::string_at(a, {"spec", "nfs", "path"}) == "/exports/a");
    CHECK_FALSE(api::string_at(a, {"spec", "claimRef", "name"}).empty());
    REQUIRE(eventually([&] { return items(pvcs, ns, "vckname=keep,vcid=a").empty(); }));  // its claim goes

    // Deleted: Retain keeps b's PV, Delete (the default) removes drop's; both objects go.
    store().remove(vms, ns, "keep");
    store().remove(vms, ns, "drop");
    REQUIRE(eventually([&] { return get_vm(ns, "keep").is_null() && get_vm(ns, "drop").is_null(); }));
    REQUIRE(eventually([&] {
        try {
            store().get(pvs, "", pv_drop);
            return false;
        } catch (const std::exception&) {
            return true;
        }
    }));
    CHECK(api::string_at(store().get(pvs, "", pv_b), {"metadata", "annotations", "vck.intelai.org/retained-from"}) ==
          ns + "/keep volume b");
    CHECK(items(pvcs, ns).empty());
    std::string messages;
    for (const auto& e : items(ResourceId{"", "v1", "events"}, ns))
        if (api::string_at(e, {"reason"}) == "VolumeRetained") messages += std::string(api::string_at(e, {"message"})) + "\n";
    CHECK(messages.find(pv_a) != std::string::npos);
    CHECK(messages.find(pv_b) != std::string::npos);
    // Later passes leave them alone: still there once everything else has settled.
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    CHECK_NOTHROW(store().get(pvs, "", pv_a));
    CHECK_NOTHROW(store().get(pvs, "", pv_b));
    for (const auto& name : {pv_a, pv_b}) store().remove(pvs, "", name);  // other cases share the store
}

TEST_CASE("deletion removes data on every node that held it, then node labels, sub-resources and the finalizer") {
    auto ns = fresh_namespace();
    create_secret(ns);
    Controller c;
    create_vm(ns, "s3", json::array{s3_volume("vol1", 2)});
    REQUIRE(eventually([&] { return count_pods(ns) == 2; }));
    run_pods(ns, "Succeeded");
    REQUIRE_MESSAGE(eventually([&] { return state_of(ns, "s3") == "Running"; }), dump(ns, "s3"));
    // This VolumeManager's own label key (other cases' VolumeManagers share the nodes).
    std::string key = affinity_label_key(get_vm(ns, "s3").at("status").at("volumes").at(0));
    REQUIRE(count_nodes_labelled(key) == 2);

    store().remove(vms, ns, "s3");
    // Download pods go first; then one cleanup pod per labelled node runs `vck-fetch delete`.
    REQUIRE(eventually([&] { return only_cleanup_pods(ns, 2); }));
    for (const auto& p : items(pods, ns)) {
        auto args = p.at("spec").at("containers").at(0).at("args").as_array();
        CHECK(args.at(1).as_string().starts_with("/vck/root/vck-resource-"));
        CHECK(args.at(2) == "--allowed-root=/vck/root");
        CHECK_FALSE(api::string_at(p, {"spec", "nodeName"}).empty());
    }
    CHECK_FALSE(get_vm(ns, "s3").is_null());  // held by the finalizer until cleanup is done
    run_pods(ns, "Succeeded");
    REQUIRE(eventually([&] { return get_vm(ns, "s3").is_null(); }));
    CHECK(count_nodes_labelled(key) == 0);
    REQUIRE(eventually([&] { return count_pods(ns) == 0; }));
}

TEST_CASE("a VolumeManager deleted while the controller was down is cleaned up when it starts") {
    auto ns = fresh_namespace();
    {
        Controller c;
        create_vm(ns, "nfs", json::array{nfs_volume()});
        REQUIRE(eventually([&] { return items(pvcs, ns).size() == 1; }));
    }
    store().remove(vms, ns, "nfs");
    CHECK_FALSE(get_vm(ns, "nfs").is_null());
    Controller again;
    REQUIRE(eventually([&] { return get_vm(ns, "nfs").is_null(); }));
    CHECK(items(pvcs, ns).empty());
}

TEST_CASE("a restart in the middle of a download creates no duplicate pods and converges") {
    auto ns = fresh_namespace();
    create_secret(ns);
    {
        Controller c;
        create_vm(ns, "s3", json::array{s3_volume("vol1", 3)});
        REQUIRE(eventually([&] { return count_pods(ns) == 3; }));
        run_pods(ns, "Running");
    }
    Controller again;
    REQUIRE(eventually([&] { return again.manager->synced(); }));
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    CHECK(count_pods(ns) == 3);
    run_pods(ns, "Succeeded");
    REQUIRE_MESSAGE(eventually([&] { return state_of(ns, "s3") == "Running"; }), dump(ns, "s3"));
    CHECK(count_pods(ns) == 3);
}

TEST_CASE("spec updates converge: an added volume is deployed, a changed one replaced, a removed one cleaned up") {
    auto ns = fresh_namespace();
    Controller c;
    create_vm(ns, "vm", json::array{nfs_volume("a")});
    REQUIRE(eventually([&] { return items(pvcs, ns).size() == 1; }));
    bind_claims(ns);
    REQUIRE_MESSAGE(eventually([&] { return state_of(ns, "vm") == "Running"; }), dump(ns, "vm"));

    store().patch(vms, ns, "vm", client::PatchType::Merge,
                  json::value{{"spec", {{"volumeConfigs", json::array{nfs_volume("a"), nfs_volume("b")}}}}});
    // The binder's part, inside the wait: a claim may appear after any single look.
    REQUIRE_MESSAGE(eventually([&] {
        bind_claims(ns);
        return api::string_at(get_vm(ns, "vm"), {"status", "readyVolumes"}) == "2/2";
    }), dump(ns, "vm"));

    auto changed = nfs_volume("b");
    changed.at("options").as_object()["server"] = "10.0.0.2";
    store().patch(vms, ns, "vm", client::PatchType::Merge,
                  json::value{{"spec", {{"volumeConfigs", json::array{changed}}}}});
    REQUIRE(eventually([&] {
        auto all = items(pvs, "");
        int b_new = 0, a_left = 0;
        for (const auto& pv : all) {
            auto owner = api::string_at(pv, {"metadata", "annotations", "vck.intelai.org/owner"});
            if (owner != ns + "/vm") continue;
            if (api::string_at(pv, {"metadata", "labels", "vcid"}) == "a") ++a_left;
            if (api::string_at(pv, {"spec", "nfs", "server"}) == "10.0.0.2") ++b_new;
        }
        return b_new == 1 && a_left == 0;
    }));
    REQUIRE_MESSAGE(eventually([&] {
        bind_claims(ns);
        return api::string_at(get_vm(ns, "vm"), {"status", "readyVolumes"}) == "1/1";
    }), dump(ns, "vm"));
    CHECK(items(pvcs, ns).size() == 1);
}

TEST_CASE("a changed NFS volume whose claim a pod still uses is replaced once that pod is deleted, and says what it waits for") {
    auto ns = fresh_namespace();
    Controller c;
    create_vm(ns, "vm", json::array{nfs_volume("a")});
    REQUIRE(eventually([&] { return items(pvcs, ns).size() == 1; }));
    bind_claims(ns);
    REQUIRE_MESSAGE(eventually([&] { return state_of(ns, "vm") == "Running"; }), dump(ns, "vm"));
    std::string claim(api::string_at(get_vm(ns, "vm").at("status").at("volumes").at(0),
                                     {"volumeSource", "persistentVolumeClaim", "claimName"}));
    REQUIRE(!claim.empty());
    // A user's pod, scheduled, mounts the claim: Kubernetes keeps a deleted claim until it goes.
    store().create(pods, ns, json::parse(R"({"metadata":{"name":"user"},"spec":{"nodeName":"node-1",)"
                                         R"("containers":[{"name":"m","image":"busybox:1"}],)"
                                         R"("volumes":[{"name":"d","persistentVolumeClaim":{"claimName":")" + claim + R"("}}]}})"));

    auto changed = nfs_volume("a");
    changed.at("options").as_object()["server"] = "10.0.0.2";
    store().patch(vms, ns, "vm", client::PatchType::Merge, json::value{{"spec", {{"volumeConfigs", json::array{changed}}}}});
    auto volume_message = [&] {
        auto vm = get_vm(ns, "vm");
        const auto* st = vm.as_object().if_contains("status");
        const auto* vols = st ? st->as_object().if_contains("volumes") : nullptr;
        return vols && !vols->as_array().empty() ? std::string(api::string_at(vols->as_array().at(0), {"message"})) : std::string();
    };
    REQUIRE_MESSAGE(eventually([&] {
        return volume_message() == "replacing sub-resources after a change of the volume: claim " + claim +
                                       " is kept until the pods that use it are deleted";
    }), dump(ns, "vm"));
    CHECK(state_of(ns, "vm") == "Pending");
    CHECK_FALSE(api::string_at(store().get(pvcs, ns, claim), {"metadata", "deletionTimestamp"}).empty());

    sandbox::StoreDeleteOptions now;
    now.grace_period_seconds = 0;
    store().remove(pods, ns, "user", now);
    REQUIRE_MESSAGE(eventually([&] {
        bind_claims(ns);
        auto all = items(pvcs, ns);
        if (all.size() != 1 || !api::string_at(all.at(0), {"metadata", "deletionTimestamp"}).empty()) return false;
        std::string volume(api::string_at(all.at(0), {"spec", "volumeName"}));
        for (const auto& pv : items(pvs, ""))
            if (api::string_at(pv, {"metadata", "name"}) == volume)
                return api::string_at(pv, {"spec", "nfs", "server"}) == "10.0.0.2" && state_of(ns, "vm") == "Running";
        return false;
    }), dump(ns, "vm"));

    // Deleted while a pod uses the new claim: the VolumeManager keeps its finalizer until the pod goes.
    std::string new_claim(api::string_at(items(pvcs, ns).at(0), {"metadata", "name"}));
    store().create(pods, ns, json::parse(R"({"metadata":{"name":"user2"},"spec":{"nodeName":"node-2",)"
                                         R"("containers":[{"name":"m","image":"busybox:1"}],)"
                                         R"("volumes":[{"name":"d","persistentVolumeClaim":{"claimName":")" + new_claim + R"("}}]}})"));
    store().remove(vms, ns, "vm");
    REQUIRE(eventually([&] {
        auto all = items(pvcs, ns);
        return all.size() == 1 && !api::string_at(all.at(0), {"metadata", "deletionTimestamp"}).empty();
    }));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    CHECK(items(vms, ns).size() == 1);
    store().remove(pods, ns, "user2", now);
    CHECK_MESSAGE(eventually([&] { return items(vms, ns).empty() && items(pvcs, ns).empty(); }), dump(ns, "vm"));
}

TEST_CASE("hostile option values stay literal argv entries and a 253-character name works") {
    auto ns = fresh_namespace();
    create_secret(ns);
    Controller c;
    std::string payload = "s3://data/x; rm -rf / #$(reboot)`id`";
    auto v = s3_volume();
    v.at("options").as_object()["sourceURL"] = payload;
    std::string long_name(253, 'a');
    create_vm(ns, long_name, json::array{v});
    REQUIRE(eventually([&] { return count_pods(ns) == 1; }));
    auto p = items(pods, ns).at(0);
    const auto& ctr = p.at("spec").at("containers").at(0);
    CHECK(ctr.at("args").at(1).as_string() == payload);
    CHECK(ctr.at("command").as_array().size() == 1);
    for (const auto& kv : p.at("metadata").at("labels").as_object()) {
        CHECK(kv.key().size() <= 63 + 253);
        CHECK(kv.value().as_string().size() <= 63);
    }
    run_pods(ns, "Succeeded");
    REQUIRE_MESSAGE(eventually([&] { return state_of(ns, long_name) == "Running"; }), dump(ns, long_name));
}

TEST_CASE("the caches hold only VCK's own pods, PVs and claims (compressed), Secrets without values, and nodes without image lists") {
    auto ns = fresh_namespace();
    create_secret(ns);
    // What a real cluster holds besides VCK's objects.
    store().create(pods, ns, json::value{{"metadata", {{"name", "someone-elses"}, {"namespace", ns}}},
                                         {"spec", {{"containers", {{{"name", "c"}, {"image", "busybox"}}}}}}});
    store().create(pvcs, ns, json::value{{"metadata", {{"name", "someone-elses"}, {"namespace", ns}}},
                                         {"spec", {{"accessModes", {"ReadWriteOnce"}},
                                                   {"resources", {{"requests", {{"storage", "1Gi"}}}}}}}});
    std::string pv_name = "someone-elses-" + ns;
    store().create(pvs, "", json::value{{"metadata", {{"name", pv_name}}},
                                        {"spec", {{"capacity", {{"storage", "1Gi"}}},
                                                  {"accessModes", {"ReadWriteOnce"}},
                                                  {"hostPath", {{"path", "/tmp/x"}}}}}});
    store().patch(nodes, "", "node-2", client::PatchType::Merge,
                  json::value{{"status", {{"images", {{{"names", {"registry.example/big:1"}}, {"sizeBytes", 123456}}}},
                                          {"capacity", {{"cpu", "4"}}}}}},
                  "status");

    Controller c;
    create_vm(ns, "nfs", json::array{nfs_volume()});
    REQUIRE(eventually([&] { return items(pvcs, ns).size() == 2; }));
    bind_claims(ns);
    REQUIRE_MESSAGE(eventually([&] { return state_of(ns, "nfs") == "Running"; }), dump(ns, "nfs"));

    const auto& caches = c.parts.caches;
    CHECK(caches.volume_managers->store().compressed());
    CHECK(caches.pods->store().compressed());
    CHECK(caches.persistent_volumes->store().compressed());
    CHECK(caches.claims->store().compressed());
    CHECK_FALSE(caches.nodes->store().compressed());
    CHECK_FALSE(caches.pods->store().get(runtime::ObjectKey{ns, "someone-elses"}));
    CHECK_FALSE(caches.claims->store().get(runtime::ObjectKey{ns, "someone-elses"}));
    CHECK_FALSE(caches.persistent_volumes->store().get(runtime::ObjectKey{"", pv_name}));
    // VCK's own claim and volume are there.
    CHECK(caches.claims->store().by_index(runtime::namespace_index, ns).size() == 1);
    CHECK(eventually([&] {
        for (const auto& pv : caches.persistent_volumes->store().list())
            if (volumes::detail::annotation(*pv, volumes::owner_name_annotation) == ns + "/nfs") return true;
        return false;
    }));

    REQUIRE(eventually([&] { return caches.secrets->store().get(runtime::ObjectKey{ns, "s3-creds"}) != nullptr; }));
    auto secret = caches.secrets->store().get(runtime::ObjectKey{ns, "s3-creds"});
    CHECK(secret->data.size() == 2);
    CHECK(secret->data.contains("awsAccessKeyID"));
    for (const auto& [key, value] : secret->data) CHECK_MESSAGE(value.empty(), key);

    REQUIRE(eventually([&] {
        auto n = caches.nodes->store().get(runtime::ObjectKey{"", "node-2"});
        return n && n->status && n->status->capacity.contains("cpu");
    }));
    auto node = caches.nodes->store().get(runtime::ObjectKey{"", "node-2"});
    CHECK_FALSE(node->status->unknown.contains("images"));
    CHECK(store().get(nodes, "", "node-2").at("status").as_object().contains("images"));  // the server keeps them
}

TEST_CASE("under API faults (500s, 429s, conflicts, dropped watches, a compacted history) VolumeManagers converge with nothing made twice") {
    auto ns = fresh_namespace();
    Controller c;
    REQUIRE(eventually([&] { return c.manager->synced(); }));
    auto& faults = server().faults();
    faults.fail_next({.verb = "create", .resource = "persistentvolumeclaims", .code = 500, .count = 3});
    faults.fail_next({.verb = "create", .resource = "persistentvolumes", .code = 429, .count = 2, .retry_after_seconds = 1});
    faults.fail_next({.verb = "patch", .resource = "volumemanagers", .code = 409, .count = 2});  // the finalizer
    faults.fail_next({.verb = "patch", .resource = "volumemanagers/status", .code = 503, .count = 2});
    faults.fail_next({.verb = "create", .resource = "events", .code = 500, .count = 2});
    const int n = 6;
    for (int i = 0; i < n; ++i) create_vm(ns, "nfs-" + std::to_string(i), json::array{nfs_volume()});
    // Midway, every watch drops and the history they would resume from is gone (410: relist).
    REQUIRE(eventually([&] { return items(pvcs, ns).size() >= 2; }));
    faults.drop_watches();
    faults.compact();

    auto all_running = [&] {
        bind_claims(ns);
        for (int i = 0; i < n; ++i)
            if (state_of(ns, "nfs-" + std::to_string(i)) != "Running") return false;
        return true;
    };
    REQUIRE_MESSAGE(eventually(all_running), dump(ns, "nfs-0"));
    CHECK(faults.pending().empty());  // every armed fault was met
    faults.clear();

    CHECK(items(pvcs, ns).size() == n);
    int pvs_of_ns = 0;
    for (const auto& pv : items(pvs, ""))
        if (api::string_at(pv, {"metadata", "annotations", "vck.intelai.org/owner"}).starts_with(ns + "/")) ++pvs_of_ns;
    CHECK(pvs_of_ns == n);
    CHECK(c.parts.reconciler->creates() == 2 * n);  // each PV and claim created once (retries included)
    for (int i = 0; i < n; ++i) {
        auto vm = get_vm(ns, "nfs-" + std::to_string(i));
        CHECK(vm.at("metadata").at("finalizers").as_array() == json::array{"vck.intelai.org/cleanup"});
        CHECK(api::string_at(vm, {"status", "readyVolumes"}) == "1/1");
    }
    // The caches equal the server's state after all of it.
    CHECK(eventually([&] { return c.parts.caches.claims->store().by_index(runtime::namespace_index, ns).size() == n; }));
    CHECK(eventually([&] { return c.parts.caches.volume_managers->store().by_index(runtime::namespace_index, ns).size() == n; }));
}

TEST_CASE("a sub-resource the server refuses (422) puts the server's message in the volume and a Warning event, and is backed off") {
    auto ns = fresh_namespace();
    create_secret(ns);
    Controller c;
    REQUIRE(eventually([&] { return c.manager->synced(); }));
    auto& faults = server().faults();
    auto before = faults.fired();
    faults.fail_next({.verb = "create", .resource = "pods", .code = 422, .count = 1000,
                      .message = "Pod \"x\" is invalid: metadata.labels: Invalid value: \"toolong\": must be no more than 63 characters"});
    create_vm(ns, "s3", json::array{s3_volume("vol1", 1)});
    auto message = [&] {
        auto vm = get_vm(ns, "s3");
        boost::system::error_code ec;
        const auto* m = vm.find_pointer("/status/volumes/0/message", ec);
        return m && m->is_string() ? std::string(m->as_string()) : std::string();
    };
    REQUIRE_MESSAGE(eventually([&] { return message().find("must be no more than 63 characters") != std::string::npos; }),
                    dump(ns, "s3"));
    CHECK(state_of(ns, "s3") == "Failed");
    CHECK(eventually([&] {
        for (const auto& e : items(ResourceId{"", "v1", "events"}, ns))
            if (e.at("reason") == "CreateRefused" && e.at("type") == "Warning" &&
                e.at("message").as_string().find("must be no more than 63 characters") != std::string::npos)
                return true;
        return false;
    }));
    // Backed off (1 s, 2 s, 4 s, ...), not retried in a loop: a handful of attempts in 3 s.
    std::this_thread::sleep_for(std::chrono::seconds(3));
    CHECK(faults.fired() - before <= 4);
    faults.clear();
    // Once the server accepts it, the volume converges on its own.
    REQUIRE_MESSAGE(eventually([&] {
        run_pods(ns, "Succeeded");
        return state_of(ns, "s3") == "Running";
    }), dump(ns, "s3"));
}

TEST_CASE("a VolumeManager deleted while refused leaves nothing in the reconciler's memory") {
    auto ns = fresh_namespace();
    create_secret(ns);
    Controller c;
    REQUIRE(eventually([&] { return c.manager->synced(); }));
    auto& faults = server().faults();
    faults.fail_next({.verb = "create", .resource = "pods", .code = 422, .count = 1000, .message = "refused"});
    create_vm(ns, "s3", json::array{s3_volume("vol1", 1)});
    REQUIRE_MESSAGE(eventually([&] { return state_of(ns, "s3") == "Failed"; }), dump(ns, "s3"));
    CHECK(c.parts.reconciler->remembered() == 1);  // the refusal's backoff
    faults.clear();
    store().remove(vms, ns, "s3");
    REQUIRE(eventually([&] {
        run_pods(ns, "Succeeded");
        return get_vm(ns, "s3").is_null();
    }));
    CHECK(eventually([&] { return c.parts.reconciler->remembered() == 0; }));
}

TEST_CASE("with slim_caches off the caches are whole, for a Manager shared with other controllers") {
    auto ns = fresh_namespace();
    create_secret(ns);
    store().create(pods, ns, json::value{{"metadata", {{"name", "someone-elses"}, {"namespace", ns}}},
                                         {"spec", {{"containers", {{{"name", "c"}, {"image", "busybox"}}}}}}});
    volumes::ControllerOptions co;
    co.slim_caches = false;
    Controller c(co);
    REQUIRE(eventually([&] { return c.manager->synced(); }));
    const auto& caches = c.parts.caches;
    CHECK_FALSE(caches.volume_managers->store().compressed());
    CHECK_FALSE(caches.claims->store().compressed());
    CHECK(eventually([&] { return caches.pods->store().get(runtime::ObjectKey{ns, "someone-elses"}) != nullptr; }));
    auto secret = caches.secrets->store().get(runtime::ObjectKey{ns, "s3-creds"});
    REQUIRE(secret);
    CHECK(secret->data.at("awsAccessKeyID") == "UzNSVkVS");
    // And VCK works the same on whole caches.
    create_vm(ns, "nfs", json::array{nfs_volume()});
    REQUIRE(eventually([&] { return items(pvcs, ns).size() == 1; }));
    bind_claims(ns);
    CHECK_MESSAGE(eventually([&] { return state_of(ns, "nfs") == "Running"; }), dump(ns, "nfs"));
}

TEST_CASE("no write of the controller or of the sandbox in these tests carried a field the 1.32 API lacks") {
    // The specifications above share one sandbox: what vck writes (VolumeManager status,
    // pods, claims, events) and what the sandbox writes back would lose such a field on a
    // cluster, silently (fieldValidation Warn or Ignore).
    CHECK(store().unknown_fields_seen() == std::vector<std::string>{});
}

TEST_CASE("peer fill: the volume's certificate Secret first, the root's pod, then a puller naming the root's address; "
          "the root's copy Ready while it serves; where the bytes came from recorded when the pods end") {
    auto ns = fresh_namespace();
    create_secret(ns);
    Controller c({}, handlers::HandlerRegistry::with_builtin_handlers(), /*peer_fill=*/true);
    create_vm(ns, "s3", json::array{s3_volume("vol1", 2)});
    REQUIRE(eventually([&] { return count_pods(ns) == 1; }));
    auto root = items(pods, ns).at(0);
    std::string root_name(api::string_at(root, {"metadata", "name"}));
    auto args_of = [](const json::value& p) {
        std::vector<std::string> out;
        for (const auto& a : p.at("spec").at("containers").at(0).at("args").as_array()) out.emplace_back(a.as_string());
        return out;
    };
    auto has = [](const std::vector<std::string>& args, const std::string& a) {
        return std::find(args.begin(), args.end(), a) != args.end();
    };
    CHECK(has(args_of(root), "--serve=$(POD_IP):7443"));
    CHECK(has(args_of(root), "--ready-port=7444"));
    std::string secret_name;
    boost::system::error_code ec;
    const auto* sv = root.find_pointer("/spec/volumes", ec);
    REQUIRE(sv);
    for (const auto& v : sv->as_array())
        if (v.as_object().contains("secret")) secret_name = v.at("secret").at("secretName").as_string();
    REQUIRE(secret_name.starts_with("vck-peer-"));
    auto secret = store().get(secrets, ns, secret_name);
    CHECK(secret.at("data").as_object().contains("tls.crt"));
    CHECK(secret.at("data").as_object().contains("tls.key"));
    CHECK(secret.at("metadata").at("ownerReferences").at(0).at("kind") == "VolumeManager");  // it goes with it

    // The root's pod has no address yet: its puller waits.
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    CHECK(count_pods(ns) == 1);
    run_pods(ns, "Running");
    store().patch(pods, ns, root_name, client::PatchType::Merge,
                  json::value{{"status", {{"podIP", "10.1.2.3"}, {"conditions", {{{"type", "Ready"}, {"status", "False"}}}}}}},
                  "status");
    REQUIRE(eventually([&] { return count_pods(ns) == 2; }));
    json::value puller;
    for (const auto& p : items(pods, ns))
        if (api::string_at(p, {"metadata", "name"}) != root_name) puller = p;
    CHECK(has(args_of(puller), "--peer=https://10.1.2.3:7443"));
    CHECK_FALSE(has(args_of(puller), "--serve=$(POD_IP):7443"));

    // Its fetch done, the root's pod is Ready (its probe reaches the ready port) while it serves on.
    auto copy_phase_of = [&](std::int64_t replica) {
        auto vm = get_vm(ns, "s3");
        for (const auto& e : vm.at("status").at("copies").as_array())
            if (e.at("replica").to_number<std::int64_t>() == replica) return std::string(e.at("phase").as_string());
        return std::string();
    };
    CHECK(copy_phase_of(0) == "Downloading");
    store().patch(pods, ns, root_name, client::PatchType::Merge,
                  json::value{{"status", {{"conditions", {{{"type", "Ready"}, {"status", "True"}}}}}}}, "status");
    REQUIRE_MESSAGE(eventually([&] { return copy_phase_of(0) == "Ready"; }), dump(ns, "s3"));

    // Both end: their summaries say where the bytes came from.
    auto summary = [](int store_bytes, int peer_bytes) {
        return json::value{{"status",
                            {{"phase", "Succeeded"},
                             {"containerStatuses",
                              {{{"name", "fetch"},
                                {"state",
                                 {{"terminated",
                                   {{"exitCode", 0},
                                    {"message", "{\"command\":\"fetch\",\"files\":2,\"skipped\":0,\"bytes\":100,"
                                                "\"skippedBytes\":0,\"bytesFromStore\":" + std::to_string(store_bytes) +
                                                    ",\"bytesFromPeers\":" + std::to_string(peer_bytes) +
                                                    ",\"seconds\":1,\"errors\":0,\"exitCode\":0}"}}}}}}}}}}};
    };
    std::string puller_name(api::string_at(puller, {"metadata", "name"}));
    run_pods(ns, "Running");
    store().patch(pods, ns, puller_name, client::PatchType::Merge, summary(0, 100), "status");
    store().patch(pods, ns, root_name, client::PatchType::Merge, summary(100, 0), "status");
    REQUIRE_MESSAGE(eventually([&] {
        if (state_of(ns, "s3") != "Running") return false;
        std::int64_t from_store = 0, from_peers = 0;
        auto vm = get_vm(ns, "s3");
        for (const auto& e : vm.at("status").at("copies").as_array()) {
            if (!e.as_object().contains("bytesFromStore")) return false;
            from_store += e.at("bytesFromStore").to_number<std::int64_t>();
            from_peers += e.at("bytesFromPeers").to_number<std::int64_t>();
        }
        return from_store == 100 && from_peers == 100;
    }), dump(ns, "s3"));
}

namespace refresh_spec {

/// The source as the controller's refresh lists it: its digest, changed by the test, and how
/// many listings were made.
struct Source {
    std::mutex mu;
    std::string digest = "d1";
    int lists = 0;
};

boost::asio::awaitable<volumes::SourceListing> list(std::shared_ptr<Source> s) {
    std::lock_guard lock(s->mu);
    ++s->lists;
    co_return volumes::SourceListing{s->digest, ""};
}

int lists(Source& s) {
    std::lock_guard lock(s.mu);
    return s.lists;
}

volumes::ControllerOptions options(const std::shared_ptr<Source>& source) {
    volumes::ControllerOptions co;
    co.reconciler.list_source = [source](client::Client&, const api::VolumeManager&, const api::VolumeConfig&) {
        return list(source);
    };
    co.reconciler.min_refresh_interval = std::chrono::milliseconds(100);
    return co;
}

/// Every pod of `ns` not finished yet: bound to its node, then Succeeded with a vck-fetch
/// summary whose listing digest is `digest`.
void finish_pods(const std::string& ns, const std::string& digest) {
    int turn = 0;
    for (const auto& p : items(pods, ns)) {
        auto phase = api::string_at(p, {"status", "phase"});
        if (phase == "Succeeded" || phase == "Failed" || !bind_pod(ns, p, turn)) continue;
        std::string summary = R"({"command":"fetch","files":3,"skipped":0,"bytes":300,"skippedBytes":0,"seconds":1,)"
                              R"("errors":0,"exitCode":0,"bytesFromStore":300,"bytesFromPeers":0,"listingDigest":")" +
                              digest + "\"}";
        store().patch(pods, ns, std::string(api::string_at(p, {"metadata", "name"})), client::PatchType::Merge,
                      progress_spec::fetch_status("Succeeded", summary), "status");
    }
}

void ask_refresh(const std::string& ns, const std::string& name, const std::string& value) {
    store().patch(vms, ns, name, client::PatchType::Merge,
                  json::value{{"metadata", {{"annotations", {{"vck.intelai.org/refresh", value}}}}}});
}

/// The VolumeManager's copies as "node phase path" lines.
std::vector<std::string> copies(const std::string& ns, const std::string& name) {
    std::vector<std::string> out;
    auto vm = get_vm(ns, name);
    boost::system::error_code ec;
    if (const auto* cs = vm.find_pointer("/status/copies", ec); cs && cs->is_array())
        for (const auto& c : cs->as_array())
            out.push_back(std::string(api::string_at(c, {"node"})) + " " + std::string(api::string_at(c, {"phase"})) + " " +
                          std::string(api::string_at(c, {"path"})));
    std::sort(out.begin(), out.end());
    return out;
}

/// The hostPath the status gives volume `index` of ns/name ("" when none).
std::string host_path(const std::string& ns, const std::string& name, int index = 0) {
    auto vm = get_vm(ns, name);
    boost::system::error_code ec;
    const auto* p = vm.find_pointer("/status/volumes/" + std::to_string(index) + "/volumeSource/hostPath/path", ec);
    return p && p->is_string() ? std::string(p->as_string()) : std::string();
}

std::string refresh_field(const std::string& ns, const std::string& name, std::string_view field) {
    auto vm = get_vm(ns, name);
    boost::system::error_code ec;
    const auto* r = vm.find_pointer("/status/refreshes/0", ec);
    if (!r || !r->is_object() || !r->as_object().contains(field)) return "";
    const auto& v = r->as_object().at(field);
    return v.is_string() ? std::string(v.as_string()) : json::serialize(v);
}

} // namespace refresh_spec

TEST_CASE("refresh asked by annotation: an unchanged source costs one listing and changes nothing but checkedAt; "
          "a changed one is built beside the old from its files, and the status switches when every replica is Ready") {
    using namespace refresh_spec;
    auto ns = fresh_namespace();
    create_secret(ns);
    auto source = std::make_shared<Source>();
    Controller c(options(source));
    create_vm(ns, "r", json::array{s3_volume("vol1", 2)});
    REQUIRE(eventually([&] { return count_pods(ns) == 2; }));
    finish_pods(ns, "d1");
    REQUIRE_MESSAGE(eventually([&] { return state_of(ns, "r") == "Running"; }), dump(ns, "r"));
    auto first = copies(ns, "r");
    auto first_path = host_path(ns, "r");
    REQUIRE(!first_path.empty());
    CHECK(lists(*source) == 0);  // nothing asked, no interval: no listing
    auto made = get_vm(ns, "r");  // named: a range-for must not outlive it
    for (const auto& e : made.at("status").at("copies").as_array()) CHECK(e.at("sourceDigest") == "d1");

    // Asked, unchanged: one listing, the record answers the request, nothing else moves.
    ask_refresh(ns, "r", "one");
    REQUIRE_MESSAGE(eventually([&] { return refresh_field(ns, "r", "request") == "one"; }), dump(ns, "r"));
    CHECK(lists(*source) == 1);
    CHECK_FALSE(refresh_field(ns, "r", "checkedAt").empty());
    CHECK(refresh_field(ns, "r", "version") == "0");
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    CHECK(copies(ns, "r") == first);
    CHECK(count_pods(ns) == 2);
    CHECK(host_path(ns, "r") == first_path);
    CHECK(lists(*source) == 1);  // answered once

    // Asked, changed: version 1 downloads beside version 0, each new copy naming the old one
    // on its node to take unchanged files from; the status serves the old meanwhile.
    {
        std::lock_guard lock(source->mu);
        source->digest = "d2";
    }
    ask_refresh(ns, "r", "two");
    REQUIRE_MESSAGE(eventually([&] { return count_pods(ns) == 4; }), dump(ns, "r"));
    CHECK(refresh_field(ns, "r", "version") == "1");
    CHECK(lists(*source) == 2);
    CHECK(host_path(ns, "r") == first_path);
    // Each node's old copy lies in the directory the status names (one per config, alike on
    // every node); the pods mount the data path at /vck/datasets.
    const std::string reuse = "--reuse-from=/vck/datasets" + first_path.substr(first_path.rfind('/'));
    int reusing = 0;
    for (const auto& p : items(pods, ns)) {
        if (api::string_at(p, {"status", "phase"}) == "Succeeded") continue;
        for (const auto& a : p.at("spec").at("containers").at(0).at("args").as_array())
            if (a.as_string() == reuse) ++reusing;
    }
    CHECK(reusing == 2);

    // One replica of the new version done: nothing switches; both: the status switches, the
    // old copies go (their cleanup pods), and the record keeps version 1.
    finish_pods(ns, "d2");
    REQUIRE_MESSAGE(eventually([&] { return host_path(ns, "r") != first_path; }), dump(ns, "r"));
    REQUIRE_MESSAGE(eventually([&] {
                        finish_pods(ns, "d2");  // the cleanup pods
                        return copies(ns, "r").size() == 2 && state_of(ns, "r") == "Running";
                    }),
                    dump(ns, "r"));
    for (const auto& line : copies(ns, "r")) CHECK(line.ends_with(host_path(ns, "r")));
    CHECK(refresh_field(ns, "r", "version") == "1");
    CHECK(lists(*source) == 2);
}

TEST_CASE("refresh on an interval: an unchanged source is listed each interval and nothing but checkedAt is written") {
    using namespace refresh_spec;
    auto ns = fresh_namespace();
    create_secret(ns);
    auto source = std::make_shared<Source>();
    Controller c(options(source));
    auto vol = s3_volume("vol1", 1);
    vol.as_object()["options"].as_object()["refreshInterval"] = "200ms";  // the test's minimum is 100 ms
    create_vm(ns, "r", json::array{vol});
    REQUIRE(eventually([&] { return count_pods(ns) == 1; }));
    finish_pods(ns, "d1");
    REQUIRE_MESSAGE(eventually([&] { return lists(*source) >= 2; }), dump(ns, "r"));
    auto status = get_vm(ns, "r").at("status");
    status.as_object().erase("refreshes");
    REQUIRE_MESSAGE(eventually([&] { return lists(*source) >= 4; }), dump(ns, "r"));
    auto later = get_vm(ns, "r").at("status");
    later.as_object().erase("refreshes");
    CHECK(later == status);  // no new version, no copy, no condition moved
    CHECK(count_pods(ns) == 1);
    CHECK(refresh_field(ns, "r", "version") == "0");
}

namespace sharing_spec {

/// The source as each VolumeManager's own credentials list it: namespaces in `denied` have
/// credentials the store refuses.
struct Source {
    std::mutex mu;
    std::string digest = "s1";
    std::set<std::string> denied;
    std::map<std::string, int> lists;  // by namespace
};

boost::asio::awaitable<volumes::SourceListing> list(std::shared_ptr<Source> s, std::string ns) {
    std::lock_guard lock(s->mu);
    ++s->lists[ns];
    if (s->denied.contains(ns)) co_return volumes::SourceListing{"", "403 InvalidAccessKeyId"};
    co_return volumes::SourceListing{s->digest, ""};
}

int lists(Source& s, const std::string& ns) {
    std::lock_guard lock(s.mu);
    return s.lists[ns];
}

volumes::ControllerOptions options(const std::shared_ptr<Source>& source) {
    volumes::ControllerOptions co;
    co.reconciler.list_source = [source](client::Client&, const api::VolumeManager& vm, const api::VolumeConfig&) {
        return list(source, vm.metadata.namespace_);
    };
    co.reconciler.handler.share_copies = true;
    return co;
}

/// An S3 volume of a source no other test case uses (the sandbox outlives each case).
json::value shared_volume(int replicas) {
    return volume("vol1", "S3",
                  {{"sourceURL", "s3://shared/set/"}, {"awsCredentialsSecretName", "s3-creds"},
                   {"endpointURL", "http://127.0.0.1:9000"}},
                  replicas);
}

std::set<std::string> nodes_of(const std::string& ns, const std::string& name) {
    std::set<std::string> out;
    for (const auto& line : refresh_spec::copies(ns, name)) out.insert(line.substr(0, line.find(' ')));
    return out;
}

std::string message_of(const std::string& ns, const std::string& name) {
    auto vm = get_vm(ns, name);
    boost::system::error_code ec;
    const auto* m = vm.find_pointer("/status/volumes/0/message", ec);
    return m && m->is_string() ? std::string(m->as_string()) : std::string();
}

} // namespace sharing_spec

TEST_CASE("shared copies: equal configs in two namespaces share one directory per node; each VolumeManager's own "
          "credentials prove access; the copy outlives all but its last user; wrong credentials get no access") {
    using namespace sharing_spec;
    auto ns1 = fresh_namespace(), ns2 = fresh_namespace(), ns3 = fresh_namespace();
    for (const auto& ns : {ns1, ns2, ns3}) create_secret(ns);
    auto source = std::make_shared<Source>();
    source->denied.insert(ns3);
    Controller c(options(source));
    create_vm(ns1, "a", json::array{shared_volume(2)});
    REQUIRE(eventually([&] { return count_pods(ns1) == 2; }));
    refresh_spec::finish_pods(ns1, "s1");
    REQUIRE_MESSAGE(eventually([&] { return state_of(ns1, "a") == "Running"; }), dump(ns1, "a"));
    const auto path = refresh_spec::host_path(ns1, "a");
    CHECK(path.find("/vck-resource-shared-") != std::string::npos);
    const auto held = nodes_of(ns1, "a");
    REQUIRE(held.size() == 2);

    // b (same namespace) and c (another one, its own Secret) join: Running with a's hostPath on
    // a's nodes, without a download pod, each after one listing with its own credentials.
    create_vm(ns1, "b", json::array{shared_volume(2)});
    create_vm(ns2, "c", json::array{shared_volume(2)});
    REQUIRE_MESSAGE(eventually([&] { return state_of(ns1, "b") == "Running"; }), dump(ns1, "b"));
    REQUIRE_MESSAGE(eventually([&] { return state_of(ns2, "c") == "Running"; }), dump(ns2, "c"));
    CHECK(refresh_spec::host_path(ns1, "b") == path);
    CHECK(refresh_spec::host_path(ns2, "c") == path);
    CHECK(nodes_of(ns1, "b") == held);
    CHECK(nodes_of(ns2, "c") == held);
    CHECK(count_pods(ns1) == 2);  // a's two downloads only
    CHECK(count_pods(ns2) == 0);
    CHECK(lists(*source, ns2) == 1);
    auto joined = get_vm(ns2, "c");  // named: a range-for must not outlive it
    for (const auto& e : joined.at("status").at("copies").as_array()) {
        CHECK(e.at("sharedFrom").as_string() == ns1 + "/a");
        CHECK(e.at("bytesFromStore") == 0);
    }
    // A joiner's labels follow the record that first names its copies, moments after it.
    for (const auto& [ns, name] : {std::pair{ns1, "a"}, {ns1, "b"}, {ns2, "c"}})
        CHECK(eventually([&] { return count_nodes_labelled(handlers::naming::node_label_key(ns, name, "vol1")) == 2; }));

    // d's credentials are refused: no access to the shared copy, and a message that says so.
    create_vm(ns3, "d", json::array{shared_volume(2)});
    REQUIRE_MESSAGE(eventually([&] { return state_of(ns3, "d") == "Failed"; }), dump(ns3, "d"));
    CHECK(message_of(ns3, "d") == "no access to the copy of this source that " + ns1 +
                                      "/a shares: listing s3://shared/set/ with this volume's own credentials (Secret " +
                                      ns3 + "/s3-creds) failed: 403 InvalidAccessKeyId");
    CHECK(refresh_spec::copies(ns3, "d").empty());
    CHECK(count_pods(ns3) == 0);
    CHECK(count_nodes_labelled(handlers::naming::node_label_key(ns3, "d", "vol1")) == 0);
    store().remove(vms, ns3, "d");

    // Deleting a (its maker) and b keeps the copy: no cleanup pod, c still Running on it.
    store().remove(vms, ns1, "a");
    store().remove(vms, ns1, "b");
    REQUIRE_MESSAGE(eventually([&] {
                        refresh_spec::finish_pods(ns1, "s1");
                        return get_vm(ns1, "a").is_null() && get_vm(ns1, "b").is_null();
                    }),
                    std::string(dump(ns1, "a") + dump(ns1, "b")));
    for (const auto& p : items(pods, ns1)) CHECK(p.at("spec").at("containers").at(0).at("args").at(0) != "delete");
    CHECK(state_of(ns2, "c") == "Running");
    CHECK(nodes_of(ns2, "c") == held);
    CHECK(count_nodes_labelled(handlers::naming::node_label_key(ns1, "a", "vol1")) == 0);
    CHECK(count_nodes_labelled(handlers::naming::node_label_key(ns1, "b", "vol1")) == 0);
    CHECK(count_nodes_labelled(handlers::naming::node_label_key(ns2, "c", "vol1")) == 2);

    // Deleting c, the last user, removes the copy (a cleanup pod per node) and its labels.
    store().remove(vms, ns2, "c");
    REQUIRE_MESSAGE(eventually([&] { return only_cleanup_pods(ns2, 2); }), dump(ns2, "c"));
    for (const auto& p : items(pods, ns2)) CHECK(held.contains(std::string(api::string_at(p, {"spec", "nodeName"}))));
    refresh_spec::finish_pods(ns2, "s1");
    REQUIRE_MESSAGE(eventually([&] { return get_vm(ns2, "c").is_null(); }), dump(ns2, "c"));
    CHECK(count_nodes_labelled(handlers::naming::node_label_key(ns2, "c", "vol1")) == 0);
}

TEST_CASE("two volumes of one VolumeManager with equal source configs share one copy per node; taking one out of "
          "the spec keeps the other's data") {
    using namespace sharing_spec;
    auto ns = fresh_namespace();
    create_secret(ns);
    auto source = std::make_shared<Source>();
    Controller c(options(source));
    auto second = shared_volume(2);
    second.as_object()["id"] = "vol2";
    create_vm(ns, "a", json::array{shared_volume(2), second});
    REQUIRE_MESSAGE(eventually([&] { return count_pods(ns) == 2; }), dump(ns, "a"));
    refresh_spec::finish_pods(ns, "s1");
    REQUIRE_MESSAGE(eventually([&] { return state_of(ns, "a") == "Running"; }), dump(ns, "a"));
    CHECK(refresh_spec::host_path(ns, "a", 0) == refresh_spec::host_path(ns, "a", 1));
    CHECK(count_pods(ns) == 2);  // one download per node, for both volumes
    CHECK(refresh_spec::copies(ns, "a").size() == 4);
    const auto held = nodes_of(ns, "a");
    REQUIRE(held.size() == 2);

    // vol1 leaves the spec: its entries go without a cleanup pod (vol2 still reads the
    // directory), and vol2 stays Running on the same nodes.
    store().patch(vms, ns, "a", client::PatchType::Merge, json::value{{"spec", {{"volumeConfigs", json::array{second}}}}});
    REQUIRE_MESSAGE(eventually([&] {
                        auto vm = get_vm(ns, "a");
                        return refresh_spec::copies(ns, "a").size() == 2 && state_of(ns, "a") == "Running" &&
                               vm.at("status").at("observedGeneration") == vm.at("metadata").at("generation");
                    }),
                    dump(ns, "a"));
    for (const auto& p : items(pods, ns)) CHECK(p.at("spec").at("containers").at(0).at("args").at(0) != "delete");
    CHECK(nodes_of(ns, "a") == held);
    CHECK(count_nodes_labelled(handlers::naming::node_label_key(ns, "a", "vol1")) == 0);
    CHECK(count_nodes_labelled(handlers::naming::node_label_key(ns, "a", "vol2")) == 2);

    // Deleting it removes the copy: one cleanup pod per node.
    store().remove(vms, ns, "a");
    auto cleanups = [&] {
        std::set<std::string> on;
        for (const auto& p : items(pods, ns))
            if (p.at("spec").at("containers").at(0).at("args").at(0) == "delete")
                on.insert(std::string(api::string_at(p, {"spec", "nodeName"})));
        return on;
    };
    REQUIRE_MESSAGE(eventually([&] { return cleanups().size() == 2; }), dump(ns, "a"));
    CHECK(cleanups() == held);
    refresh_spec::finish_pods(ns, "s1");
    REQUIRE_MESSAGE(eventually([&] { return get_vm(ns, "a").is_null(); }), dump(ns, "a"));
}

TEST_CASE("a node label waits for the record: a join whose status write fails labels no node, and its volume "
          "leaving the spec before any record named it leaves no label behind") {
    using namespace sharing_spec;
    auto ns = fresh_namespace();
    create_secret(ns);
    auto source = std::make_shared<Source>();
    Controller c(options(source));
    create_vm(ns, "a", json::array{shared_volume(2)});
    REQUIRE(eventually([&] { return count_pods(ns) == 2; }));
    refresh_spec::finish_pods(ns, "s1");
    REQUIRE_MESSAGE(eventually([&] { return state_of(ns, "a") == "Running"; }), dump(ns, "a"));

    // b would join a's Ready copy at once, but the server refuses its status writes.
    auto& faults = server().faults();
    auto fired = faults.fired();
    faults.fail_next({.verb = "patch", .resource = "volumemanagers/status", .code = 500, .count = 10'000});
    create_vm(ns, "b", json::array{shared_volume(2)});
    REQUIRE(eventually([&] { return faults.fired() >= fired + 3; }));
    const auto joined = handlers::naming::node_label_key(ns, "b", "vol1");
    CHECK(count_nodes_labelled(joined) == 0);

    // vol1 leaves b's spec before any record named it; once writes go through, b serves vol9
    // and no node keeps a label of vol1.
    auto other = shared_volume(2);
    other.as_object()["id"] = "vol9";
    store().patch(vms, ns, "b", client::PatchType::Merge, json::value{{"spec", {{"volumeConfigs", json::array{other}}}}});
    REQUIRE(eventually([&] { return faults.fired() >= fired + 5; }));
    CHECK(count_nodes_labelled(joined) == 0);
    faults.clear();
    REQUIRE_MESSAGE(eventually([&] {
                        auto vm = get_vm(ns, "b");
                        return state_of(ns, "b") == "Running" &&
                               vm.at("status").at("observedGeneration") == vm.at("metadata").at("generation");
                    }),
                    dump(ns, "b"));
    // Its labels follow the record that first names vol9, moments after it.
    CHECK(eventually([&] { return count_nodes_labelled(handlers::naming::node_label_key(ns, "b", "vol9")) == 2; }));
    CHECK(count_nodes_labelled(joined) == 0);

    for (const auto* name : {"b", "a"}) store().remove(vms, ns, name);
    REQUIRE_MESSAGE(eventually([&] {
                        refresh_spec::finish_pods(ns, "s1");
                        return get_vm(ns, "a").is_null() && get_vm(ns, "b").is_null();
                    }),
                    std::string(dump(ns, "a") + dump(ns, "b")));
    CHECK(count_nodes_labelled(handlers::naming::node_label_key(ns, "b", "vol9")) == 0);
}

TEST_CASE("a node label removed right after this controller set it goes, although the node cache has not seen "
          "the set yet") {
    boost::asio::io_context io;
    client::Client cl(io.get_executor(), server().in_process_config());
    volumes::Caches caches;
    // Never started: the cache holds exactly what is put in it below, as a watch far behind.
    caches.nodes = std::make_shared<runtime::Informer<api::Node>>(std::make_shared<runtime::ClientListWatch>(cl));
    auto node = api::from_json<api::Node>(store().get(nodes, "", "node-2"));
    caches.nodes->store().apply(runtime::ChangeType::Added, std::make_shared<const api::Node>(node));
    volumes::VolumeManagerEvents events(std::make_shared<runtime::EventRecorder>(cl, runtime::EventRecorderOptions{}));
    runtime::OwnWrites own;
    volumes::SubResourceWriter writer(cl, caches, events, own);
    auto run = [&](boost::asio::awaitable<void> op) {
        auto f = boost::asio::co_spawn(io, std::move(op), boost::asio::use_future);
        io.restart();
        io.run();
        f.get();
    };
    const std::string key = "vck.intelai.org/writer-test.v";
    auto label = [&] {
        auto n = store().get(nodes, "", "node-2");  // named: string_at views into it
        return std::string(api::string_at(n, {"metadata", "labels", key}));
    };

    run(writer.set_node_label("node-2", key, "c1"));
    CHECK(label() == "c1");
    run(writer.set_node_label("node-2", key, ""));  // the cache still shows no label
    CHECK(label() == "");

    // Once the cache shows what was written, an unchanged label costs no request.
    auto cached = node;
    cached.metadata.labels[key] = "c2";
    run(writer.set_node_label("node-2", key, "c2"));
    CHECK(label() == "c2");
    caches.nodes->store().apply(runtime::ChangeType::Modified, std::make_shared<const api::Node>(cached));
    auto requests = server().in_process_requests();
    run(writer.set_node_label("node-2", key, "c2"));
    CHECK(server().in_process_requests() == requests);
    run(writer.set_node_label("node-2", key, ""));
    CHECK(label() == "");
}
