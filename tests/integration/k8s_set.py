"""The collector set, the PodDisruptionBudgets and the Alertmanager cluster of
the manifests agree with each other (used by k8s_argus.check; issue 28).

- The collectors: more than one replica needs cluster.dns (or cluster.set);
  cluster.dns is the StatefulSet's own headless Service (the pods' reverse
  names are the members' names), leaves not-ready pods out, and has the grpc
  port; cluster.self is the pod's name from the downward API; the agents'
  collector.dns is the same set.
- Every PodDisruptionBudget selects a pod template here and lets at least
  one pod go; the collectors have one that lets one go at a time (two could
  be a job's primary and standby).
- An Alertmanager StatefulSet (--cluster.listen-address) names every replica
  as a --cluster.peer under its headless Service, which has the gossip port
  (TCP and UDP) and publishes not-ready members; the collectors'
  alerts.alertmanager sends to every replica; its config passes amtool.
"""
import os
import re
import shutil
import subprocess

SVC = re.compile(r"([a-z0-9-]+)\.([a-z0-9-]+)\.svc(\.cluster\.local)?\.?")


def raw_args(c):
    """--key value / --key=value pairs of a container, in order."""
    a, out = (c.get("command") or [])[1:] + (c.get("args") or []), []
    i = 0
    while i < len(a):
        if a[i].startswith("--") and "=" in a[i]:
            k, v = a[i][2:].split("=", 1)
            out.append((k, v))
        elif a[i].startswith("--"):
            out.append((a[i][2:], a[i + 1] if i + 1 < len(a) else ""))
            i += 1
        i += 1
    return out


def hostport(addr):
    host, _, port = addr.rpartition(":")
    return host, int(port) if port.isdigit() else None


def service_named(host, services):
    """The Service a NAME.NAMESPACE.svc[.cluster.local] host names, or None."""
    m = SVC.fullmatch(host)
    return services.get((m.group(2), m.group(1))) if m else None


def pod_name(top, i, svc_host):
    """The stable DNS name of a StatefulSet's replica i (no .cluster.local)."""
    return "%s-%d.%s" % (top["metadata"]["name"], i, svc_host)


def replicas_of(d):
    """spec.replicas (1 when unset; a wrong type is reported by the model walk)."""
    r = (d.get("spec") or {}).get("replicas", 1)
    return r if isinstance(r, int) and not isinstance(r, bool) else 1


def norm(host):
    return host.rstrip(".").replace(".svc.cluster.local", ".svc")


def statefulsets(docs, prog):
    """(where, doc, container) of each StatefulSet running prog."""
    for where, d in docs:
        if d.get("kind") != "StatefulSet":
            continue
        spec = ((d.get("spec") or {}).get("template") or {}).get("spec") or {}
        for c in spec.get("containers") or []:
            if os.path.basename((c.get("command") or [""])[0]) == prog:
                yield where, d, c


def check(docs, effective, err):
    services = {((d.get("metadata") or {}).get("namespace", "default"), d["metadata"]["name"]): d
                for _, d in docs if d.get("kind") == "Service"}
    check_pdbs(docs, err)
    for where, top, c in statefulsets(docs, "argus-collector"):
        check_collectors(where, top, c, services, effective, err)
    for where, top, c in statefulsets(docs, "alertmanager"):
        check_alertmanager(where, top, c, services, effective, docs, err)


def check_collectors(where, top, c, services, effective, err):
    replicas = replicas_of(top)
    if "collector" not in effective:
        return  # its config failed --check-config, said already
    conf, cw = effective["collector"][0], effective["collector"][3]
    dns = conf.get("cluster.dns", "")
    if replicas > 1 and not dns and not conf.get("cluster.set", ""):
        err(cw, "%d replicas but neither cluster.dns nor cluster.set: each collector would "
            "diagnose alone whatever reaches it" % replicas)
    if dns:
        check_collector_dns(dns, top, c, services, cw, err)
        check_self(c, cw, err)
    agent = effective.get("agent")
    if agent and replicas > 1:
        adns = agent[0].get("collector.dns", "")
        if not adns and not agent[0].get("collector.set", ""):
            err(agent[3], "no collector.dns or collector.set but %d collectors: a job's "
                "batches would reach whichever one the Service picks" % replicas)
        elif dns and adns and (norm(hostport(adns)[0]), hostport(adns)[1]) != \
                (norm(hostport(dns)[0]), hostport(dns)[1]):
            err(agent[3], "collector.dns %s is not the collectors' cluster.dns %s: agents and "
                "collectors would place jobs over different sets" % (adns, dns))


def check_collector_dns(dns, top, c, services, cw, err):
    host, port = hostport(dns)
    svc = service_named(host, services)
    if svc is None:
        return err(cw, "cluster.dns %s is no Service NAME.NAMESPACE.svc here" % dns)
    name, spec = svc["metadata"]["name"], svc.get("spec") or {}
    if spec.get("clusterIP") != "None":
        err(cw, "cluster.dns %s: Service %s is not headless (clusterIP: None): one virtual "
            "address is a set of one" % (dns, name))
    if name != (top.get("spec") or {}).get("serviceName"):
        err(cw, "cluster.dns %s: Service %s is not the StatefulSet's serviceName %s (whose "
            "records give the pods' reverse names, the members' names)"
            % (dns, name, (top.get("spec") or {}).get("serviceName")))
    if spec.get("publishNotReadyAddresses"):
        err(cw, "cluster.dns %s: Service %s publishes not-ready addresses: a collector that "
            "is starting or failing would stay in the set with its jobs" % (dns, name))
    grpc = {p.get("name"): p.get("containerPort") for p in c.get("ports") or []}.get("grpc")
    if not any(p.get("port") == port and p.get("targetPort", port) in ("grpc", grpc)
               for p in spec.get("ports") or []):
        err(cw, "cluster.dns %s: Service %s has no port %s to the collectors' grpc port"
            % (dns, name, port))


def check_self(c, cw, err):
    """cluster.self must be $(VAR) with VAR the pod's name (downward API)."""
    given = [v for k, v in raw_args(c) if k == "cluster.self"]
    m = re.fullmatch(r"\$\((\w+)\)", given[-1]) if given else None
    env = {e.get("name"): e for e in c.get("env") or []}
    src = ((env.get(m.group(1)) or {}).get("valueFrom") or {}).get("fieldRef") or {} if m else {}
    if src.get("fieldPath") != "metadata.name":
        err(cw, "cluster.self %s: must be the pod's name ($(POD_NAME), fieldRef metadata.name), "
            "which starts its reverse name in the set" % (given[-1] if given else "(unset)"))


def selects(sel, top):
    labels = (((top.get("spec") or {}).get("template") or {}).get("metadata") or {}).get(
        "labels") or {}
    return bool(sel) and all(labels.get(k) == v for k, v in sel.items())


def check_pdbs(docs, err):
    pdbs = [(w, d) for w, d in docs if d.get("kind") == "PodDisruptionBudget"]
    sets = [(w, d) for w, d in docs if d.get("kind") in ("StatefulSet", "Deployment")]
    for where, p in pdbs:
        spec = p.get("spec") or {}
        sel = (spec.get("selector") or {}).get("matchLabels") or {}
        hit = [d for _, d in sets if selects(sel, d)]
        if not hit:
            err(where, "PodDisruptionBudget %s selects no pod template here (%s)"
                % (p["metadata"]["name"], sel))
        for d in hit:
            r = replicas_of(d)
            mu, ma = spec.get("maxUnavailable"), spec.get("minAvailable")
            if (isinstance(mu, int) and mu < 1) or (isinstance(ma, int) and ma >= r):
                err(where, "PodDisruptionBudget %s lets no pod of %s go: a node drain would "
                    "never finish" % (p["metadata"]["name"], d["metadata"]["name"]))
    for where, top, _ in statefulsets(docs, "argus-collector"):
        r = replicas_of(top)
        cover = [p.get("spec") or {} for _, p in pdbs
                 if selects(((p.get("spec") or {}).get("selector") or {}).get("matchLabels"), top)]
        if r > 1 and not cover:
            err(where, "no PodDisruptionBudget covers the %d collectors: a drain could take a "
                "job's primary and standby together" % r)
        for s in cover:
            mu, ma = s.get("maxUnavailable"), s.get("minAvailable")
            if not (mu == 1 or (isinstance(ma, int) and ma >= r - 1)):
                err(where, "a PodDisruptionBudget lets %s collectors go at once: a job's primary "
                    "and standby could go together" % (mu if mu is not None else r - (ma or 0)))


def check_alertmanager(where, top, c, services, effective, docs, err):
    args = raw_args(c)
    opt = {k: v for k, v in args}
    name = top["metadata"]["name"]
    ns = top["metadata"].get("namespace", "default")
    svc_name = (top.get("spec") or {}).get("serviceName")
    replicas = replicas_of(top)
    gossip = hostport(opt.get("cluster.listen-address", ""))[1]
    web = hostport(opt.get("web.listen-address", ":9093"))[1]
    ports = {(p.get("containerPort"), p.get("protocol", "TCP")) for p in c.get("ports") or []}
    for proto in ("TCP", "UDP"):
        if (gossip, proto) not in ports:
            err(where, "--cluster.listen-address port %s/%s is not a containerPort" % (gossip, proto))
    svc = services.get((ns, svc_name))
    if svc is None or (svc.get("spec") or {}).get("clusterIP") != "None":
        return err(where, "serviceName %s is not a headless Service here" % svc_name)
    sspec = svc.get("spec") or {}
    if not sspec.get("publishNotReadyAddresses"):
        err(where, "Service %s must publish not-ready addresses: peers find each other "
            "before they are ready" % svc_name)
    for proto in ("TCP", "UDP"):
        if not any(p.get("port") == gossip and p.get("protocol", "TCP") == proto
                   for p in sspec.get("ports") or []):
            err(where, "Service %s has no gossip port %s/%s" % (svc_name, gossip, proto))
    host = "%s.%s.svc" % (svc_name, ns)
    want = {"%s:%d" % (pod_name(top, i, host), gossip) for i in range(replicas)}
    peers = {"%s:%s" % (norm(hostport(v)[0]), hostport(v)[1]) for k, v in args if k == "cluster.peer"}
    for p in sorted(want - peers):
        err(where, "--cluster.peer %s missing: every one of the %d replicas is a peer"
            % (p, replicas))
    for p in sorted(peers - want):
        err(where, "--cluster.peer %s is no replica of %s" % (p, name))
    check_am_sink(top, host, web, replicas, effective, err)
    check_am_config(where, c, opt.get("config.file", ""), docs, err)


def check_am_sink(top, host, web, replicas, effective, err):
    """The collectors send every alert to every member (the members deduplicate)."""
    if "collector" not in effective:
        return
    conf, cw = effective["collector"][0], effective["collector"][3]
    have = set()
    for u in filter(None, conf.get("alerts.alertmanager", "").split(",")):
        m = re.fullmatch(r"https?://([^/:]+):?(\d*)/?", u.strip())
        if m:
            have.add((norm(m.group(1)), int(m.group(2) or 80)))
    for i in range(replicas):
        if (pod_name(top, i, host), web) not in have:
            err(cw, "alerts.alertmanager does not send to %s:%d: the collectors send to every "
                "member of the Alertmanager cluster" % (pod_name(top, i, host), web))


def check_am_config(where, c, path, docs, err):
    """--config.file is a ConfigMap key mounted with subPath, and amtool takes it."""
    mounts = [m for m in c.get("volumeMounts") or [] if m.get("mountPath") == path]
    spec = next((((d.get("spec") or {}).get("template") or {}).get("spec") or {}
                 for _, d in docs if d.get("kind") == "StatefulSet"
                 and c in ((((d.get("spec") or {}).get("template") or {}).get("spec") or {})
                           .get("containers") or [])), {})
    vols = {v.get("name"): v for v in spec.get("volumes") or []}
    v = vols.get(mounts[0].get("name")) if mounts else None
    if not v or "configMap" not in v or not mounts[0].get("subPath"):
        return err(where, "--config.file %s is not a ConfigMap key mounted with subPath" % path)
    cms = {d["metadata"]["name"]: d for _, d in docs if d.get("kind") == "ConfigMap"}
    data = ((cms.get(v["configMap"].get("name")) or {}).get("data") or {}).get(mounts[0]["subPath"])
    if data is None:
        return err(where, "--config.file %s: ConfigMap %s has no key %s"
                   % (path, v["configMap"].get("name"), mounts[0]["subPath"]))
    amtool = shutil.which("amtool")
    if amtool:
        r = subprocess.run([amtool, "check-config", "/dev/stdin"], input=data, text=True,
                           capture_output=True)
        if r.returncode != 0:
            err(where, "amtool check-config: %s" % (r.stdout + r.stderr).strip().replace("\n", "; "))
