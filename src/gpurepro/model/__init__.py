"""The model: what the stages hand each other, on the ground floor (standard library only).

Every stage of the flow (case -> build -> plan -> run -> classify -> analyze -> record ->
report) reads and writes these types and imports nothing above them: the files the stages
write (``files``: whole or not at all, their sha256). JSON is read and written only at two
edges, the journal and the result document.
"""
