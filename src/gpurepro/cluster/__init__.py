"""A cluster run (``--slurm``): the trials as Slurm job arrays, merged into one document.

On the submitting side: ``options`` checks the cluster flags and resolves each partition's
target; ``stage`` copies the tree the nodes run from; ``partition`` splits the plan into array
tasks; ``submit`` submits, watches, resubmits and merges (``merge`` reads the shard journals);
``slurm`` is the sbatch/squeue/scancel client; ``progress`` the live display. On a node:
``task`` runs one array task's share into a shard journal (standard library only).
"""
