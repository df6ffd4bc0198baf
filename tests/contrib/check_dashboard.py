#!/usr/bin/env python3
"""Checks contrib/grafana/ibsm-dashboard.json: valid JSON, a Grafana dashboard with panels, and every metric
its queries name is one ibsmd exports (the ibsm_* names of daemon/metrics/sm_metrics.cc, the infiniband_*
names of daemon/metrics/port_counter_metrics.cc), so a renamed metric cannot leave the dashboard empty.
usage: check_dashboard.py DASHBOARD SOURCE_DIR"""
import json
import re
import sys


def main():
    dashboard, src = sys.argv[1], sys.argv[2]
    with open(dashboard) as f:
        dash = json.load(f)  # raises on invalid JSON
    known = set()
    with open(src + "/daemon/metrics/sm_metrics.cc") as f:
        known |= set(re.findall(r'"(ibsm_[a-z0-9_]+)"', f.read()))
    with open(src + "/daemon/metrics/port_counter_metrics.cc") as f:
        for suffix in re.findall(r'\{"(port_[a-z0-9_]+)"', f.read()):
            known |= {"infiniband_switch_" + suffix, "infiniband_hca_" + suffix}
    problems = []
    if not dash.get("title") or not dash.get("uid"):
        problems.append("no title or uid")
    panels = [p for p in dash.get("panels", []) if p.get("type") != "row"]
    if len(panels) < 10:
        problems.append("only %d panels" % len(panels))
    used = set()
    for p in panels:
        targets = p.get("targets") or []
        if not targets:
            problems.append("panel %r has no query" % p.get("title"))
        for t in targets:
            for name in re.findall(r"\b((?:ibsm|infiniband)_[a-z0-9_]+)", t.get("expr", "")):
                base = re.sub(r"_(bucket|sum|count)$", "", name)
                used.add(base if base in known else name)
                if name not in known and base not in known:
                    problems.append("panel %r: %s is not a metric ibsmd exports" % (p.get("title"), name))
    for needed in ("ibsm_subnet_up", "ibsm_sweep_duration_seconds", "ibsm_event_convergence_seconds",
                   "infiniband_switch_port_symbol_error_total"):
        if needed not in used:
            problems.append("no panel shows " + needed)
    for p in problems:
        print("check_dashboard: " + p, file=sys.stderr)
    if not problems:
        print("check_dashboard: %d panels, %d metrics, all exported" % (len(panels), len(used)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
