"""What the one-round PyTorch peers (peer_keypool.py, peer_attnres.py) share:
their options, the median and min of timed calls, and the JSON they write;
bench_python.py and bench_distributed.py use the JSON and table output too.
No torch import here (peer_attnres.py sets the thread count before its own)."""
import argparse
import json
import statistics


def parser(calls):
    """[--threads N] [--json PATH] [--quick] [--calls N] (default `calls`);
    --threads 0, the default, leaves the choice to the peer."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--json")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--calls", type=int, default=calls)
    return ap


def median_min(run, calls):
    """One untimed run(), then `calls` timed; run() returns its own time in ms
    (so that it can leave set-up out).  Returns (median, min)."""
    times = [run() for _ in range(calls + 1)][1:]
    return statistics.median(times), min(times)


def write_json(path, res):
    """res to path (indented, with a final newline); nothing when path is empty."""
    if path:
        with open(path, "w") as f:
            json.dump(res, f, indent=2)
            f.write("\n")


def report(text, res, json_path, md_path):
    """Print the markdown table `text`, write res as JSON and the table to their paths (when given)."""
    print(text)
    write_json(json_path, res)
    if md_path:
        with open(md_path, "w") as f:
            f.write(text)
