"""argus cross-checks of the manifests (used by k8s_check.py)."""
import os
import re
import subprocess

import k8s_set

SAMPLE_ENV = {"NODE_NAME": "node-a", "POD_NAME": "pod-a", "POD_NAMESPACE": "argus"}


REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def parse_conf(text):
    """key -> value of a daemon config file ([section] / key = value)."""
    out, sec = {}, ""
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = re.fullmatch(r"\[(\w+)\]", line)
        if m:
            sec = m.group(1)
            continue
        k, _, v = line.partition("=")
        v = v.strip()
        if len(v) >= 2 and v[0] == '"' and v[-1] == '"':
            v = v[1:-1]
        out["%s.%s" % (sec, k.strip())] = v
    return out


def port_of(addr):
    return int(addr.rsplit(":", 1)[1]) if ":" in addr else None


def pod_templates(docs):
    for where, d in docs:
        kind = d.get("kind")
        spec = d.get("spec") or {}
        if kind in ("DaemonSet", "StatefulSet", "Deployment", "Job"):
            yield where, d, (spec.get("template") or {})
        elif kind == "Pod":
            yield where, d, d


def mount_for(path, mounts):
    """The volumeMount whose mountPath holds path (the longest)."""
    best = None
    for m in mounts:
        mp = m.get("mountPath", "").rstrip("/")
        if path == mp or path.startswith(mp + "/"):
            if best is None or len(mp) > len(best.get("mountPath", "")):
                best = m
    return best


def stand_in_tls(bindir, prog, args, tmp):
    """Flags that point the daemon's tls.* files at a stand-in PKI (the
    pod's come from a Secret or CSI volume, absent here, whose mounts are
    checked below), so that --check-config loads real files."""
    r = subprocess.run([os.path.join(bindir, prog), "--print-config"] + args,
                       capture_output=True, text=True)
    conf = parse_conf(r.stdout)
    files = {k: conf.get("tls." + k, "") for k in ("ca", "cert", "key")}
    if not any(files.values()):
        return []
    pki = os.path.join(tmp, "pki")
    if not os.path.isdir(pki):
        subprocess.run([os.path.join(REPO, "deploy/pki/make-pki.sh"), pki, "--collector",
                        "collector", "--agent", "node"], capture_output=True, check=True)
    who = "collector" if prog == "argus-collector" else "agent-node"
    stand = {"ca": "ca.crt", "cert": who + ".crt", "key": who + ".key"}
    return sum((["--tls." + k, os.path.join(pki, stand[k])] for k, p in files.items() if p), [])


def check(docs, bindir, conf_dir, tmp, err):
    cms = {(d.get("metadata") or {}).get("name"): d for _, d in docs if d.get("kind") == "ConfigMap"}
    services = [(w, d) for w, d in docs if d.get("kind") == "Service"]
    shipped = {p: parse_conf(open(os.path.join(conf_dir, p + ".conf")).read())
               for p in ("agent", "collector")}
    effective = {}  # program -> (config dict, container, pod spec, where)
    for where, top, tpl in pod_templates(docs):
        spec = tpl.get("spec") or {}
        labels = (tpl.get("metadata") or {}).get("labels") or {}
        vols = {v.get("name"): v for v in spec.get("volumes") or []}
        claims = {(c.get("metadata") or {}).get("name")
                  for c in (top.get("spec") or {}).get("volumeClaimTemplates") or []}
        if top.get("kind") in ("DaemonSet", "StatefulSet"):
            sel = ((top.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
            if not sel or any(labels.get(k) != v for k, v in sel.items()):
                err(where, "spec.selector.matchLabels %s do not match the template labels %s"
                    % (sel, labels))
        for c in (spec.get("initContainers") or []) + (spec.get("containers") or []):
            cw = "%s container %s" % (where, c.get("name"))
            for m in c.get("volumeMounts") or []:
                n = m.get("name")
                if n not in vols and n not in claims:
                    err(cw, "volumeMount %s names no volume or volumeClaimTemplate" % n)
                v = vols.get(n) or {}
                if "configMap" in v:
                    cm = cms.get(v["configMap"].get("name"))
                    if cm is None:
                        err(cw, "volume %s: ConfigMap %s is not in the manifests"
                            % (n, v["configMap"].get("name")))
                    elif m.get("subPath") and m["subPath"] not in (cm.get("data") or {}):
                        err(cw, "subPath %s is not a key of ConfigMap %s"
                            % (m["subPath"], v["configMap"].get("name")))
            ports = {p.get("name"): p.get("containerPort") for p in c.get("ports") or []}
            for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
                hg = (c.get(probe) or {}).get("httpGet")
                if hg and isinstance(hg.get("port"), str) and hg["port"] not in ports:
                    err(cw, "%s port %s is not a named containerPort" % (probe, hg["port"]))
            cmd = (c.get("command") or [""])[0]
            prog = os.path.basename(cmd)
            if prog not in ("argus-agent", "argus-collector"):
                continue
            short = prog[len("argus-"):]
            args = [re.sub(r"\$\((\w+)\)", lambda x: SAMPLE_ENV.get(x.group(1), x.group(0)), a)
                    for a in (c.get("command") or [])[1:] + (c.get("args") or [])]
            if "--config" not in args:
                err(cw, "%s has no --config" % prog)
                continue
            i = args.index("--config")
            cfg_path = args[i + 1]
            m = mount_for(cfg_path, c.get("volumeMounts") or [])
            v = vols.get(m.get("name")) if m else None
            if not v or "configMap" not in v or not m.get("subPath"):
                err(cw, "--config %s is not a ConfigMap key mounted with subPath" % cfg_path)
                continue
            data = ((cms.get(v["configMap"].get("name")) or {}).get("data") or {}).get(m["subPath"])
            if data is None:
                continue
            f = os.path.join(tmp, "%s-%s.conf" % (short, c.get("name")))
            with open(f, "w") as fh:
                fh.write(data)
            args[i + 1] = f
            stand_in = stand_in_tls(bindir, prog, args, tmp)
            r = subprocess.run([os.path.join(bindir, prog), "--check-config"] + args + stand_in,
                               capture_output=True, text=True)
            if r.returncode != 0:
                err(cw, "%s --check-config with the container's args: %s"
                    % (prog, (r.stderr or r.stdout).strip().replace("\n", "; ")))
                continue
            r = subprocess.run([os.path.join(bindir, prog), "--print-config"] + args,
                               capture_output=True, text=True)
            conf = parse_conf(r.stdout)
            effective[short] = (conf, c, spec, cw, labels, vols)
            http = port_of(conf.get("http.listen", ""))
            if http and ports.get("http") != http:
                err(cw, "http.listen %s but containerPort 'http' is %s" % (conf["http.listen"],
                                                                          ports.get("http")))
            if http and not conf["http.listen"].startswith(("0.0.0.0:", "[::]:")):
                err(cw, "http.listen %s: the kubelet's probes come from outside the pod"
                    % conf["http.listen"])
            for key in ("tls.ca", "tls.cert", "tls.key"):
                p = conf.get(key)
                if p and conf.get("grpc.plaintext") != "true":
                    mm = mount_for(p, c.get("volumeMounts") or [])
                    vv = vols.get(mm.get("name")) if mm else None
                    if not vv or not ("secret" in vv or "csi" in vv or "projected" in vv):
                        err(cw, "%s %s is not on a mounted Secret or CSI volume" % (key, p))
            # the paths and ports the shipped configs use (deploy/config)
            for key in ("spool.dir", "cupti.socket", "store.dir"):
                if key in conf and conf[key] != shipped[short].get(key):
                    err(cw, "%s %s differs from deploy/config/%s.conf (%s)"
                        % (key, conf[key], short, shipped[short].get(key)))
            if short == "agent":
                if not top.get("spec", {}).get("template", {}).get("spec", {}).get("hostPID"):
                    err(cw, "the agent needs hostPID: true")
                for key, want in (("spool.dir", "hostPath"),
                                  ("cupti.socket", "hostPath")):
                    p = conf[key] if key == "spool.dir" else os.path.dirname(conf[key])
                    mm = mount_for(p, c.get("volumeMounts") or [])
                    vv = vols.get(mm.get("name")) if mm else None
                    if not vv or want not in vv:
                        err(cw, "%s %s is not on a hostPath volume" % (key, p))
                caps = set(((c.get("securityContext") or {}).get("capabilities") or {}).get("add") or [])
                for cap in ("BPF", "PERFMON", "SYS_ADMIN", "SYS_PTRACE", "DAC_READ_SEARCH"):
                    if cap not in caps:
                        err(cw, "capability %s missing (deploy/systemd/argus-agent.service)" % cap)
            if short == "collector":
                grpc = port_of(conf.get("grpc.listen", ""))
                if grpc != port_of(shipped["collector"]["grpc.listen"]):
                    err(cw, "grpc.listen %s: the port differs from deploy/config/collector.conf"
                        % conf["grpc.listen"])
                if ports.get("grpc") != grpc:
                    err(cw, "grpc.listen %s but containerPort 'grpc' is %s"
                        % (conf["grpc.listen"], ports.get("grpc")))
                mm = mount_for(conf["store.dir"], c.get("volumeMounts") or [])
                if not mm or mm.get("name") not in claims:
                    err(cw, "store.dir %s is not on a volumeClaimTemplate" % conf["store.dir"])
    check_services(services, effective, docs, err)
    check_job_pods(docs, effective, err)
    k8s_set.check(docs, effective, err)


def check_services(services, effective, docs, err):
    for where, s in services:
        spec = s.get("spec") or {}
        sel = spec.get("selector") or {}
        target = [[c for c in (tpl.get("spec") or {}).get("containers") or []]
                  for _, _, tpl in pod_templates(docs)
                  if sel and all(((tpl.get("metadata") or {}).get("labels") or {}).get(k) == v
                                 for k, v in sel.items())]
        if not target:
            err(where, "Service selector %s matches no pod template here" % sel)
            continue
        ports = {p.get("name"): p.get("containerPort") for c in target[0] for p in c.get("ports") or []}
        for p in spec.get("ports") or []:
            t = p.get("targetPort", p.get("port"))
            if (isinstance(t, str) and t not in ports) or (isinstance(t, int) and t not in ports.values()):
                err(where, "port %s: targetPort %s is not a containerPort of the pods it selects"
                    % (p.get("name"), t))
    if "agent" in effective and "collector" in effective:
        addr = effective["agent"][0]["collector.address"]
        host, _, port = addr.rpartition(":")
        names = {"%s.%s.svc" % (s["metadata"]["name"], s["metadata"].get("namespace", "default")):
                 s for _, s in services}
        svc = names.get(host) or names.get(host.replace(".cluster.local", ""))
        if svc is None:
            err(effective["agent"][3], "collector.address %s is no Service NAME.NAMESPACE.svc here" % addr)
        elif int(port) not in [p.get("port") for p in svc["spec"].get("ports") or []]:
            err(effective["agent"][3], "collector.address %s: Service %s has no port %s"
                % (addr, svc["metadata"]["name"], port))
    for where, d in docs:
        if d.get("kind") == "StatefulSet":
            sn = (d.get("spec") or {}).get("serviceName")
            if not any(s["metadata"]["name"] == sn and (s.get("spec") or {}).get("clusterIP") == "None"
                       for _, s in services):
                err(where, "serviceName %s is not a headless Service here" % sn)


def check_job_pods(docs, effective, err):
    """A pod that sets CUDA_INJECTION64_PATH must reach the agent's socket and library."""
    if "agent" not in effective:
        return
    conf, c, spec, cw, _, vols = effective["agent"]
    sock_host = None
    m = mount_for(os.path.dirname(conf["cupti.socket"]), c.get("volumeMounts") or [])
    if m and "hostPath" in vols.get(m["name"], {}):
        sock_host = vols[m["name"]]["hostPath"]["path"] + conf["cupti.socket"][len(m["mountPath"].rstrip("/")):]
    lib_hosts = {v["hostPath"]["path"] for v in vols.values() if "hostPath" in v}
    for where, top, tpl in pod_templates(docs):
        pspec = tpl.get("spec") or {}
        pvols = {v.get("name"): v for v in pspec.get("volumes") or []}
        for jc in pspec.get("containers") or []:
            env = {e.get("name"): e.get("value") for e in jc.get("env") or []}
            if "CUDA_INJECTION64_PATH" not in env:
                continue
            jw = "%s container %s" % (where, jc.get("name"))
            for var, host_ok in (("CUDA_INJECTION64_PATH", lambda h: os.path.dirname(h) in lib_hosts),
                                 ("ARGUS_AGENT_SOCKET", lambda h: h == sock_host)):
                p = env.get(var)
                if not p:
                    err(jw, "%s is not set" % var)
                    continue
                mm = mount_for(p, jc.get("volumeMounts") or [])
                vv = pvols.get(mm.get("name")) if mm else None
                if not vv or "hostPath" not in vv:
                    err(jw, "%s %s is not on a hostPath volume" % (var, p))
                    continue
                h = vv["hostPath"]["path"].rstrip("/") + p[len(mm["mountPath"].rstrip("/")):]
                if not host_ok(h):
                    err(jw, "%s %s is %s on the node, not where the agent DaemonSet puts it"
                        % (var, p, h))
