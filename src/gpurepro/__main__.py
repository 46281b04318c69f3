import sys

try:
    from .cli.main import main
except KeyboardInterrupt:  # Ctrl-C while Python was still importing: nothing had started
    sys.exit(130)

sys.exit(main())
