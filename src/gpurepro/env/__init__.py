"""The environment a run ran in, as it may be posted (standard library only).

``fingerprint`` takes what a maintainer triaging the issue needs: GPU, driver, host, Python,
repository, and the allow-listed environment variables.
"""
