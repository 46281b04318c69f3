"""The command line, `python -m gpurepro <command>`: the one package that sees argparse.

``main`` parses, dispatches and turns every error into one line and its exit status;
``args`` checks flag values; ``matrix`` holds the toolchain matrix's commands.
"""
