"""The command line, `python -m gpurepro <command>`: the one package that sees argparse.

``main`` parses, dispatches and turns every error into one line and its exit status;
``parser`` declares every command and flag; ``args`` checks the flags into typed requests;
``run`` is the flow of `run` and `case` (check, build, open, execute, record, report, index);
``results`` holds the commands on documents; ``matrix`` the toolchain matrix's commands.
"""
