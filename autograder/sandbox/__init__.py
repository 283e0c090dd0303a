"""The sandbox: everything that runs, confines or cleans up after student code. The security boundary.

The threat: a submission controls its child completely (it may fork, call setsid, fill memory or disk, send
forged messages, leave links and FIFOs where the grader might look, name its folders like the grader's own),
so everything a child produces is hostile input. The defence: the grading process never imports student code,
reads a child only through pipes it made and bounds everything it decodes, ends every process a part started,
and under --run-as keeps each submission in a sandbox user of its own, with the instructor's files hidden.
The repository's docs/security.md says what each way of running the grader promises and what it does not.

It imports nothing of the grader's outside this package: the rest of the grader calls it, never the other way.
What runs where a student grades their own code (``system``, ``childspec``, ``runner``, ``portable``, and what
they import) imports no Linux-only module at import time: tests/test_layout.py checks it.

    system       what this platform offers (Linux, macOS, Windows): the one place that asks
    childspec    what a part's child is started with (``ChildSpec``, ``Limits``), passed whole
    runner       one part's child: started with limits (from the zygote or a fresh Python), fed, read back
    confinement  the limits a POSIX child takes on before any student code runs, written once
    landlock     a child of the grader's own user writes in its folder alone and reaches no process above it
    portable     a part's child where the Linux sandbox is not (macOS, Windows): a Python per part
    jobs         Windows Job Objects: a part's processes capped in memory and ended together
    namespaces   Linux's PID and mount namespaces for a child, probed once
    bytecode     the submission's bytecode compiled once per grade; the solution's kept between runs
    cleanup      working folders, and what a sandbox user left, removed
    scratch      the grader's temporary folders, named for their maker: what a killed grader left is removed
    zygote       the per-submission process that imports NumPy once and forks each part's child (Linux)
    zygotes      the grader's side of the zygotes and of batch's template
    worker       the child's entry: imports the submission from its sources and runs the part driver
    frames       the one message format between grader and child, bounded both ways
    untrusted    making what a child sent safe to show
    reaper       ending every process a part started; killing a sandbox user's processes
    ipc          System V IPC, keyrings and mount namespaces a child must not share or leave behind
    cgroups      a part's memory counted across all its processes
    fairness     a part starved of CPU by others is graded again, alone
    tree         walking and removing untrusted folders without recursion
    archive      unpacking a handed-in archive without trusting it
    isolation    private copies of a submission; what a sandbox user can read
    identities   a pool of sandbox users, one per submission graded at once
    interpreter  what a Python runs (its files, its libraries) that a sandbox user could change
"""
