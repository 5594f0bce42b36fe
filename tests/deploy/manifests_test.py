#!/usr/bin/env python3
"""The Kubernetes manifests and the compose file agree with the agent and its image.

For every manifest in deploy/kubernetes/ (and deploy/docker-compose.yml) and every
container that runs the agent: the image is the one deploy/Dockerfile builds; every
--flag and KSPOOL_* variable is a flag of `kspool-agent --help`; with the image's ENV,
the container's env and its args (in that precedence), the ports are the ones
--listen / --metrics-listen listen on, on a non-loopback address; probes hit existing
HTTP endpoints on the metrics port; the WAL dir and a unix socket's directory are on
mounted volumes that outlive the pod (no emptyDir); /status and /discards answer loopback
peers only (--http-detail-from loopback, or --acl); terminationGracePeriodSeconds is
above --shutdown-grace-ms; the agent does not run as root; Services point at named
ports that exist. Fails listing every problem.

Usage: manifests_test.py REPO_ROOT AGENT_BINARY
"""
import glob
import os
import re
import shlex
import sys

import yaml

import agent_surface as surface

problems = []


def problem(where, what):
    problems.append(f"{where}: {what}")


def parse_args(args):
    """['--a=1', '--b', '2'] -> {'a': '1', 'b': '2'}; flags without values -> ''."""
    out, i = {}, 0
    while i < len(args):
        a = str(args[i])
        if a.startswith("--"):
            name, eq, value = a[2:].partition("=")
            if not eq and i + 1 < len(args) and not str(args[i + 1]).startswith("--"):
                value = str(args[i + 1])
                i += 1
            out[name] = value
        i += 1
    return out


def under(path, mounts):
    """The mount (path -> volume name) holding `path`, or None."""
    best = None
    for mpath, vol in mounts.items():
        if path == mpath or path.startswith(mpath.rstrip("/") + "/"):
            if best is None or len(mpath) > len(best[0]):
                best = (mpath, vol)
    return best


def check_settings(where, flags, env, args):
    for name in env:
        flag = surface.env_flag(name)
        if flag is not None and flag not in flags and flag != "config":
            problem(where, f"environment variable {name}: no flag --{flag} in kspool-agent --help")
    for name in args:
        if name not in flags:
            problem(where, f"argument --{name}: not a flag of kspool-agent --help")


def effective(flags, image_env, env, args):
    """The value the agent uses for each flag: args > env > image ENV > default."""
    values = {k: v for k, v in flags.items()}
    for source in (image_env, env):
        for name, value in source.items():
            flag = surface.env_flag(name)
            if flag:
                values[flag] = value
    values.update(args)
    return values


def check_address(where, what, address, port):
    host = address.rsplit(":", 1)[0].strip("[]")
    if host in ("127.0.0.1", "localhost", "::1"):
        problem(where, f"{what} {address} listens on loopback only, but the port {port} is published")


def check_pod(where, spec, claim_names, http_paths, flags, image_env, tag, annotations):
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    grace = spec.get("terminationGracePeriodSeconds", 30)  # Kubernetes' default
    pod_ctx = spec.get("securityContext", {})
    for c in spec.get("initContainers", []) + spec.get("containers", []):
        cw = f"{where} container {c['name']}"
        if c.get("image") != tag:
            problem(cw, f"image {c.get('image')}, but deploy/Dockerfile builds {tag}")
        command = " ".join(map(str, c.get("command", [])))
        if c.get("command") and "kspool-agent" not in command:
            continue  # a helper (init) container: not the agent
        env = {e["name"]: str(e.get("value", "")) for e in c.get("env", [])}
        args = parse_args(c.get("args", []))
        check_settings(cw, flags, env, args)
        values = effective(flags, image_env, env, args)
        ctx = {**pod_ctx, **c.get("securityContext", {})}
        if ctx.get("runAsUser", 1) == 0 or ctx.get("runAsNonRoot") is False:
            problem(cw, "the agent runs as root")
        ports = {p.get("name"): p["containerPort"] for p in c.get("ports", [])}
        listen, metrics = values["listen"], values["metrics-listen"]
        expected = {"metrics": surface.port_of(metrics)}
        check_address(cw, "--metrics-listen", metrics, expected["metrics"])
        if values.get("http-detail-from") != "loopback" and not values.get("acl"):
            problem(cw, f"--metrics-listen {metrics} is published, and /status and /discards "
                        "(every topic's data, refused payloads) answer anyone: set "
                        "--http-detail-from=loopback (or --acl)")
        if surface.port_of(listen) is not None:
            expected["grpc"] = surface.port_of(listen)
            check_address(cw, "--listen", listen, expected["grpc"])
        for name, port in expected.items():
            if ports.get(name) != port:
                problem(cw, f"port {name} is {ports.get(name)}, but the agent listens on {port}")
        for name in set(ports) - set(expected):
            problem(cw, f"port {name} ({ports[name]}): the agent listens on no such port")
        if "prometheus.io/port" in annotations and int(annotations["prometheus.io/port"]) != expected["metrics"]:
            problem(where, f"prometheus.io/port {annotations['prometheus.io/port']} is not the metrics port")
        for kind in ("readinessProbe", "livenessProbe", "startupProbe"):
            probe = c.get(kind)
            if not probe:
                continue
            if "httpGet" in probe:
                port = probe["httpGet"]["port"]
                if probe["httpGet"]["path"] not in http_paths:
                    problem(cw, f"{kind} path {probe['httpGet']['path']}: the agent serves {sorted(http_paths)}")
                if port not in ("metrics", expected["metrics"]):
                    problem(cw, f"{kind} httpGet port {port} is not the metrics port")
            elif "tcpSocket" in probe:
                port = probe["tcpSocket"]["port"]
                if port not in set(ports) | set(ports.values()):
                    problem(cw, f"{kind} tcpSocket port {port} is not a port of the container")
            else:
                problem(cw, f"{kind}: neither httpGet nor tcpSocket")
        mounts = {m["mountPath"]: m["name"] for m in c.get("volumeMounts", [])}
        needed = {"the WAL (--wal-dir)": values["wal-dir"]}
        if listen.startswith("unix:"):
            needed["the gRPC socket's directory"] = os.path.dirname(listen[len("unix:"):])
        for what, path in needed.items():
            m = under(path, mounts)
            if m is None:
                problem(cw, f"{what} {path} is on no volume mount: it goes with the container")
                continue
            vol = m[1]
            if vol in claim_names:
                continue
            src = volumes.get(vol)
            if src is None:
                problem(cw, f"mount {m[0]}: no volume or claim template named {vol}")
            elif not ({"hostPath", "persistentVolumeClaim"} & set(src)):
                problem(cw, f"{what} {path} is on volume {vol} ({', '.join(k for k in src if k != 'name')}), "
                            "which does not outlive the pod")
        shutdown_ms = int(values["shutdown-grace-ms"])
        if grace * 1000 <= shutdown_ms:
            problem(where, f"terminationGracePeriodSeconds {grace} is not above --shutdown-grace-ms {shutdown_ms}")


def check_kubernetes(root, flags, http_paths, image_env, tag):
    files = sorted(glob.glob(os.path.join(root, "deploy/kubernetes/*.yaml")))
    if not files:
        problem("deploy/kubernetes", "no manifests")
    workloads = 0
    for path in files:
        rel = os.path.relpath(path, root)
        docs = [d for d in yaml.safe_load_all(open(path)) if d]
        templates = []
        for d in docs:
            where = f"{rel}: {d['kind']} {d['metadata']['name']}"
            if d["kind"] in ("StatefulSet", "DaemonSet", "Deployment"):
                workloads += 1
                t = d["spec"]["template"]
                if d["spec"]["selector"]["matchLabels"].items() - t["metadata"]["labels"].items():
                    problem(where, "selector does not match the pod template's labels")
                claims = {c["metadata"]["name"] for c in d["spec"].get("volumeClaimTemplates", [])}
                check_pod(where, t["spec"], claims, http_paths, flags, image_env, tag,
                          t["metadata"].get("annotations", {}))
                templates.append(t)
        for d in docs:
            if d["kind"] != "Service":
                continue
            where = f"{rel}: Service {d['metadata']['name']}"
            pods = [t for t in templates
                    if not d["spec"]["selector"].items() - t["metadata"]["labels"].items()]
            if not pods:
                problem(where, "its selector matches no pod template in the file")
            for p in d["spec"]["ports"]:
                target = p.get("targetPort", p["port"])
                names = {q.get("name") for t in pods for c in t["spec"]["containers"] for q in c.get("ports", [])}
                nums = {q["containerPort"] for t in pods for c in t["spec"]["containers"] for q in c.get("ports", [])}
                if target not in names | nums:
                    problem(where, f"targetPort {target} is no container port")
    kinds = {d["kind"] for path in files for d in yaml.safe_load_all(open(path)) if d}
    for needed in ("StatefulSet", "DaemonSet"):
        if needed not in kinds:
            problem("deploy/kubernetes", f"no {needed}")
    return workloads


def duration_s(text):
    m = re.fullmatch(r"(\d+)(ms|s|m)", str(text))
    return int(m.group(1)) * {"ms": 0.001, "s": 1, "m": 60}[m.group(2)]


def check_compose(root, flags, image_env):
    rel = "deploy/docker-compose.yml"
    doc = yaml.safe_load(open(os.path.join(root, rel)))
    svc = doc["services"]["kspool"]
    if svc.get("build", {}).get("dockerfile") != "deploy/Dockerfile":
        problem(rel, "the kspool service is not built from deploy/Dockerfile")
    env = {k: str(v) for k, v in (svc.get("environment") or {}).items()}
    command = svc.get("command", [])
    args = parse_args(shlex.split(command) if isinstance(command, str) else command)
    check_settings(rel, flags, env, args)
    values = effective(flags, image_env, env, args)
    published = {int(str(p).rsplit(":", 1)[1]) for p in svc.get("ports", [])}
    for flag in ("listen", "metrics-listen"):
        port = surface.port_of(values[flag])
        if port is not None and port not in published:
            problem(rel, f"--{flag} port {port} is not published")
    mounts = {str(v).split(":")[1]: str(v).split(":")[0] for v in svc.get("volumes", [])}
    if under(values["wal-dir"], mounts) is None:
        problem(rel, f"the WAL {values['wal-dir']} is on no volume")
    if duration_s(svc.get("stop_grace_period", "10s")) * 1000 <= int(values["shutdown-grace-ms"]):
        problem(rel, "stop_grace_period is not above --shutdown-grace-ms")


def main():
    root, agent = sys.argv[1], sys.argv[2]
    flags = surface.flags(agent)
    http_paths = surface.http_paths(root)
    dockerfile = os.path.join(root, "deploy/Dockerfile")
    image_env = surface.dockerfile_env(surface.dockerfile_stages(dockerfile)[-1])
    tag = surface.image_tag(dockerfile)
    workloads = check_kubernetes(root, flags, http_paths, image_env, tag)
    check_compose(root, flags, image_env)
    if problems:
        print("FAIL:\n  " + "\n  ".join(problems))
        return 1
    print(f"ok: {workloads} Kubernetes workloads and the compose file match kspool-agent's flags, "
          f"ports, endpoints and image")
    return 0


if __name__ == "__main__":
    sys.exit(main())
