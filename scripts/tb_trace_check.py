#!/usr/bin/env python3
"""TensorBoard's PyTorch profiler plugin reads ncclwatch's exported timeline (label `tensorboard`).

  tb_trace_check.py TRACE.json

TRACE.json is `ncclwatch report|run --trace` output: one process per rank. The plugin
(torch-tb-profiler) reads one file per worker, so the merged file is split by pid into rank files
as for HTA (trace_reader_common.split_by_rank, what a user does before `tensorboard --logdir`). Each
file then goes through the plugin's own loading path (RunProfileData.parse: preprocessing,
event parsing, the operator tree; RunGenerator: the overview, operator and kernel views;
DistributedRunGenerator over all ranks: the distributed view). Checked per rank: no error from
the plugin (it logs "ranges on the same thread should not intersect" for a malformed track), the
ProfilerStep ranges come back as the steps of the file, kernels are seen as compute and the NCCL
kernels as communication (Kineto's External id linking), and the distributed view has every
rank. Exit 0 on success, 1 on a failure, 77 (CTest's skip code) when the plugin cannot be
imported (trace_reader_common.py).
"""
import json
import logging
import sys
import tempfile

from trace_reader_common import import_reader, run, split_by_rank


# Logged at error level for what is not an error in the file: the communicator's setup collective
# (DDP's parameter broadcast) runs before the first ProfilerStep, as in a PyTorch profile that
# starts before the DDP constructor; the plugin leaves it out of the per-step figures.
BENIGN = ("Found a communication op not belong to any step.",)


class Errors(logging.Handler):
    def __init__(self):
        super().__init__(logging.ERROR)
        self.messages = []

    def emit(self, record):
        if record.getMessage() not in BENIGN:
            self.messages.append(record.getMessage())


def plugin():
    from torch_tb_profiler import utils
    from torch_tb_profiler.profiler.data import DistributedRunProfileData, RunProfileData
    from torch_tb_profiler.profiler.run_generator import DistributedRunGenerator, RunGenerator
    return utils, DistributedRunProfileData, RunProfileData, DistributedRunGenerator, RunGenerator


def expected_steps(path):
    """{pid: [step numbers]} of the ProfilerStep ranges in the merged file."""
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    steps = {}
    for ev in doc["traceEvents"]:
        if ev.get("ph") == "X" and str(ev.get("name", "")).startswith("ProfilerStep#"):
            steps.setdefault(ev["pid"], []).append(ev["name"][len("ProfilerStep#"):])
    return steps


def check(args):
    utils, DistributedRunProfileData, RunProfileData, DistributedRunGenerator, RunGenerator = \
        import_reader("torch-tb-profiler", plugin)
    errors = Errors()
    utils.get_logger().addHandler(errors)
    bad = []
    steps_in_file = expected_steps(args.trace)
    dist = []
    with tempfile.TemporaryDirectory() as tmp:
        files, _ = split_by_rank(args.trace, tmp)
        for pid, path in sorted(files.items()):
            errors.messages.clear()
            data = RunProfileData.parse(f"rank{pid}", "1", path, tmp)
            profile = RunGenerator(f"rank{pid}", "1", data).generate_run_profile()
            dist.append(DistributedRunProfileData(data))
            dist[-1].communication_parse()  # as RunLoader does before the distributed view
            steps = list(data.steps_names)
            print(f"rank {pid}: steps {len(steps)}, views {profile.views}, kernel {data.has_kernel}, "
                  f"communication {data.has_communication}, errors {len(errors.messages)}")
            for m in errors.messages[:3]:
                print("   plugin:", m[:300])
            if errors.messages:
                bad.append(f"rank {pid}: plugin errors, first: {errors.messages[0]}")
            if steps != steps_in_file.get(pid, []):
                bad.append(f"rank {pid}: steps {steps} != the file's {steps_in_file.get(pid)}")
            if not data.has_kernel or not data.has_communication:
                bad.append(f"rank {pid}: kernel {data.has_kernel}, communication {data.has_communication}")
            if not data.distributed_info or data.distributed_info.get("rank") != pid:
                bad.append(f"rank {pid}: distributedInfo {data.distributed_info}")
        overall = DistributedRunGenerator(dist, "1").generate_run_profile()
        print(f"distributed view: {overall.views}")
        if not overall.views:
            bad.append("no distributed view")
    return bad, f"{len(files)} ranks read by torch-tb-profiler"


if __name__ == "__main__":
    sys.exit(run(__doc__, check))
