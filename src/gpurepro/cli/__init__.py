"""The command line, `python -m gpurepro <command>`: the one package that sees argparse.

``main`` parses, dispatches and turns every error into one line and its exit status;
``parser`` declares every command and flag, each command's function by name (its module is
imported when it runs); ``args`` checks the flags into typed requests. One module per command
or family of commands: ``run`` (the flow of `run` and `case`: check, build, open, execute,
record, report, index; and `build`, `target`, `pins`, `prepare`, `slurm-task`), ``record``,
``results`` (the commands on result documents: report, validate, compare, issue, calibrate),
``plan``, ``pack``, ``bisect``, ``matrix``, ``history``, ``index``, ``scrub``, ``new``, ``env``.
"""
