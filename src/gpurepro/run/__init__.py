"""Run: a plan's trials as isolated processes, each classified and journaled as it ends.

Standard library only (rich draws the progress display where it is importable): this stage
runs from a prebuilt build/ on a GPU node with no network. ``plan`` shuffles arms x trials in
randomized blocks; ``session`` opens a run (a new journal, or one resumed); ``execute`` runs
the plan's trials on worker sets, one per GPU; ``trial`` runs one process group under its
limits, inside a cgroup and a PID namespace of its own where the kernel gives them
(``isolation``, ``enter``); ``classify`` reads what it printed into one outcome; ``watchdog`` kills what a dead
harness left; ``journal`` keeps every finished trial; ``instruments``, ``phases``, ``progress``
and ``atomic`` serve them.
"""
