// py-spy's dump text (0.4.x: src/dump.rs prints "Thread <id> (<state>): "<name>"" then one
// "    function (file:line)" per frame, innermost first; --locals adds "        Arguments:" /
// "        Locals:" blocks, --native adds "    symbol (library.so)" frames without a line) read
// into threads and frames, and where a stuck rank is. The first dumps are py-spy 0.4.3's own
// output on CPython 3.11; the DDP ones are the stacks real stuck ranks show (a data loader whose
// worker died, a checkpoint barrier, backward waiting for the reducer), with full file names as
// `ncclwatch status --stacks` asks for them and with py-spy's default short ones.
#include "trace/python_stack.h"

#include <gtest/gtest.h>

namespace ncclwatch::trace {
namespace {

// py-spy 0.4.3 `dump --pid` (default short file names), a main thread and a named helper thread.
const char* kTwoThreads =
    R"D(Process 25832: /root/.pyenv/versions/3.11.7/bin/python3 /tmp/stk_probe.py
Python v3.11.7 (/root/.pyenv/versions/3.11.7/bin/python3.11)

Thread 25832 (idle): "MainThread"
    load_batch (stk_probe.py:6)
    <module> (stk_probe.py:8)
Thread 25874 (idle): "pin_memory"
    worker (stk_probe.py:3)
    Thread.run (threading.py:982)
    Thread._bootstrap_inner (threading.py:1045)
    Thread._bootstrap (threading.py:1002)
)D";

// The same with --locals.
const char* kLocals = R"D(Process 25832: /root/.pyenv/versions/3.11.7/bin/python3 /tmp/stk_probe.py
Python v3.11.7 (/root/.pyenv/versions/3.11.7/bin/python3.11)

Thread 25832 (idle): "MainThread"
    load_batch (stk_probe.py:6)
        Arguments:
            n: 5
        Locals:
            q: [5, 5, 5]
    <module> (stk_probe.py:8)
Thread 25874 (idle): "pin_memory"
    worker (stk_probe.py:3)
    Thread.run (threading.py:982)
        Arguments:
            self: <Thread at 0x7fba06a71910>
    Thread._bootstrap_inner (threading.py:1045)
        Arguments:
            self: <Thread at 0x7fba06a71910>
)D";

// The same with --native: C frames around the Python ones, some without a symbol.
const char* kNative = R"D(Process 25832: /root/.pyenv/versions/3.11.7/bin/python3 /tmp/stk_probe.py
Python v3.11.7 (/root/.pyenv/versions/3.11.7/bin/python3.11)

Thread 25832 (idle): "MainThread"
    clock_nanosleep (libc.so.6)
    time_sleep (libpython3.11.so.1.0)
    load_batch (stk_probe.py:6)
    <module> (stk_probe.py:8)
    0x7fba0704524a (libc.so.6)
Thread 25874 (idle): "pin_memory"
    clock_nanosleep (libc.so.6)
    std::function<void ()>::operator() (libtorch_cpu.so)
    worker (stk_probe.py:3)
)D";

// A DDP rank whose data loader waits for a worker that died (full file names).
const char* kDataLoaderFull = R"D(Process 4242: /usr/bin/python3 -u train.py --epochs 90
Python v3.10.12 (/usr/bin/python3.10)

Thread 4242 (idle): "MainThread"
    wait (/usr/lib/python3.10/threading.py:324)
    get (/usr/lib/python3.10/queue.py:180)
    _try_get_data (/opt/venv/lib/python3.10/site-packages/torch/utils/data/dataloader.py:1133)
    _get_data (/opt/venv/lib/python3.10/site-packages/torch/utils/data/dataloader.py:1294)
    _next_data (/opt/venv/lib/python3.10/site-packages/torch/utils/data/dataloader.py:1332)
    __next__ (/opt/venv/lib/python3.10/site-packages/torch/utils/data/dataloader.py:631)
    train_one_epoch (/home/alice/imagenet/train.py:88)
    main (/home/alice/imagenet/train.py:140)
    <module> (/home/alice/imagenet/train.py:151)
Thread 4300 (idle): "Thread-1 (_pin_memory_loop)"
    select (/usr/lib/python3.10/selectors.py:416)
    wait (/usr/lib/python3.10/multiprocessing/connection.py:931)
    _pin_memory_loop (/opt/venv/lib/python3.10/site-packages/torch/utils/data/_utils/pin_memory.py:49)
    run (/usr/lib/python3.10/threading.py:953)
)D";

// The same, as py-spy prints it by default (short names: the package path, the file alone).
const char* kDataLoaderShort = R"D(Thread 4242 (idle): "MainThread"
    wait (threading.py:324)
    get (queue.py:180)
    _try_get_data (torch/utils/data/dataloader.py:1133)
    _get_data (torch/utils/data/dataloader.py:1294)
    _next_data (torch/utils/data/dataloader.py:1332)
    __next__ (torch/utils/data/dataloader.py:631)
    train_one_epoch (train.py:88)
    main (train.py:140)
)D";

// A rank stuck in a checkpoint's barrier, through torch.distributed's logging wrapper.
const char* kBarrier = R"D(Thread 77 (active): "MainThread"
    barrier (/usr/local/lib/python3.11/dist-packages/torch/distributed/distributed_c10d.py:4159)
    wrapper (/usr/local/lib/python3.11/dist-packages/torch/distributed/c10d_logger.py:83)
    save_checkpoint (/workspace/llm/checkpoint.py:40)
    train (/workspace/llm/train.py:210)
)D";

// A rank inside another collective (waiting elsewhere), called through the wrapper only.
const char* kAllReduceWrapper = R"D(Thread 77 (active+gil): "MainThread"
    wrapper (/usr/local/lib/python3.11/dist-packages/torch/distributed/c10d_logger.py:83)
    sync_metrics (/workspace/llm/metrics.py:12)
)D";

// A rank whose backward waits in autograd (DDP's reducer), py-spy's short names, under Lightning.
const char* kBackwardUnderLightning = R"D(Thread 9 (active): "MainThread"
    _engine_run_backward (torch/autograd/graph.py:825)
    backward (torch/autograd/__init__.py:289)
    backward (torch/_tensor.py:581)
    backward (lightning/pytorch/core/module.py:1117)
    _run_backward (lightning/pytorch/loops/optimization/automatic.py:320)
    main (train.py:12)
)D";

TEST(PySpyDump, ReadsThreadsAndFramesOfARealDump) {
  const PyDump d = parse_py_spy_dump(kTwoThreads);
  EXPECT_EQ(d.python, "3.11.7");
  ASSERT_EQ(d.threads.size(), 2u);
  EXPECT_EQ(d.threads[0].id, "25832");
  EXPECT_EQ(d.threads[0].state, "idle");
  EXPECT_EQ(d.threads[0].name, "MainThread");
  ASSERT_EQ(d.threads[0].frames.size(), 2u);
  EXPECT_EQ(d.threads[0].frames[0].function, "load_batch");
  EXPECT_EQ(d.threads[0].frames[0].file, "stk_probe.py");
  EXPECT_EQ(d.threads[0].frames[0].line, 6);
  EXPECT_EQ(d.threads[0].frames[1].function, "<module>");
  EXPECT_EQ(d.threads[1].name, "pin_memory");
  ASSERT_EQ(d.threads[1].frames.size(), 4u);
  EXPECT_EQ(d.threads[1].frames[1].function, "Thread.run");
  const StackLocation loc = locate(d);
  EXPECT_EQ(loc.thread, "MainThread");
  EXPECT_EQ(loc.where, "stk_probe.py:load_batch");
  EXPECT_EQ(loc.line, 6);
  EXPECT_EQ(describe(loc), "stk_probe.py:load_batch");
}

TEST(PySpyDump, LocalsAreNotFrames) {
  const PyDump d = parse_py_spy_dump(kLocals);
  ASSERT_EQ(d.threads.size(), 2u);
  EXPECT_EQ(d.threads[0].frames.size(), 2u);
  EXPECT_EQ(d.threads[1].frames.size(), 3u);
  EXPECT_EQ(locate(d).where, "stk_probe.py:load_batch");
}

TEST(PySpyDump, NativeFramesAreSkipped) {
  const PyDump d = parse_py_spy_dump(kNative);
  ASSERT_EQ(d.threads.size(), 2u);
  ASSERT_EQ(d.threads[0].frames.size(), 5u);
  EXPECT_EQ(frame_kind(d.threads[0].frames[0]), FrameKind::kNative);
  EXPECT_EQ(d.threads[1].frames[1].function, "std::function<void ()>::operator()");
  EXPECT_EQ(d.threads[1].frames[1].file, "libtorch_cpu.so");
  EXPECT_EQ(locate(d).where, "stk_probe.py:load_batch");
}

TEST(PySpyDump, ADataLoaderIsNamedByTheCallIntoTorchAndItsCaller) {
  for (const char* text : {kDataLoaderFull, kDataLoaderShort}) {
    const StackLocation loc = locate(parse_py_spy_dump(text));
    EXPECT_EQ(loc.where, "torch/utils/data/dataloader.py:__next__") << text;
    EXPECT_EQ(loc.line, 631);
    EXPECT_EQ(loc.innermost, "torch/utils/data/dataloader.py:_try_get_data");
    EXPECT_EQ(loc.caller, "train.py:88 (train_one_epoch)");
    EXPECT_EQ(describe(loc),
              "torch/utils/data/dataloader.py:__next__, called from train.py:88 (train_one_epoch)");
  }
}

TEST(PySpyDump, TorchsCollectiveWrapperIsNeverTheAnswer) {
  StackLocation loc = locate(parse_py_spy_dump(kBarrier));
  EXPECT_EQ(loc.where, "torch/distributed/distributed_c10d.py:barrier");
  EXPECT_EQ(loc.caller, "checkpoint.py:40 (save_checkpoint)");
  EXPECT_EQ(loc.innermost, "");
  // Nothing but the wrapper: it is all there is to name.
  loc = locate(parse_py_spy_dump(kAllReduceWrapper));
  EXPECT_EQ(loc.where, "torch/distributed/c10d_logger.py:wrapper");
  EXPECT_EQ(loc.caller, "metrics.py:12 (sync_metrics)");
}

TEST(PySpyDump, BackwardIsNamedAtTorchsEntryAndItsCallerInTheFramework) {
  const StackLocation loc = locate(parse_py_spy_dump(kBackwardUnderLightning));
  EXPECT_EQ(loc.where, "torch/_tensor.py:backward");
  EXPECT_EQ(loc.innermost, "torch/autograd/graph.py:_engine_run_backward");
  EXPECT_EQ(loc.caller, "lightning/pytorch/core/module.py:1117 (backward)");
}

TEST(PySpyDump, FileKinds) {
  auto kind = [](const std::string& file, int line = 1) {
    return frame_kind(PyFrame{"f", file, line});
  };
  EXPECT_EQ(kind("/usr/lib/python3.11/threading.py"), FrameKind::kStandardLibrary);
  EXPECT_EQ(kind("/root/.pyenv/versions/3.11.7/lib/python3.11/queue.py"),
            FrameKind::kStandardLibrary);
  EXPECT_EQ(kind("<frozen importlib._bootstrap>"), FrameKind::kStandardLibrary);
  EXPECT_EQ(kind("multiprocessing/connection.py"), FrameKind::kStandardLibrary);
  EXPECT_EQ(kind("/x/lib/python3.11/site-packages/numpy/core/fromnumeric.py"), FrameKind::kLibrary);
  EXPECT_EQ(kind("transformers/trainer.py"), FrameKind::kLibrary);
  EXPECT_EQ(kind("/home/a/lib/python_tools/train.py"), FrameKind::kApplication);
  EXPECT_EQ(kind("myproj/data.py"), FrameKind::kApplication);
  EXPECT_EQ(kind("<string>"), FrameKind::kApplication);
  EXPECT_EQ(kind("libc.so.6", 0), FrameKind::kNative);
  EXPECT_EQ(display_file(PyFrame{"f", "/usr/lib/python3.10/multiprocessing/queues.py", 3}),
            "multiprocessing/queues.py");
  EXPECT_EQ(display_file(PyFrame{"f", "/opt/v/lib/python3.10/site-packages/torch/x.py", 3}),
            "torch/x.py");
  EXPECT_EQ(display_file(PyFrame{"f", "/home/a/proj/train.py", 3}), "train.py");
}

TEST(PySpyDump, OnlyTheStandardLibraryNamesItsInnermostFrame) {
  const StackLocation loc =
      locate(parse_py_spy_dump("Thread 1 (idle): \"MainThread\"\n    wait (threading.py:320)\n    "
                               "join (threading.py:1112)\n"));
  EXPECT_TRUE(loc.found);
  EXPECT_EQ(loc.where, "threading.py:wait");
}

TEST(PySpyDump, NoMainThreadTakesTheFirstWithAPythonFrame) {
  const StackLocation loc =
      locate(parse_py_spy_dump("Thread 0x7F01 (idle)\n    clock_nanosleep (libc.so.6)\n"
                               "Thread 0x7F02 (active)\n    step (/srv/job/loop.py:9)\n"));
  EXPECT_EQ(loc.thread, "thread 0x7F02");
  EXPECT_EQ(loc.where, "loop.py:step");
}

TEST(PySpyDump, FileNamesWithSpacesAndParentheses) {
  const PyDump d = parse_py_spy_dump(
      "Thread 1 (idle): \"MainThread\"\n    go (/home/a (copy)/my train.py:12)\n");
  ASSERT_EQ(d.threads.size(), 1u);
  ASSERT_EQ(d.threads[0].frames.size(), 1u);
  EXPECT_EQ(d.threads[0].frames[0].function, "go");
  EXPECT_EQ(d.threads[0].frames[0].file, "/home/a (copy)/my train.py");
  EXPECT_EQ(d.threads[0].frames[0].line, 12);
}

TEST(PySpyDump, ColoursFromATerminalAndControlCharactersAreHarmless) {
  const PyDump d = parse_py_spy_dump(
      "\x1b[1;33mThread 7\x1b[0m (idle): \"MainThread\"\r\n"
      "    \x1b[32mload\x1b[0m (\x1b[36mdata.py\x1b[0m:\x1b[2m4\x1b[0m)\r\n"
      "    evil\x07name (x\x1b]0;title\x07.py:5)\n");
  ASSERT_EQ(d.threads.size(), 1u);
  ASSERT_EQ(d.threads[0].frames.size(), 2u);
  EXPECT_EQ(d.threads[0].frames[0].function, "load");
  EXPECT_EQ(d.threads[0].frames[0].file, "data.py");
  EXPECT_EQ(d.threads[0].frames[0].line, 4);
  for (char c : d.threads[0].frames[1].function + d.threads[0].frames[1].file)
    EXPECT_TRUE(c >= 0x20 && c < 0x7f) << static_cast<int>(c);
}

TEST(PySpyDump, NotADumpHasNoThreadAndNoLocation) {
  for (const char* text :
       {"", "Error: Failed to find python version from target process\n", "    orphan (a.py:1)\n",
        "Thread", "Thread 1 (idle): \"MainThread\"\n",
        "Thread 1 (idle): \"MainThread\"\n    x (\n    (a.py:3)\n    y (a.py:99999999999)\n"}) {
    const PyDump d = parse_py_spy_dump(text);
    EXPECT_FALSE(locate(d).found) << text;
    EXPECT_EQ(describe(locate(d)), "");
  }
}

TEST(PySpyDump, TruncatedDumpKeepsWhatIsWhole) {
  std::string text = kDataLoaderFull;
  text.resize(text.find("    _get_data (") + 24);  // cut in the middle of a frame line
  const StackLocation loc = locate(parse_py_spy_dump(text));
  EXPECT_EQ(loc.where, "torch/utils/data/dataloader.py:_try_get_data");
  EXPECT_EQ(loc.caller, "");
}

TEST(PySpyDump, HugeAndBinaryInputIsBounded) {
  std::string text = "Thread 1 (idle): \"MainThread\"\n";
  text += "    " + std::string(100000, 'f') + " (a.py:1)\n";  // a line no dump has: skipped
  for (int i = 0; i < 256; ++i) text += static_cast<char>(i);
  text += "\n    real (b.py:2)\n";
  const PyDump d = parse_py_spy_dump(text);
  ASSERT_EQ(d.threads.size(), 1u);
  ASSERT_EQ(d.threads[0].frames.size(), 1u);
  EXPECT_EQ(locate(d).where, "b.py:real");
}

}  // namespace
}  // namespace ncclwatch::trace
