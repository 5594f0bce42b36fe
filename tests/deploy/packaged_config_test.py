#!/usr/bin/env python3
"""The packaged config (deploy/kspool.toml) and systemd unit agree with the agent.

Config: every `flag = value` line, set or commented out, names a flag of
`kspool-agent --help`; a commented line shows that flag's default (flags without a
scalar default may show an example). Unit (deploy/systemd/kspool.service):
`systemd-analyze verify` on a copy whose ExecStart is the built agent (the installed
unit is verified as installed by package_install_test.sh) with no message; ExecStart
is a program the package installs, its flags exist, --config is where the package puts
the config; the WAL dir is in the unit's StateDirectory and ReadWritePaths; the stop
timeout is above --shutdown-grace-ms; User is the user postinst creates.

Usage: packaged_config_test.py REPO_ROOT AGENT_BINARY
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

import agent_surface as surface

problems = []


def check_config(root, flags, values):
    lines = open(os.path.join(root, "deploy/kspool.toml")).read().splitlines()
    seen = 0
    for n, line in enumerate(lines, 1):
        m = re.match(r"^(#\s*)?([a-z][a-z0-9-]*)\s*=\s*(.+?)\s*$", line)
        if not m:
            continue
        seen += 1
        commented, name, value = m.group(1) is not None, m.group(2), m.group(3).strip('"')
        where = f"deploy/kspool.toml:{n}"
        if name not in flags:
            problems.append(f"{where}: {name} is not a flag of kspool-agent --help")
        elif commented and flags[name] not in (None, "[]") and value != flags[name]:
            problems.append(f"{where}: commented default {name} = {value}, but the default is {flags[name]}")
        elif not commented:
            values[name] = value
    if seen < 10:
        problems.append(f"deploy/kspool.toml: only {seen} settings; is it the commented default config?")


def unit_settings(text):
    out = {}
    for line in text.splitlines():
        if "=" in line and not line.lstrip().startswith(("#", ";", "[")):
            k, v = line.split("=", 1)
            out.setdefault(k.strip(), []).append(v.strip())
    return out


def check_unit(root, agent, flags, values):
    path = os.path.join(root, "deploy/systemd/kspool.service")
    text = open(path).read()
    unit = unit_settings(text)
    exec_start = unit.get("ExecStart", [""])[0].split()
    programs = surface.installed_programs(root)
    if not exec_start or exec_start[0] not in programs:
        problems.append(f"kspool.service: ExecStart {exec_start[:1]} is not one of {sorted(programs)}")
    args = exec_start[1:]
    for a in args:
        if a.startswith("--") and a[2:].split("=")[0] not in flags:
            problems.append(f"kspool.service: ExecStart flag {a} is not a flag of kspool-agent --help")
    packaging = open(os.path.join(root, "cmake/Packaging.cmake")).read()
    m = re.search(r"deploy/kspool\.toml DESTINATION (\S+)\)", packaging)
    config_path = (m.group(1) + "/kspool.toml") if m else None
    if "--config" not in args or args[args.index("--config") + 1] != config_path:
        problems.append(f"kspool.service: ExecStart does not read --config {config_path}")
    wal = values["wal-dir"]
    state = ["/var/lib/" + d for d in unit.get("StateDirectory", [""])[0].split()]
    rw = unit.get("ReadWritePaths", [""])[0].split()
    for what, dirs in (("StateDirectory", state), ("ReadWritePaths", rw)):
        if not any(wal == d or wal.startswith(d + "/") for d in dirs):
            problems.append(f"kspool.service: the WAL {wal} is not under its {what} {dirs}")
    stop = unit.get("TimeoutStopSec", ["90"])[0]
    if int(stop.rstrip("s")) * 1000 <= int(values["shutdown-grace-ms"]):
        problems.append(f"kspool.service: TimeoutStopSec {stop} is not above --shutdown-grace-ms")
    postinst = open(os.path.join(root, "deploy/debian/postinst")).read()
    user = unit.get("User", ["root"])[0]
    if not re.search(r"adduser --system.*\s" + user + r"$", postinst.replace("\\\n", " "), re.M):
        problems.append(f"kspool.service: User={user}, which deploy/debian/postinst does not create")

    if not shutil.which("systemd-analyze"):
        problems.append("systemd-analyze not found (Debian: apt-get install systemd; tools/install-deps.sh does)")
        return
    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, "kspool.service")
        with open(copy, "w") as f:
            f.write(text.replace("ExecStart=" + exec_start[0], "ExecStart=" + os.path.abspath(agent)))
        out = subprocess.run(["systemd-analyze", "verify", copy], capture_output=True, text=True,
                             timeout=60)
        msg = (out.stdout + out.stderr).strip()
        if out.returncode != 0 or msg:
            problems.append(f"systemd-analyze verify kspool.service: exit {out.returncode}: {msg}")


def main():
    root, agent = sys.argv[1], sys.argv[2]
    flags = surface.flags(agent)
    values = dict(flags)
    check_config(root, flags, values)
    check_unit(root, agent, flags, values)
    if problems:
        print("FAIL:\n  " + "\n  ".join(problems))
        return 1
    print("ok: deploy/kspool.toml and deploy/systemd/kspool.service match kspool-agent and the package")
    return 0


if __name__ == "__main__":
    sys.exit(main())
