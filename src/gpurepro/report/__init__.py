"""Report: a validated result document in, files out; nothing here runs or records a trial.

``markdown`` writes the report (Markdown, the forest and survival plots, the pyperf suite) that
``nox -s report`` regenerates from an attached JSON; ``compare`` sets runs of one case side by
side; ``comment`` is the body of a GitHub issue comment; ``index`` is results/README.md;
``cluster`` is the report's section for a cluster run.
"""
