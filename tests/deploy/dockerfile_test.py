#!/usr/bin/env python3
"""deploy/Dockerfile names only things that exist (no container engine runs here).

Checks: every COPY source exists in the build context (the repository root) or, with
--from, is made by that stage's scripts (tools/package.sh makes build/kspool_*.deb);
`COPY . .` leaves the host's build directories out (.dockerignore);
every tools/ script a RUN names exists and is executable; the runtime stage installs
the package and runs as a non-root user it creates; ENTRYPOINT is a program the
package installs; every KSPOOL_* ENV and --flag is a flag of `kspool-agent --help`;
VOLUME holds the WAL dir; EXPOSE is the ports of --listen and --metrics-listen; the
HEALTHCHECK asks an existing HTTP endpoint on the metrics port with a program the
runtime stage installs. Fails listing every problem.

Usage: dockerfile_test.py REPO_ROOT AGENT_BINARY
"""
import glob
import json
import os
import re
import shlex
import sys

import agent_surface as surface

problems = []


def problem(what):
    problems.append(what)


def flags_in(text, flags, what):
    for name in re.findall(r"(?<![\w-])--([a-z][a-z0-9-]*)", text):
        if name not in flags:
            problem(f"{what}: --{name} is not a flag of kspool-agent --help")


def main():
    root, agent = sys.argv[1], sys.argv[2]
    flags = surface.flags(agent)
    path = os.path.join(root, "deploy/Dockerfile")
    stages = surface.dockerfile_stages(path)
    if len(stages) != 2:
        problem(f"expected a build and a runtime stage, found {len(stages)}")
        stages += [[]] * (2 - len(stages))
    build, runtime = stages[0], stages[-1]
    build_name = build[0][1].split()[-1] if build and " AS " in build[0][1].upper() else None
    workdir = next((t for i, t in build if i == "WORKDIR"), "/")

    scripts_run = []
    for stage in stages:
        for instr, text in stage:
            if instr == "RUN":
                for script in re.findall(r"(?:^|\s|&&)((?:\./)?tools/[\w./-]+)", text):
                    scripts_run.append(script)
                    p = os.path.join(root, script)
                    if not os.path.isfile(p) or not os.access(p, os.X_OK):
                        problem(f"RUN {script}: no such executable script in the repository")
            if instr == "COPY":
                words = shlex.split(text)
                opts = [w for w in words if w.startswith("--")]
                srcs = [w for w in words if not w.startswith("--")][:-1]
                frm = [o.split("=", 1)[1] for o in opts if o.startswith("--from=")]
                for src in srcs:
                    if not frm:
                        if src != "." and not glob.glob(os.path.join(root, src)):
                            problem(f"COPY {src}: not in the build context (the repository root)")
                        continue
                    if frm[0] != build_name:
                        problem(f"COPY --from={frm[0]}: no stage of that name")
                        continue
                    rel = os.path.relpath(src, workdir)
                    if rel.startswith(".."):
                        problem(f"COPY --from={frm[0]} {src}: outside the build stage's WORKDIR {workdir}")
                    elif not any(rel.split("*")[0] in open(os.path.join(root, s)).read()
                                 for s in scripts_run if os.path.isfile(os.path.join(root, s))):
                        problem(f"COPY --from={frm[0]} {src}: no script the build stage runs makes {rel}")
    copies_all = any(i == "COPY" and shlex.split(t) == [".", "."] for st in stages for i, t in st)
    ignore = os.path.join(root, ".dockerignore")
    ignored = open(ignore).read().split() if os.path.exists(ignore) else []
    if copies_all and "build*/" not in ignored:
        problem("COPY . . without build*/ in .dockerignore: a host build/ (its CMake cache names "
                "host paths) would break tools/package.sh in the image")
    if "tools/install-deps.sh" not in scripts_run or "tools/package.sh" not in scripts_run:
        problem("the build stage does not run tools/install-deps.sh and tools/package.sh, as CI does")

    run_text = " ".join(t for i, t in runtime if i == "RUN")
    if not re.search(r"apt-get install[^&]*kspool_\*\.deb", run_text):
        problem("the runtime stage does not apt-get install the package (kspool_*.deb)")
    users = [t for i, t in runtime if i == "USER"]
    if not users or users[-1].split(":")[0] in ("root", "0"):
        problem(f"the image runs as {users[-1] if users else 'root'}, not as a non-root user")
    elif not re.search(r"useradd[^&]*\s" + re.escape(users[-1].split(":")[0]) + r"(\s|$)", run_text):
        problem(f"USER {users[-1]}: the runtime stage creates no such user")

    programs = surface.installed_programs(root)
    entry = [t for i, t in runtime if i == "ENTRYPOINT"]
    if not entry:
        problem("no ENTRYPOINT")
    else:
        argv = json.loads(entry[-1])
        if argv[0] not in programs:
            problem(f"ENTRYPOINT {argv[0]}: the package installs {sorted(programs)}")
        flags_in(" ".join(argv[1:]), flags, "ENTRYPOINT")
    for i, t in runtime:
        if i == "CMD":
            flags_in(t, flags, "CMD")

    env = surface.dockerfile_env(runtime)
    for name in env:
        flag = surface.env_flag(name)
        if flag and flag not in flags:
            problem(f"ENV {name}: no flag --{flag} in kspool-agent --help")
    values = {**flags, **{surface.env_flag(k): v for k, v in env.items() if surface.env_flag(k)}}
    volumes = [v for i, t in runtime if i == "VOLUME" for v in t.split()]
    if not any(values["wal-dir"] == v or values["wal-dir"].startswith(v.rstrip("/") + "/") for v in volumes):
        problem(f"the WAL {values['wal-dir']} is on no VOLUME ({volumes})")
    exposed = {int(p.split("/")[0]) for i, t in runtime if i == "EXPOSE" for p in t.split()}
    wanted = {surface.port_of(values[f]) for f in ("listen", "metrics-listen")} - {None}
    if exposed != wanted:
        problem(f"EXPOSE {sorted(exposed)}, but the agent listens on {sorted(wanted)}")

    checks = [t for i, t in runtime if i == "HEALTHCHECK"]
    if not checks:
        problem("no HEALTHCHECK")
    for check in checks:
        cmd = check.split(" CMD ", 1)[-1]
        urls = re.findall(r"https?://[^\s\"']+", cmd)
        if not urls:
            problem(f"HEALTHCHECK asks no URL: {cmd}")
        for url in urls:
            m = re.match(r"https?://[^/:]+:([^/]+)(/\S*)", url)
            if not m:
                problem(f"HEALTHCHECK {url}: no port and path")
                continue
            port, p = m.groups()
            if p not in surface.http_paths(root):
                problem(f"HEALTHCHECK {url}: the agent serves {sorted(surface.http_paths(root))}")
            metrics_port = str(surface.port_of(values["metrics-listen"]))
            if port not in (metrics_port, "${KSPOOL_METRICS_LISTEN##*:}"):
                problem(f"HEALTHCHECK {url}: port {port} is not the metrics port {metrics_port}")
        tool = shlex.split(cmd)[0]
        if not re.search(r"apt-get install[^&]*\s" + re.escape(tool) + r"(\s|$)", run_text):
            problem(f"HEALTHCHECK runs {tool}, which the runtime stage does not install")

    if problems:
        print("FAIL: deploy/Dockerfile:\n  " + "\n  ".join(problems))
        return 1
    print("ok: deploy/Dockerfile: sources, scripts, user, entrypoint, flags, volume, ports, healthcheck")
    return 0


if __name__ == "__main__":
    sys.exit(main())
