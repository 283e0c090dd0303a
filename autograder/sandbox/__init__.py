"""The sandbox: everything that runs, confines or cleans up after student code. The security boundary.

Its threat model and what each module defends against are in README.md beside this file. It imports nothing
of the grader's outside this package: the rest of the grader calls it, never the other way.

    runner       one part's child: started with limits (from the zygote or a fresh Python), fed, read back
    zygote       the per-submission process that imports NumPy once and forks each part's child
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
    interpreter  refusing a Python (or its libraries) a sandbox user could change
"""
