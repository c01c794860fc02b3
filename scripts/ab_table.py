#!/usr/bin/env python3
"""The table of scripts/ab_builds.sh: two builds' benchmark times side by side.

Reads the rounds' JSON that ab_builds.sh leaves in RAW, named
r<round>.<isa>.<base|new>.<prog>.json (prog: fa = bench_fa, ops = bench_ops,
ar = bench_attnres, kp = bench_keypool; bench_ops writes the keys the last two
wrote), takes every "<name>_ms_median" of each, and reports per
ISA and case: the median over rounds of the base's and of the new build's time,
and the median and range (min-max) of the per-round new / base ratios.  Prints
the Markdown table (with a header naming the CPU, the ISAs, the rounds, the
threads and both revisions), writes it to --md and the numbers to --json.
Standard library only; it checks nothing and judges nothing.
"""

import argparse
import json
import os
import re
import statistics
import sys

NAME = re.compile(r"^r(\d+)\.([A-Za-z0-9_]+)\.(base|new)\.(fa|ops|ar|kp)\.json$")
SUFFIX = "_ms_median"


def row_name(prog, key):
    """The case a "<name>_ms_median" key names; KeyPool's kp_ keys read keypool_."""
    name = key[: -len(SUFFIX)]
    if prog != "fa" and name.startswith("kp_"):
        name = "keypool_" + name[3:]
    return name


def load(raw):
    """{isa: {case: {build: {round: ms}}}} from the files in RAW."""
    data = {}
    for fname in sorted(os.listdir(raw)):
        m = NAME.match(fname)
        if not m:
            continue
        rnd, isa, build, prog = int(m.group(1)), m.group(2), m.group(3), m.group(4)
        with open(os.path.join(raw, fname)) as f:
            doc = json.load(f)
        ran = doc.get("attnops_isa")
        if isa != "default" and ran is not None and ran != isa:
            sys.exit(f"ab_table.py: {fname} ran ISA {ran}, not {isa}")
        for key, val in doc.items():
            if not key.endswith(SUFFIX) or key.endswith("_ref" + SUFFIX):
                continue
            if not isinstance(val, (int, float)):
                continue
            case = row_name(prog, key)
            data.setdefault(isa, {}).setdefault(case, {}).setdefault(build, {})[rnd] = float(val)
    return data


def summarize(data, isa_order):
    rows = []
    isas = [i for i in isa_order if i in data] + sorted(i for i in data if i not in isa_order)
    for isa in isas:
        for case in sorted(data[isa]):
            per = data[isa][case]
            base, new = per.get("base", {}), per.get("new", {})
            ratios = [new[r] / base[r] for r in sorted(base) if r in new and base[r] > 0]
            rows.append({
                "isa": isa,
                "case": case,
                "base_ms_median": statistics.median(base.values()) if base else None,
                "new_ms_median": statistics.median(new.values()) if new else None,
                "ratio_median": statistics.median(ratios) if ratios else None,
                "ratio_min": min(ratios) if ratios else None,
                "ratio_max": max(ratios) if ratios else None,
                "rounds": len(ratios),
                "base_ms": [base[r] for r in sorted(base)],
                "new_ms": [new[r] for r in sorted(new)],
                "ratios": ratios,
            })
    return rows


def fmt_ms(v):
    if v is None:
        return "—"
    return f"{v:.2f}" if v >= 1 else f"{v:.3f}"


def fmt_ratio(row):
    if row["ratio_median"] is None:
        return "—"
    return f"{row['ratio_median']:.3f} ({row['ratio_min']:.3f}–{row['ratio_max']:.3f})"


def markdown(rows, a):
    quick = ", quick (the programs' --quick: FA S/8, AttnRes T=512, KeyPool S=512)" if a.quick else ""
    rounds = f"{a.rounds} round" + ("" if str(a.rounds) == "1" else "s")
    if a.case:
        cases = "cases " + ", ".join(f"`{c}`" for c in a.case)
    else:
        cases = ("B=1, N1=N2=8, S=" + ("512" if a.quick else "4096")
                 + ", D=Dv=128, BNSD, fwd/bwd × f32/bf16")
    progs_b = [x for x in a.programs_base.split() if x != "bench_fa"]
    progs_n = [x for x in a.programs_new.split() if x != "bench_fa"]
    if progs_b == progs_n:
        others = ", ".join(f"`{x}`" for x in progs_n)
    else:
        others = (", ".join(f"`{x}`" for x in progs_b) + " (base) against "
                  + ", ".join(f"`{x}`" for x in progs_n) + " (new)")
    base = f"`{a.base}`" + (f" ({a.base_arg})" if a.base_arg and a.base_arg != a.base else "")
    lines = [
        f"A/B: base {base} against new `{a.new}`.",
        f"CPU: {a.cpu} (attnops' default ISA: {a.default_isa}); ISAs forced with ATTNOPS_ISA: "
        f"{', '.join(a.isas.split(','))}"
        + (f"; SKIPPED: {'; '.join(a.skipped)}" if a.skipped else "")
        + (f"; load average before → after the rounds: {a.load}" if a.load else "") + ".",
        f"{rounds}, {a.threads} threads{quick}; in each round and ISA both builds' bench_fa back to "
        "back, then both builds' KeyPool and AttnRes, base first in odd rounds and new first in even ones; "
        "per round new / base, then the median and the range over rounds.",
        f"FlashAttention: `bench_fa --threads {a.threads} --reps 1 --no-peak`, {cases}; "
        f"KeyPool and AttnRes: {others or 'none'}.",
        "",
        "| ISA | case | base ms (median) | new ms (median) | new / base, median of rounds (range) |",
        "| --- | --- | ---: | ---: | --- |",
    ]
    for r in rows:
        lines.append(f"| {r['isa']} | `{r['case']}` | {fmt_ms(r['base_ms_median'])} | "
                     f"{fmt_ms(r['new_ms_median'])} | {fmt_ratio(r)} |")
    return "\n".join(lines) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--raw", required=True, help="directory of r<round>.<isa>.<build>.<prog>.json")
    p.add_argument("--md", help="write the Markdown here too")
    p.add_argument("--json", help="write the numbers here")
    p.add_argument("--base", default="?", help="the base revision (short hash)")
    p.add_argument("--base-arg", default="", help="the base revision as given")
    p.add_argument("--new", default="?", help="the new revision")
    p.add_argument("--cpu", default="?")
    p.add_argument("--default-isa", default="?")
    p.add_argument("--isas", default="", help="comma-separated, in table order")
    p.add_argument("--skipped", action="append", default=[])
    p.add_argument("--case", action="append", default=[], help="bench_fa case specs (default: the four)")
    p.add_argument("--programs-base", default="", help="the base build's bench programs")
    p.add_argument("--programs-new", default="", help="the new build's bench programs")
    p.add_argument("--rounds", default="?")
    p.add_argument("--threads", default="?")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--load", default="", help="the load averages (1, 5, 15 min) before and after the rounds")
    a = p.parse_args()

    data = load(a.raw)
    if not data:
        sys.exit(f"ab_table.py: no round JSON in {a.raw}")
    rows = summarize(data, [i for i in a.isas.split(",") if i])
    md = markdown(rows, a)
    sys.stdout.write(md)
    if a.md:
        with open(a.md, "w") as f:
            f.write(md)
    if a.json:
        keys = ("base", "base_arg", "new", "cpu", "default_isa", "isas", "skipped", "case", "rounds",
                "threads", "quick", "programs_base", "programs_new", "load")
        meta = {k: getattr(a, k) for k in keys}
        with open(a.json, "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
