"""The model: what the stages hand each other, on the ground floor (standard library only).

Every stage of the flow (case -> build -> plan -> run -> classify -> analyze -> record ->
report) reads and writes these types and imports nothing above them: the files the stages
write (``files``: whole or not at all, their sha256), a trial's outcomes (``outcomes``), the
plan (``plan``), the design (``design``: DesignSpec, what the command line asks for, the
journal keeps and the decider reads), a journal's lines (``journal``: RunHeader,
TrialRecord), and the typed views of a result
document (``result``, with the crashing threads' phases, ``phases``). JSON is read and written
only at two edges, the journal and the result document; ``jsontypes`` names the values it
carries.
"""
