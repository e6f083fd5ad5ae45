"""What the trace reader checks (hta_trace_check.py, tb_trace_check.py) share.

The command line (TRACE.json, `ncclwatch report|run --trace` output, plus a check's own options),
the exit codes (0 the reader agrees, 1 it does not, 77 -- CTest's skip code -- the reader cannot
be imported) and the merged trace split by pid into one file per rank (each with its own
distributedInfo), as the readers want it and as a user does before pointing them at a directory.
"""
import argparse
import json
import os

SKIP = 77


class ReaderMissing(Exception):
    """The reader under test cannot be imported here (scripts/test.sh installs it in a venv)."""


def import_reader(package, importer):
    """importer() -> what the check uses; any import failure means "not installed here"."""
    try:
        return importer()
    except Exception as e:  # noqa: BLE001
        raise ReaderMissing(f"{package} cannot be imported ({e})") from e


def split_by_rank(path, out_dir):
    """Writes out_dir/rank<pid>.json per process; returns ({pid: path}, {pid: ncclwatch overlap %})."""
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    per_pid, ours = {}, {}
    for ev in doc["traceEvents"]:
        per_pid.setdefault(ev.get("pid"), []).append(ev)
        if ev.get("ph") == "M" and ev.get("name") == "process_labels":
            ours[ev["pid"]] = ev["args"].get("ncclwatch_overlap_pct")
    world = doc["distributedInfo"]["world_size"]
    files = {}
    for pid, events in per_pid.items():
        rank_doc = {k: v for k, v in doc.items() if k != "traceEvents"}
        rank_doc["distributedInfo"] = dict(doc["distributedInfo"], rank=pid, world_size=world)
        rank_doc["traceEvents"] = events
        files[pid] = os.path.join(out_dir, f"rank{pid}.json")
        with open(files[pid], "w", encoding="utf-8") as f:
            json.dump(rank_doc, f)
    return files, ours


def run(doc, check, options=()):
    """A check's main: parses TRACE.json and `options` ((flag, argparse keywords) pairs), calls
    check(args) -> (problems, summary) and returns the exit code."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace")
    for flag, keywords in options:
        ap.add_argument(flag, **keywords)
    args = ap.parse_args()
    try:
        problems, summary = check(args)
    except ReaderMissing as e:
        print(f"SKIP: {e}; scripts/test.sh installs it")
        return SKIP
    if problems:
        print("FAIL: " + "; ".join(problems))
        return 1
    print("OK: " + summary)
    return 0
