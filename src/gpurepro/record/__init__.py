"""Record: a run's journal(s) -> one result document, decided, validated, written atomically.

``result`` runs the stage (``record_journals``: never replacing a result by accident);
``document`` assembles the document from the journal (``build_document``) and writes it once it
validates (``write_document``); ``validation`` checks the schema and what no schema can say
(``validation_errors``, ``meaning_errors``, ``validate_document``); ``scrub`` rewrites committed
journals and documents with today's privacy rules. The claims and the verdict are decided by
gpurepro.analyze.verdict. Importing this package imports none of them (the run stage reaches
``result`` on GPU nodes without jsonschema).
"""
