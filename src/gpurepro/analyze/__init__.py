"""Analyze: a run's trials -> the numbers and decisions its document holds.

``tally`` counts outcomes per arm (standard library); ``stats`` gives exact intervals, rates per
unit of exposure and Kaplan-Meier curves (scipy); ``claims`` decides a case's claims under one
family-wise error rate; ``verdict`` composes the verdict from the decided claims; ``views`` is
the typed reading of a document a case's verdict gets (standard library); ``calibrate``
simulates a case's design. Importing this package imports none of them.
"""
