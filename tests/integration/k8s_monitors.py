"""prometheus-operator monitors in the manifests (used by k8s_check.py).

The kubernetes client has no models for the monitoring.coreos.com CRDs, so
ServiceMonitor and PodMonitor are walked against the subset of their
monitoring.coreos.com/v1 schema written below (an unknown field, a wrong
type or a missing required field is an error naming its path), then
cross-checked against the other documents: the selector matches Services
(ServiceMonitor) or pod templates (PodMonitor) in the namespaces it names,
each endpoint's port is a named port of every one of them, one Service per
set of pods (two would scrape each pod twice), and the collector's endpoints
keep the training job's label (honorLabels: true).
"""
import re

import k8s_argus

DURATION = re.compile(r"^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?"
                      r"(([0-9]+)s)?(([0-9]+)ms)?)$")
API = "monitoring.coreos.com/v1"

# type: "str", "int", "bool", "duration", "map" (string to string), "any",
# [type] (a list), or a dict: field -> (type, required)
SELECTOR = {"matchLabels": ("map", False), "matchExpressions": (["any"], False)}
NS_SELECTOR = {"any": ("bool", False), "matchNames": (["str"], False)}
RELABEL = {"sourceLabels": (["str"], False), "separator": ("str", False),
           "targetLabel": ("str", False), "regex": ("str", False), "modulus": ("int", False),
           "replacement": ("str", False), "action": ("str", False)}
ENDPOINT = {"port": ("str", False), "targetPort": ("any", False), "path": ("str", False),
            "scheme": ("str", False), "params": ("any", False), "interval": ("duration", False),
            "scrapeTimeout": ("duration", False), "honorLabels": ("bool", False),
            "honorTimestamps": ("bool", False), "relabelings": ([RELABEL], False),
            "metricRelabelings": ([RELABEL], False), "tlsConfig": ("any", False),
            "bearerTokenSecret": ("any", False), "authorization": ("any", False),
            "followRedirects": ("bool", False), "enableHttp2": ("bool", False)}
COMMON = {"jobLabel": ("str", False), "namespaceSelector": (NS_SELECTOR, False),
          "selector": (SELECTOR, True), "sampleLimit": ("int", False),
          "podTargetLabels": (["str"], False)}
SPECS = {
    "ServiceMonitor": dict(COMMON, endpoints=([ENDPOINT], True), targetLabels=(["str"], False)),
    "PodMonitor": dict(COMMON, podMetricsEndpoints=([ENDPOINT], True)),
}
METADATA = {"name": ("str", True), "namespace": ("str", False), "labels": ("map", False),
            "annotations": ("map", False)}


def is_monitor(doc):
    return doc.get("apiVersion") == API and doc.get("kind") in SPECS


def walk(v, t, path, err):
    scalar = {"str": str, "int": int, "bool": bool, "duration": str}
    if isinstance(t, list):
        if not isinstance(v, list):
            return err(path, "expected an array, got %s" % type(v).__name__)
        for i, x in enumerate(v):
            walk(x, t[0], "%s[%d]" % (path, i), err)
    elif isinstance(t, dict):
        if not isinstance(v, dict):
            return err(path, "expected an object, got %s" % type(v).__name__)
        for k, x in v.items():
            if k not in t:
                err("%s.%s" % (path, k), "unknown field '%s'" % k)
            else:
                walk(x, t[k][0], "%s.%s" % (path, k), err)
        for k, (_, required) in t.items():
            if required and k not in v:
                err(path, "required field '%s' missing" % k)
    elif t == "map":
        if not isinstance(v, dict) or not all(isinstance(x, str) for x in v.values()):
            err(path, "expected a map of strings")
    elif t in scalar:
        if not isinstance(v, scalar[t]) or (t == "int" and isinstance(v, bool)):
            err(path, "expected %s, got %s" % (t, type(v).__name__))
        elif t == "duration" and not DURATION.match(v):
            err(path, "'%s' is not a Prometheus duration" % v)


def walk_doc(where, doc, err):
    """Schema check of one ServiceMonitor or PodMonitor."""
    path = "%s %s/%s" % (where, doc["kind"], (doc.get("metadata") or {}).get("name"))
    walk(doc, {"apiVersion": ("str", True), "kind": ("str", True),
               "metadata": (METADATA, True), "spec": (SPECS[doc["kind"]], True)}, path, err)


def namespaces(mon):
    ns = mon["spec"].get("namespaceSelector") or {}
    own = (mon.get("metadata") or {}).get("namespace", "default")
    return None if ns.get("any") else set(ns.get("matchNames") or [own])


def selects(mon, labels, ns):
    want = (mon["spec"].get("selector") or {}).get("matchLabels") or {}
    allowed = namespaces(mon)
    return (allowed is None or ns in allowed) and all(labels.get(k) == v for k, v in want.items())


def check_service_monitor(where, mon, docs, err):
    svcs = [d for _, d in docs if d.get("kind") == "Service" and
            selects(mon, (d.get("metadata") or {}).get("labels") or {},
                    (d.get("metadata") or {}).get("namespace", "default"))]
    if not svcs:
        return err(where, "ServiceMonitor selects no Service")
    seen = {}
    for s in svcs:
        key = tuple(sorted(((s.get("spec") or {}).get("selector") or {}).items()))
        if key in seen:
            err(where, "ServiceMonitor selects Services %s and %s of the same pods: each pod "
                "is scraped twice" % (seen[key], s["metadata"]["name"]))
        seen[key] = s["metadata"]["name"]
        names = {p.get("name") for p in (s.get("spec") or {}).get("ports") or []}
        for ep in mon["spec"].get("endpoints") or []:
            if ep.get("port") not in names:
                err(where, "endpoint port '%s' is not a port of Service %s" %
                    (ep.get("port"), s["metadata"]["name"]))
        if s["metadata"].get("labels", {}).get("app.kubernetes.io/name") == "argus-collector":
            if not all(ep.get("honorLabels") for ep in mon["spec"].get("endpoints") or []):
                err(where, "the collector's endpoints need honorLabels: true (label job of "
                    "the argus_job_* series)")


def check_pod_monitor(where, mon, docs, err):
    pods = [(top, t) for _, top, t in k8s_argus.pod_templates(docs)
            if selects(mon, (t.get("metadata") or {}).get("labels") or {},
                       (top.get("metadata") or {}).get("namespace", "default"))]
    if not pods:
        return err(where, "PodMonitor selects no pods")
    for top, t in pods:
        names = {p.get("name") for c in (t.get("spec") or {}).get("containers") or []
                 for p in c.get("ports") or []}
        for ep in mon["spec"].get("podMetricsEndpoints") or []:
            if ep.get("port") not in names:
                err(where, "endpoint port '%s' is not a container port of %s %s" %
                    (ep.get("port"), top.get("kind"), top["metadata"]["name"]))


def check(docs, err):
    """Cross-check every monitor in docs (schema errors already reported)."""
    for where, d in docs:
        if not is_monitor(d) or not isinstance(d.get("spec"), dict):
            continue
        if d["kind"] == "ServiceMonitor":
            check_service_monitor(where, d, docs, err)
        else:
            check_pod_monitor(where, d, docs, err)
