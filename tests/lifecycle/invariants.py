#!/usr/bin/env python3
"""What a user of vck can check from outside: every VolumeManager's record of the copies it
placed (status.copies) against the node labels and the node directories of a vck-sandbox.

Rules (--rules picks some; all by default):
  1  each node that the label `key=digest` of a volume's status nodeAffinity selects holds
     <data>/nodes/<node>/<status hostPath> byte-identical to one seeded dataset, and a digest
     always holds the same dataset (remembered across calls in --state); a dataset named
     NAME@VERSION is a later version of the source NAME (its store prefix changed), and a
     config made before the change may hold either version;
  2  every directory named vck-resource-* (and *.vck-fetch) under <data>/nodes/*/ is
     accounted for by a copy in some VolumeManager's status.copies (same node, and its path
     or path + ".vck-fetch");
  3  every node label with prefix vck.intelai.org/ is accounted for by a copy on that node
     whose config is the label's value.

The API server is read twice around the file system walk, and the walk redone until both
reads agree, so a violation is never an artefact of reading while the controller moves.
Prints one `violation: ...` line per violation (exit 1); with --report also
`volume NS/VM/ID dataset=NAME digest=D nodes=A,B path=P` per volume in status and
`cleanup NODE DIRNAME` per pod running `vck-fetch delete`. Exit 2 when it cannot read.
"""
import argparse
import base64
import hashlib
import json
import os
import ssl
import sys
import tempfile
import http.client
import urllib.parse

PREFIX = "vck.intelai.org/"


class Api:
    def __init__(self, kubeconfig_json):
        cfg = json.load(open(kubeconfig_json))
        ctx_name = cfg.get("current-context")
        ctx = next(c["context"] for c in cfg["contexts"] if c["name"] == ctx_name)
        cluster = next(c["cluster"] for c in cfg["clusters"] if c["name"] == ctx["cluster"])
        user = next(u["user"] for u in cfg["users"] if u["name"] == ctx["user"])
        self.server = urllib.parse.urlparse(cluster["server"])
        self.ssl = ssl.create_default_context()
        ca = cluster.get("certificate-authority-data")
        if ca:
            self.ssl.load_verify_locations(cadata=base64.b64decode(ca).decode())
        self.headers = {"Accept": "application/json"}
        if user.get("token"):
            self.headers["Authorization"] = "Bearer " + user["token"]
        elif user.get("client-certificate-data"):
            with tempfile.NamedTemporaryFile("w", suffix=".pem", delete=False) as f:
                f.write(base64.b64decode(user["client-certificate-data"]).decode())
                f.write(base64.b64decode(user["client-key-data"]).decode())
            self.ssl.load_cert_chain(f.name)
            os.unlink(f.name)

        self.conn = None

    def items(self, path):
        """The items of a list, over one kept-alive connection (a TLS handshake per request
        costs more than the request against a sanitizer build)."""
        for attempt in (1, 2):
            if self.conn is None:
                self.conn = http.client.HTTPSConnection(self.server.hostname, self.server.port,
                                                        context=self.ssl, timeout=20)
            try:
                self.conn.request("GET", path, headers=self.headers)
                r = self.conn.getresponse()
                body = r.read()
                if r.status != 200:
                    raise RuntimeError("GET %s: %d %s" % (path, r.status, body[:200]))
                return json.loads(body).get("items", [])
            except (http.client.HTTPException, OSError):
                self.conn.close()
                self.conn = None
                if attempt == 2:
                    raise


def tree(root):
    """Relative path -> sha256 of content (files) or None (directories), below root."""
    out = {}
    for d, dirs, files in os.walk(root):
        rel = os.path.relpath(d, root)
        for name in dirs:
            out[os.path.normpath(os.path.join(rel, name))] = None
        for name in files:
            p = os.path.join(d, name)
            with open(p, "rb") as f:
                out[os.path.normpath(os.path.join(rel, name))] = hashlib.sha256(f.read()).hexdigest()
    return out


def differences(got, want):
    """(how many entries differ, what differs in a few words)."""
    missing = sorted(set(want) - set(got))
    extra = sorted(set(got) - set(want))
    changed = sorted(p for p in set(got) & set(want) if got[p] != want[p])
    parts = []
    for label, items in (("missing", missing), ("extra", extra), ("differing", changed)):
        if items:
            parts.append("%s %s" % (label, ",".join(items[:3]) + (",..." if len(items) > 3 else "")))
    return len(missing) + len(extra) + len(changed), "; ".join(parts)


def vck_dirs(data):
    """(node, host path) of every vck-resource-* directory under <data>/nodes/*/."""
    found = []
    nodes_root = os.path.join(data, "nodes")
    if not os.path.isdir(nodes_root):
        return found
    for node in sorted(os.listdir(nodes_root)):
        base = os.path.join(nodes_root, node)
        for d, dirs, _ in os.walk(base):
            keep = []
            for name in dirs:
                if name.startswith("vck-resource-"):
                    found.append((node, "/" + os.path.relpath(os.path.join(d, name), base)))
                else:
                    keep.append(name)
            dirs[:] = keep
    return found


def api_view(vms, nodes):
    """What the checks read from the API server, to compare two reads."""
    v = [(m["metadata"].get("namespace"), m["metadata"]["name"], m.get("status", {}).get("copies"),
          m.get("status", {}).get("volumes")) for m in vms]
    n = [(x["metadata"]["name"], x["metadata"].get("labels", {})) for x in nodes]
    return json.dumps([v, n], sort_keys=True)


def status_volumes(vm):
    """(volume id, label key, digests, host path) of each volume whose status names a copy."""
    for vol in vm.get("status", {}).get("volumes") or []:
        path = ((vol.get("volumeSource") or {}).get("hostPath") or {}).get("path")
        terms = (((vol.get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or {})
                 .get("nodeSelectorTerms") or [])
        exprs = (terms[0].get("matchExpressions") or []) if terms else []
        if not path or not exprs:
            continue
        yield vol.get("id"), exprs[0].get("key", ""), exprs[0].get("values") or [], path


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kubeconfig-json", required=True, help="`kubectl config view --raw -o json`")
    ap.add_argument("--data", required=True, help="the sandbox's data root")
    ap.add_argument("--dataset", action="append", default=[], help="NAME=DIR, a seeded dataset")
    ap.add_argument("--state", help="JSON file remembering which dataset each digest held")
    ap.add_argument("--rules", default="1,2,3")
    ap.add_argument("--report", action="store_true")
    a = ap.parse_args()
    rules = set(a.rules.split(","))
    datasets = {}
    for spec in a.dataset:
        name, _, d = spec.partition("=")
        datasets[name] = tree(d)
    known = {}
    if a.state and os.path.exists(a.state):
        known = json.load(open(a.state))

    api = Api(a.kubeconfig_json)
    try:
        for _ in range(10):
            vms = api.items("/apis/vck.intelai.org/v1alpha1/volumemanagers")
            nodes = api.items("/api/v1/nodes")
            pods = api.items("/api/v1/pods")
            found = vck_dirs(a.data)
            trees = {}
            for vm in vms:
                for _, key, digests, path in status_volumes(vm):
                    for n in nodes:
                        if n["metadata"].get("labels", {}).get(key) in digests:
                            p = os.path.join(a.data, "nodes", n["metadata"]["name"], path.lstrip("/"))
                            trees[p] = tree(p) if os.path.isdir(p) else None
            if api_view(vms, nodes) == api_view(api.items("/apis/vck.intelai.org/v1alpha1/volumemanagers"),
                                                api.items("/api/v1/nodes")):
                break
        else:
            print("violation: the API server never held still for a consistent read")
            return 1
    except Exception as e:  # noqa: BLE001 - any failure to read is reported, not a violation
        print("cannot read the cluster: %s" % e)
        return 2

    violations = []
    copies = []  # (vm, copy)
    for vm in vms:
        for c in vm.get("status", {}).get("copies") or []:
            copies.append(("%s/%s" % (vm["metadata"].get("namespace"), vm["metadata"]["name"]), c))
    report = []
    for vm in vms:
        vmname = "%s/%s" % (vm["metadata"].get("namespace"), vm["metadata"]["name"])
        for vid, key, digests, path in status_volumes(vm):
            if "1" in rules and not key.startswith(PREFIX):
                violations.append("%s/%s: status nodeAffinity key %r lacks the prefix %s" % (vmname, vid, key, PREFIX))
            for digest in digests:
                holders = sorted(n["metadata"]["name"] for n in nodes if n["metadata"].get("labels", {}).get(key) == digest)
                seen = set()
                for node in holders:
                    p = os.path.join(a.data, "nodes", node, path.lstrip("/"))
                    got = trees.get(p)
                    if got is None:
                        violations.append("%s/%s: node %s carries %s=%s but has no directory %s" % (vmname, vid, node, key, digest, path))
                        continue
                    match = [name for name, want in datasets.items() if want == got]
                    if not match:
                        near = min(datasets, key=lambda name: differences(got, datasets[name])[0]) if datasets else None
                        why = "closest %s: %s" % (near, differences(got, datasets[near])[1]) if near else "no datasets given"
                        violations.append("%s/%s: %s on node %s is no seeded dataset (%s)" % (vmname, vid, path, node, why))
                        continue
                    seen.add(match[0])
                    source = match[0].split("@")[0]
                    if known.setdefault(digest, source) != source:
                        violations.append("%s/%s: config %s held dataset %s before, now %s on node %s" % (
                            vmname, vid, digest, known[digest], match[0], node))
                report.append("volume %s/%s dataset=%s digest=%s nodes=%s path=%s" % (
                    vmname, vid, ",".join(sorted(seen)) or "-", digest, ",".join(holders) or "-", path))
    if "2" in rules:
        for node, path in found:
            if not any(c.get("node") == node and path in (c.get("path"), (c.get("path") or "") + ".vck-fetch")
                       for _, c in copies):
                violations.append("node %s: %s is in no VolumeManager's status.copies" % (node, path))
    if "3" in rules:
        for n in nodes:
            name = n["metadata"]["name"]
            for key, value in sorted((n["metadata"].get("labels") or {}).items()):
                if key.startswith(PREFIX) and not any(c.get("node") == name and c.get("config") == value for _, c in copies):
                    violations.append("node %s: label %s=%s matches no copy on that node" % (name, key, value))
    for p in pods:
        for c in p.get("spec", {}).get("containers", []):
            args = c.get("args") or []
            if args[:1] == ["delete"] and len(args) > 1:
                report.append("cleanup %s %s" % (p["spec"].get("nodeName", "-"), os.path.basename(args[1].rstrip("/"))))
    if a.state:
        with open(a.state, "w") as f:
            json.dump(known, f)
    for v in violations:
        print("violation: " + v)
    if a.report:
        for r in report:
            print(r)
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
