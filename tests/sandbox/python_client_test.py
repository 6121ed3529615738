#!/usr/bin/python3
"""The official Kubernetes Python client against vck-sandbox.

Usage: python_client_test.py PATH/TO/vck-sandbox
Prints one TAP line per check ("ok - ..." / "not ok - ...") and exits non-zero on failure.
Run with /usr/bin/python3: Debian's python3-kubernetes is installed for that interpreter.
"""
import datetime
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.request

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

CHECKS = []
FAILURES = []


def check(name):
    """Runs the decorated function at once as one check; an exception fails it."""

    def run(fn):
        try:
            fn()
            print(f"ok - {name}", flush=True)
        except Exception:  # noqa: BLE001 - any failure is a failed check
            FAILURES.append(name)
            print(f"not ok - {name}", flush=True)
            for line in traceback.format_exc().splitlines()[-12:]:
                print(f"#   {line}", flush=True)
        CHECKS.append(name)
        return fn

    return run


def expect(cond, what):
    if not cond:
        raise AssertionError(what)


def start_sandbox(exe, work):
    kubeconfig = os.path.join(work, "kubeconfig")
    log = open(os.path.join(work, "sandbox.log"), "w+")
    proc = subprocess.Popen([exe, "--port", "0", "--admin-port", "0", "--kubeconfig-out", kubeconfig],
                            stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 30
    admin = None
    while time.time() < deadline and proc.poll() is None:
        log.seek(0)
        m = re.search(r"^admin: (\S+)$", log.read(), re.M)
        if m:
            admin = m.group(1)
            break
        time.sleep(0.1)
    if admin is None:
        log.seek(0)
        raise RuntimeError("vck-sandbox did not start: " + log.read())
    return proc, kubeconfig, admin


def admin_get(admin, path):
    with urllib.request.urlopen(admin + path, timeout=10) as r:
        return json.load(r)


def admin_post(admin, path, body):
    req = urllib.request.Request(admin + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.load(r)


CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "gadgets.example.vck.io"},
    "spec": {
        "group": "example.vck.io",
        "scope": "Namespaced",
        "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
        "versions": [{
            "name": "v1", "served": True, "storage": True,
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "properties": {"size": {"type": "integer"}, "color": {"type": "string"}}},
            }}},
        }],
    },
}


def main():
    if len(sys.argv) < 2:
        print("usage: python_client_test.py PATH/TO/vck-sandbox", file=sys.stderr)
        return 2
    work = tempfile.mkdtemp()
    proc = None
    try:
        proc, kubeconfig, admin = start_sandbox(sys.argv[1], work)
        print("ok - vck-sandbox starts and writes a kubeconfig", flush=True)
        CHECKS.append("start")
        api_client = config.new_client_from_config(config_file=kubeconfig)
        v1 = client.CoreV1Api(api_client)
        custom = client.CustomObjectsApi(api_client)
        ext = client.ApiextensionsV1Api(api_client)
        ns = "default"

        @check("CoreV1Api creates a config map")
        def _():
            cm = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="py1", labels={"app": "py"}), data={"a": "1"})
            out = v1.create_namespaced_config_map(ns, cm)
            expect(out.metadata.name == "py1" and out.metadata.uid, f"unexpected answer {out.metadata}")

        @check("CoreV1Api lists with a label selector")
        def _():
            items = v1.list_namespaced_config_map(ns, label_selector="app=py").items
            expect([i.metadata.name for i in items] == ["py1"], f"got {[i.metadata.name for i in items]}")
            expect(v1.list_namespaced_config_map(ns, label_selector="app=other").items == [], "selector ignored")

        @check("a metadata-only list (as=PartialObjectMetadataList) carries each item's metadata and nothing else")
        def _():
            accept = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
            data = api_client.call_api(f"/api/v1/namespaces/{ns}/configmaps", "GET",
                                       header_params={"Accept": accept}, query_params=[("labelSelector", "app=py")],
                                       auth_settings=["BearerToken"], response_type="object", _return_http_data_only=True)
            expect(data["kind"] == "PartialObjectMetadataList" and data["apiVersion"] == "meta.k8s.io/v1", f"got {data}")
            expect([i["metadata"]["name"] for i in data["items"]] == ["py1"], f"got {data['items']}")
            expect(all(set(i) == {"kind", "apiVersion", "metadata"} for i in data["items"]), f"more than metadata: {data}")

        @check("an Accept the server cannot satisfy is 406 NotAcceptable")
        def _():
            try:
                api_client.call_api(f"/api/v1/namespaces/{ns}/configmaps/py1", "GET", header_params={"Accept": "application/xml"},
                                    auth_settings=["BearerToken"], response_type="object")
                expect(False, "no exception")
            except ApiException as e:
                expect(e.status == 406 and json.loads(e.body)["reason"] == "NotAcceptable", f"got {e.status} {e.body}")

        @check("CoreV1Api patches a config map")
        def _():
            out = v1.patch_namespaced_config_map("py1", ns, {"data": {"b": "2"}})
            expect(out.data == {"a": "1", "b": "2"}, f"got {out.data}")

        @check("CoreV1Api gets a 404 ApiException for a missing object")
        def _():
            try:
                v1.read_namespaced_config_map("nope", ns)
            except ApiException as e:
                expect(e.status == 404, f"status {e.status}")
                body = json.loads(e.body)
                expect(body["kind"] == "Status" and body["reason"] == "NotFound", e.body)
                raw = e.body.decode() if isinstance(e.body, bytes) else e.body
                expect(raw.startswith('{"kind":"Status","apiVersion":"v1",'), f"kind first, as kube-apiserver writes it: {raw}")
                return
            raise AssertionError("no exception")

        @check("CoreV1Api deletes a config map")
        def _():
            v1.delete_namespaced_config_map("py1", ns)
            try:
                v1.read_namespaced_config_map("py1", ns)
            except ApiException as e:
                expect(e.status == 404, f"status {e.status}")
                return
            raise AssertionError("still there")

        @check("a deletion that finalizers hold answers 200, or 202 only when orphanDependents=false asks for it")
        def _():
            for name in ("held1", "held2"):
                v1.create_namespaced_config_map(ns, client.V1ConfigMap(
                    metadata=client.V1ObjectMeta(name=name, finalizers=["example.com/hold"])))
            r = v1.delete_namespaced_config_map("held1", ns, propagation_policy="Foreground", _preload_content=False)
            expect(r.status == 200, f"Foreground: status {r.status}")
            r = v1.delete_namespaced_config_map("held2", ns, orphan_dependents=False, _preload_content=False)
            expect(r.status == 202, f"orphanDependents=false: status {r.status}")
            for name in ("held1", "held2"):
                v1.patch_namespaced_config_map(name, ns, {"metadata": {"finalizers": None}})

        @check("a label value over 63 characters is refused with 422 and kube-apiserver's message")
        def _():
            try:
                v1.create_namespaced_config_map(ns, client.V1ConfigMap(
                    metadata=client.V1ObjectMeta(name="long-label", labels={"k": "v" * 64})))
            except ApiException as e:
                expect(e.status == 422, f"status {e.status}")
                body = json.loads(e.body)
                expect(body["message"] == 'ConfigMap "long-label" is invalid: metadata.labels: Invalid value: "'
                       + "v" * 64 + '": must be no more than 63 characters', body["message"])
                expect(body["details"]["causes"][0]["field"] == "metadata.labels", e.body)
                return
            raise AssertionError("created")

        @check("ApiextensionsV1Api creates a CRD")
        def _():
            r = ext.create_custom_resource_definition(CRD, _preload_content=False)
            expect(r.status == 201, f"status {r.status}")

        @check("CustomObjectsApi creates a custom object")
        def _():
            body = {"apiVersion": "example.vck.io/v1", "kind": "Gadget", "metadata": {"name": "g1"},
                    "spec": {"size": 1, "color": "red"}}
            for _ in range(50):  # the CRD's resource is served at once, but be tolerant
                try:
                    out = custom.create_namespaced_custom_object("example.vck.io", "v1", ns, "gadgets", body)
                    break
                except ApiException as e:
                    if e.status != 404:
                        raise
                    time.sleep(0.1)
            expect(out["metadata"]["name"] == "g1", str(out))

        @check("CustomObjectsApi lists custom objects")
        def _():
            out = custom.list_namespaced_custom_object("example.vck.io", "v1", ns, "gadgets")
            expect([i["metadata"]["name"] for i in out["items"]] == ["g1"], str(out))
            expect(out["kind"] == "GadgetList", out["kind"])

        @check("CustomObjectsApi patches a custom object (merge patch)")
        def _():
            out = custom.patch_namespaced_custom_object("example.vck.io", "v1", ns, "gadgets", "g1",
                                                        {"spec": {"size": 4}})
            expect(out["spec"] == {"size": 4, "color": "red"}, str(out["spec"]))

        @check("CustomObjectsApi deletes a custom object")
        def _():
            custom.delete_namespaced_custom_object("example.vck.io", "v1", ns, "gadgets", "g1")
            out = custom.list_namespaced_custom_object("example.vck.io", "v1", ns, "gadgets")
            expect(out["items"] == [], str(out))

        @check("watch.Watch streams ADDED, MODIFIED and DELETED")
        def _():
            rv = v1.list_namespaced_config_map(ns).metadata.resource_version

            def writer():
                time.sleep(0.5)
                v1.create_namespaced_config_map(ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="w1")))
                v1.patch_namespaced_config_map("w1", ns, {"data": {"x": "y"}})
                v1.delete_namespaced_config_map("w1", ns)

            t = threading.Thread(target=writer)
            t.start()
            seen = []
            w = watch.Watch()
            for ev in w.stream(v1.list_namespaced_config_map, ns, resource_version=rv, timeout_seconds=10):
                if ev["object"].metadata.name == "w1":
                    seen.append(ev["type"])
                if ev["type"] == "DELETED":
                    w.stop()
            t.join()
            expect(seen == ["ADDED", "MODIFIED", "DELETED"], f"saw {seen}")

        @check("a watch from a compacted resourceVersion gets 410, and resumes after a relist")
        def _():
            old_rv = v1.list_namespaced_config_map(ns).metadata.resource_version
            v1.create_namespaced_config_map(ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="c1")))
            admin_post(admin, "/faults/compact", {})
            gone = False
            try:
                for ev in watch.Watch().stream(v1.list_namespaced_config_map, ns, resource_version=old_rv,
                                               timeout_seconds=5):
                    if ev["type"] == "ERROR" and ev["raw_object"].get("code") == 410:
                        gone = True
                        break
            except ApiException as e:
                gone = e.status == 410
            expect(gone, "no 410 for a compacted resourceVersion")
            # Relist, then watch again from the fresh resourceVersion.
            fresh = v1.list_namespaced_config_map(ns)
            expect("c1" in [i.metadata.name for i in fresh.items], "relist misses c1")
            threading.Timer(0.5, lambda: v1.create_namespaced_config_map(
                ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="c2")))).start()
            w = watch.Watch()
            got = None
            for ev in w.stream(v1.list_namespaced_config_map, ns, resource_version=fresh.metadata.resource_version,
                               timeout_seconds=10):
                got = (ev["type"], ev["object"].metadata.name)
                w.stop()
            expect(got == ("ADDED", "c2"), f"got {got}")

        events_v1 = client.EventsV1Api(api_client)

        @check("EventsV1Api creates an event that CoreV1Api lists, converted")
        def _():
            # A namespace of its own: a legacy event has no eventTime, which this client's
            # EventsV1Event refuses to decode (as it does against a real server).
            v1.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="py-events")))
            ev = client.EventsV1Event(
                metadata=client.V1ObjectMeta(name="py.delivered", namespace="py-events"),
                event_time=datetime.datetime(2025, 1, 1, tzinfo=datetime.timezone.utc),
                reporting_controller="vck.io/python", reporting_instance="py-0", action="Delivering",
                reason="Delivered", type="Normal", note="delivered by python",
                regarding=client.V1ObjectReference(kind="Pod", name="p", namespace="py-events"))
            out = events_v1.create_namespaced_event("py-events", ev)
            expect(out.note == "delivered by python" and out.metadata.uid, f"unexpected answer {out}")
            core = v1.list_namespaced_event("py-events").items
            expect([(e.metadata.name, e.message, e.reporting_component) for e in core] ==
                   [("py.delivered", "delivered by python", "vck.io/python")], f"core/v1 lists {core}")

        @check("EventsV1Api lists with a regarding.name field selector")
        def _():
            items = events_v1.list_namespaced_event("py-events", field_selector="regarding.name=p").items
            expect([e.metadata.name for e in items] == ["py.delivered"], f"got {items}")
            none = events_v1.list_namespaced_event("py-events", field_selector="regarding.name=q").items
            expect(none == [], f"got {none}")

        @check("EventsV1Api gets a 422 for an event without a reporting controller")
        def _():
            ev = client.EventsV1Event(
                metadata=client.V1ObjectMeta(name="py.bad", namespace="py-events"),
                event_time=datetime.datetime(2025, 1, 1, tzinfo=datetime.timezone.utc),
                reporting_instance="py-0", action="Delivering", reason="Delivered", type="Normal",
                regarding=client.V1ObjectReference(kind="Pod", name="p", namespace="py-events"))
            try:
                events_v1.create_namespaced_event("py-events", ev)
            except ApiException as e:
                expect(e.status == 422, f"status {e.status}")
                expect("reportingController: Required value" in json.loads(e.body)["message"], e.body)
                return
            raise AssertionError("no exception")

        @check("an injected 503 with Retry-After is retried by the client (urllib3 honours Retry-After)")
        def _():
            before = admin_get(admin, "/faults")["fired"]
            admin_post(admin, "/faults/fail", {"verb": "list", "resource": "configmaps", "code": 503,
                                               "retryAfterSeconds": 1})
            v1.list_namespaced_config_map(ns)  # must not raise: the retry got through
            expect(admin_get(admin, "/faults")["fired"] == before + 1, "the fault did not fire")

        @check("an injected 500 reaches the client as an ApiException with a Status body")
        def _():
            admin_post(admin, "/faults/fail", {"verb": "create", "resource": "configmaps", "code": 500,
                                               "message": "injected by python_client_test"})
            try:
                v1.create_namespaced_config_map(ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="f1")))
            except ApiException as e:
                expect(e.status == 500, f"status {e.status}")
                expect(json.loads(e.body)["message"] == "injected by python_client_test", e.body)
                return
            raise AssertionError("no exception")

    except Exception:  # noqa: BLE001
        FAILURES.append("setup")
        print("not ok - setup", flush=True)
        for line in traceback.format_exc().splitlines():
            print(f"#   {line}", flush=True)
    finally:
        if proc is not None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
        if FAILURES:
            try:
                with open(os.path.join(work, "sandbox.log")) as f:
                    for line in f.read().splitlines()[-20:]:
                        print(f"#   sandbox: {line}")
            except OSError:
                pass
        shutil.rmtree(work, ignore_errors=True)
    print(f"1..{len(CHECKS) + (1 if 'setup' in FAILURES else 0)}")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
