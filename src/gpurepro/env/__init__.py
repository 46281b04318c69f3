"""The environment a run ran in, as it may be posted (standard library only).

``fingerprint`` takes what a maintainer triaging the issue needs: GPU, driver, host, Python,
repository, and the allow-listed environment variables; ``privacy`` holds the rules every
record obeys: no secret-named variable, secret-looking values masked, checkout paths relative,
the home folder as ``~``, and with ``--redact`` no hostname.
"""
