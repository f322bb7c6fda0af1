#!/usr/bin/python3
"""Validates the Kubernetes manifests under deploy/k8s (or any directory).

Every YAML document is walked against the kubernetes client's models
(python3-kubernetes): the model class comes from apiVersion and kind, fields
are looked up in attribute_map, types in openapi_types; an unknown field, a
value of the wrong JSON type or a missing required field is an error naming
its path. Then the argus-specific cross-checks: volumes and ConfigMaps that
mounts name exist, the embedded daemon configs pass --check-config with the
container's own args, and the ports and paths in them agree with the
containers, the Services, the job pod example and deploy/config/*.conf.

usage: k8s_check.py --bin BUILD/bin --conf-dir deploy/config DIR...
Prints one line per error and exits 1, or prints "ok: N documents" and exits 0.
"""
import argparse
import datetime
import os
import re
import subprocess
import sys
import tempfile

import yaml
from kubernetes import client
from kubernetes.client import models

ERRORS = []

# Quantities (cpu: 1, storage: 10Gi) are strings in the models but the API
# also takes numbers for them.
QUANTITY_PARENTS = {"limits", "requests", "capacity", "hard"}
QUANTITY_FIELDS = {"sizeLimit", "storage"}


def err(path, msg):
    ERRORS.append("%s: %s" % (path, msg))


def model_class(doc, where):
    api, kind = doc.get("apiVersion"), doc.get("kind")
    if not isinstance(api, str) or not isinstance(kind, str):
        err(where, "apiVersion and kind must be strings")
        return None
    version = api.split("/")[-1]
    name = version[0].upper() + version[1:] + kind
    cls = getattr(models, name, None)
    if cls is None or not hasattr(cls, "openapi_types"):
        err(where, "unknown apiVersion/kind %s/%s (no model %s)" % (api, kind, name))
        return None
    return cls


def type_name(v):
    return {dict: "object", list: "array", str: "string", bool: "boolean",
            int: "integer", float: "number", type(None): "null"}.get(type(v), type(v).__name__)


def walk(value, typ, path, key):
    """Check value against the openapi type string typ at path."""
    if value is None:
        return
    m = re.fullmatch(r"list\[(.+)\]", typ)
    if m:
        if not isinstance(value, list):
            return err(path, "expected an array (%s), got %s" % (typ, type_name(value)))
        for i, v in enumerate(value):
            walk(v, m.group(1), "%s[%d]" % (path, i), key)
        return
    m = re.fullmatch(r"dict\((\w+), (.+)\)", typ)
    if m:
        if not isinstance(value, dict):
            return err(path, "expected a map (%s), got %s" % (typ, type_name(value)))
        for k, v in value.items():
            if not isinstance(k, str):
                err(path, "map key %r is not a string" % (k,))
            sub = m.group(2)
            if sub == "str" and key in QUANTITY_PARENTS and isinstance(v, (int, float)) \
                    and not isinstance(v, bool):
                continue
            walk(v, sub, "%s.%s" % (path, k), k)
        return
    if typ == "object":
        return
    if typ == "str":
        if key in QUANTITY_FIELDS and isinstance(value, (int, float)) and not isinstance(value, bool):
            return
        if not isinstance(value, str):
            err(path, "expected a string, got %s %r" % (type_name(value), value))
        return
    if typ == "int":
        if not isinstance(value, int) or isinstance(value, bool):
            err(path, "expected an integer, got %s %r" % (type_name(value), value))
        return
    if typ == "float":
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            err(path, "expected a number, got %s %r" % (type_name(value), value))
        return
    if typ == "bool":
        if not isinstance(value, bool):
            err(path, "expected a boolean, got %s %r" % (type_name(value), value))
        return
    if typ in ("datetime", "date"):
        if not isinstance(value, (str, datetime.date)):
            err(path, "expected a date-time string, got %s" % type_name(value))
        return
    cls = getattr(models, typ, None)
    if cls is None:
        return err(path, "checker: no model %s" % typ)
    walk_model(value, cls, path)


def walk_model(value, cls, path):
    if not isinstance(value, dict):
        return err(path, "expected an object (%s), got %s" % (cls.__name__, type_name(value)))
    by_json = {j: a for a, j in cls.attribute_map.items()}
    kwargs = {}
    for k, v in value.items():
        attr = by_json.get(k)
        if attr is None:
            err("%s.%s" % (path, k), "unknown field '%s' in %s" % (k, cls.__name__))
            continue
        walk(v, cls.openapi_types[attr], "%s.%s" % (path, k), k)
        kwargs[attr] = v
    cfg = client.Configuration()
    cfg.client_side_validation = True
    try:
        cls(local_vars_configuration=cfg, **kwargs)
    except ValueError as e:
        err(path, "%s: %s" % (cls.__name__, e))


def load(dirs):
    docs = []
    for d in dirs:
        files = [d] if os.path.isfile(d) else sorted(
            os.path.join(r, f) for r, _, fs in os.walk(d) for f in fs
            if f.endswith((".yaml", ".yml")))
        for f in files:
            try:
                with open(f) as fh:
                    for i, doc in enumerate(yaml.safe_load_all(fh)):
                        if doc is None:
                            continue
                        where = "%s#%d" % (os.path.relpath(f), i + 1)
                        if not isinstance(doc, dict):
                            err(where, "a document must be a mapping")
                            continue
                        docs.append((where, doc))
            except yaml.YAMLError as e:
                err(os.path.relpath(f), "YAML: %s" % e)
    return docs


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import k8s_argus  # noqa: E402  the argus cross-checks
    import k8s_monitors  # noqa: E402  ServiceMonitor, PodMonitor (no client models)

    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--conf-dir", required=True)
    ap.add_argument("dirs", nargs="+")
    a = ap.parse_args()
    docs = load(a.dirs)
    if not docs and not ERRORS:
        err(",".join(a.dirs), "no YAML documents")
    for where, doc in docs:
        cls = None if k8s_monitors.is_monitor(doc) else model_class(doc, where)
        if k8s_monitors.is_monitor(doc):
            k8s_monitors.walk_doc(where, doc, err)
        elif cls:
            walk_model(doc, cls, "%s %s/%s" % (where, doc.get("kind"),
                                                (doc.get("metadata") or {}).get("name")))
        if not (doc.get("metadata") or {}).get("name"):
            err(where, "metadata.name is missing")
    with tempfile.TemporaryDirectory() as tmp:
        k8s_argus.check(docs, a.bin, a.conf_dir, tmp, err)
    k8s_monitors.check(docs, err)
    for e in ERRORS:
        print("error: " + e)
    if ERRORS:
        sys.exit(1)
    print("ok: %d documents" % len(docs))
