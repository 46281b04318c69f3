"""Stop signals held over a step that must not be cut in two.

Python runs a signal's handler in the main thread between two steps of its code, and the run's
handlers raise ``Stopped`` there. A step that one raise would leave half done is run with the
stop signals held: a stop that arrives meanwhile is raised again, with the handler it had,
once the step is over. Standard library only.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from ..errors import STOP_SIGNALS


@contextmanager
def stops_held() -> Iterator[None]:
    """Run the block with STOP_SIGNALS held (see the module's docstring). Elsewhere than the
    main thread no handler runs, and nothing is held."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    previous = {sig: signal.signal(sig, lambda signum, _frame: held.append(signum))
                for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)
        if held:
            signal.raise_signal(held[0])


def start_thread(thread: threading.Thread) -> None:
    """Start ``thread`` with the stop signals held: a stop raised inside ``Thread.start`` after
    the new thread began left it without its place in threading's table, and it printed a
    traceback to the run's stderr as it started (KeyError in ``_bootstrap_inner``)."""
    with stops_held():
        thread.start()
