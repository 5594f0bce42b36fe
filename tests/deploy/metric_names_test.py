#!/usr/bin/env python3
"""The dashboard and the alert rules use only metrics the agent declares.

Every `kspool_*` name in deploy/grafana/*.json and deploy/prometheus/*.yml (queries,
annotations, descriptions) must be declared in agent/stats/metrics.cc, the one place metrics
are declared; a histogram also provides NAME_bucket, NAME_sum and NAME_count. Fails
listing the unknown names with the file that uses them. Declared metrics that no
dashboard panel shows are listed as a warning (not a failure).

Usage: metric_names_test.py REPO_ROOT
"""
import glob
import json
import os
import re
import sys

import yaml

NAME = re.compile(r"\bkspool_[a-z0-9_]+")
# Declarations in metrics.cc: Family("kspool_x", ...) and Build*().Name("kspool_x").
DECLARED = re.compile(r'(?:Family\(|\.Name\()\s*"(kspool_[a-z0-9_]+)"')
HISTOGRAM = re.compile(r'BuildHistogram\(\)\s*\.Name\(\s*"(kspool_[a-z0-9_]+)"')


def declared_metrics(metrics_cc):
    """{series name the agent can expose: declared family name}."""
    text = open(metrics_cc).read()
    families = set(DECLARED.findall(text))
    if not families:
        sys.exit(f"FAIL: found no metric declarations in {metrics_cc}: has the way "
                 "metrics are declared changed? (this test looks for Family(\"...\") and "
                 ".Name(\"...\"))")
    series = {f: f for f in families}
    for h in HISTOGRAM.findall(text):
        for suffix in ("_bucket", "_sum", "_count"):
            series[h + suffix] = h
    return families, series


def strings_in(node):
    """Every string (keys and values) in a parsed JSON/YAML document."""
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for k, v in node.items():
            yield from strings_in(k)
            yield from strings_in(v)
    elif isinstance(node, list):
        for v in node:
            yield from strings_in(v)


def panel_exprs(dashboard):
    """The query expressions of every panel (rows may nest panels)."""
    for panel in dashboard.get("panels", []):
        for target in panel.get("targets", []):
            if "expr" in target:
                yield target["expr"]
        yield from panel_exprs(panel)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    families, series = declared_metrics(os.path.join(root, "agent/stats/metrics.cc"))
    dashboards = sorted(glob.glob(os.path.join(root, "deploy/grafana/*.json")))
    rules = sorted(glob.glob(os.path.join(root, "deploy/prometheus/*.yml")))
    if not dashboards or not rules:
        sys.exit("FAIL: no deploy/grafana/*.json or deploy/prometheus/*.yml found")
    unknown = []  # (file, name)
    shown = set()  # families some panel queries
    used = 0
    for path in dashboards + rules:
        with open(path) as f:
            doc = json.load(f) if path.endswith(".json") else yaml.safe_load(f)
        names = {n for s in strings_in(doc) for n in NAME.findall(s)}
        used += len(names)
        unknown += [(os.path.relpath(path, root), n) for n in sorted(names) if n not in series]
        if path.endswith(".json"):
            shown |= {series[n] for e in panel_exprs(doc) for n in NAME.findall(e) if n in series}
    for fam in sorted(families - shown):
        print(f"warning: no dashboard panel shows {fam}")
    if unknown:
        print("FAIL: metrics used in deploy/ that agent/stats/metrics.cc does not declare:")
        for path, name in unknown:
            print(f"  {path}: {name}")
        return 1
    print(f"ok: {used} metric names in {len(dashboards) + len(rules)} files, all declared "
          f"({len(families)} declared, {len(families - shown)} not on the dashboard)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
