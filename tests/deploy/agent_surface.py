"""What deploy/ files may refer to, read from the code and the built agent.

- flags(agent_bin): {flag name: default text or None}, from `kspool-agent --help`;
- env_flag(name): the flag a KSPOOL_* variable sets (KSPOOL_WAL_DIR -> wal-dir);
- http_paths(root): the agent's HTTP endpoints (agent/http/http_request.cc);
- installed_programs(root): /usr/bin/NAME of every program the package installs.
Shared by the tests of tests/deploy/; no state.
"""
import os
import re
import subprocess

# "  --max-streams-per-connection UINT:UINT in [1 - 2147483647]=100   help..."
HELP_LINE = re.compile(r"^\s*(?:-\w,)?--([a-z0-9-]+)"
                       r"(?: [A-Z][^\s=]*(?: in \[[^\]]*\][^\s=]*)?)?(?:=(\S*))?")


def flags(agent_bin):
    out = subprocess.run([agent_bin, "--help"], capture_output=True, text=True, timeout=30,
                         env={"PATH": "/usr/bin:/bin"})
    if out.returncode != 0:
        raise SystemExit(f"FAIL: {agent_bin} --help exited {out.returncode}: {out.stderr}")
    found = {}
    for line in out.stdout.splitlines():
        m = HELP_LINE.match(line)
        if m:
            found[m.group(1)] = m.group(2)
    for needed in ("wal-dir", "listen", "metrics-listen", "shutdown-grace-ms"):
        if needed not in found:
            raise SystemExit(f"FAIL: --{needed} not found in {agent_bin} --help: has its format changed?")
    return found


def env_flag(name):
    """KSPOOL_WAL_DIR -> wal-dir; KSPOOL_CONFIG -> config; None if not KSPOOL_*."""
    if not name.startswith("KSPOOL_"):
        return None
    return name[len("KSPOOL_"):].lower().replace("_", "-")


def http_paths(root):
    text = open(os.path.join(root, "agent/http/http_request.cc")).read()
    paths = set(re.findall(r'req->path [!=]= "(/[^"]*)"', text))
    if "/healthz" not in paths:
        raise SystemExit("FAIL: no /healthz in agent/http/http_request.cc: has the routing changed?")
    return paths


def installed_programs(root):
    text = open(os.path.join(root, "cmake/Packaging.cmake")).read()
    m = re.search(r"install\(TARGETS ([^)]*?)\s+RUNTIME DESTINATION \$\{CMAKE_INSTALL_BINDIR\}", text)
    if not m:
        raise SystemExit("FAIL: no install(TARGETS ... RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}) "
                         "in cmake/Packaging.cmake")
    return {"/usr/bin/" + t for t in m.group(1).split()}


def port_of(address):
    """'0.0.0.0:9411' -> 9411; '[::]:9411' -> 9411; 'unix:/x' -> None."""
    if address.startswith("unix:"):
        return None
    return int(address.rsplit(":", 1)[1])


def dockerfile_stages(path):
    """The Dockerfile as [[(INSTRUCTION, text)]], one list per stage (FROM starts one);
    continuation lines are joined, comments dropped."""
    stages, logical = [], ""
    for raw in open(path).read().splitlines():
        line = raw.strip()
        if not logical and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue
        logical += (" " if logical else "") + line.rstrip("\\").strip()
        if line.endswith("\\"):
            continue
        instr, _, rest = logical.partition(" ")
        instr = instr.upper()
        if instr == "FROM":
            stages.append([])
        stages[-1].append((instr, rest.strip()))
        logical = ""
    return stages


def dockerfile_env(stage):
    """ENV KEY=VALUE ... of a stage (values without quotes or spaces)."""
    env = {}
    for instr, text in stage:
        if instr == "ENV":
            for kv in text.split():
                k, _, v = kv.partition("=")
                env[k] = v.strip('"')
    return env


def image_tag(path):
    """The tag the Dockerfile's header says to build: `docker build ... -t NAME:TAG .`"""
    m = re.search(r"docker build .*-t (\S+)", open(path).read())
    if not m:
        raise SystemExit(f"FAIL: {path} does not say how to build it (docker build ... -t TAG)")
    return m.group(1)
