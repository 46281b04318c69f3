"""Axis.watch beyond opcode presence (gpurepro.building.sass.watched): an instruction with its
operands and immediates, wildcards, and instruction counts; plain opcodes as before."""

from __future__ import annotations

import pytest

from gpurepro.building import sass
from gpurepro.sweep import search, table

# The abs_clamp kernel's clamp on either side of the 12.6.85 fix (ptxas_abs_clamp's README),
# and a third release that clamps with another immediate: the same opcodes as the second.
BEFORE = ["LDG.E R2, desc[UR4][R2.64]", "VIMNMX.RELU R0, R2, 0x5, PT", "EXIT"]
AFTER = ["LDG.E R2, desc[UR4][R2.64]", "IABS R0, R2", "VIMNMX.RELU R0, R0, 0x5, PT", "EXIT"]
OTHER = ["LDG.E R2, desc[UR4][R2.64]", "IABS R0, R2", "VIMNMX.RELU R0, R0, 0x7, PT", "EXIT"]


def _listing(texts):
    return {"abs_clamp": [sass.parse_instr(16 * i, t) for i, t in enumerate(texts)]}


def test_plain_opcodes_give_what_presence_gave():
    watch = [("abs_clamp", "IABS"), ("abs_clamp", "VIMNMX"), ("nope", "IABS")]
    for texts in (BEFORE, AFTER):
        assert sass.watched(_listing(texts), watch) == sass.presence(_listing(texts), watch)


@pytest.mark.parametrize("pattern, before, after, other", [
    ("VIMNMX.RELU R0, R0, 0x5, PT", False, True, False),     # the instruction exactly
    ("VIMNMX* *, 0x5, *", True, True, False),                # an immediate, any registers
    ("VIMNMX.RELU R0, R2, *", True, False, False),           # what the clamp reads
    ("#VIMNMX*", 1, 1, 1),                                   # a count
    ("#*", 3, 4, 4),
])
def test_a_pattern_sees_operands_immediates_and_counts(pattern, before, after, other):
    got = [sass.watched(_listing(t), [("abs_clamp", pattern)])[f"abs_clamp:{pattern}"]
           for t in (BEFORE, AFTER, OTHER)]
    assert got == [before, after, other]


def test_a_predicated_instruction_matches_with_or_without_its_predicate():
    listing = {"k": [sass.parse_instr(0, "@!P0 IABS R0, R2")]}
    assert sass.watched(listing, [("k", "IABS R0, *"), ("k", "@!P0 IABS *"), ("k", "@P1 IABS *")]) == \
        {"k:IABS R0, *": True, "k:@!P0 IABS *": True, "k:@P1 IABS *": False}


def test_an_immediate_that_changes_alone_splits_the_segment():
    """Same opcodes in AFTER and OTHER: presence sees one segment, the immediate two."""
    points = [{"index": i, "sha256": s} for i, s in enumerate("abc")]
    by = dict(zip("abc", (BEFORE, AFTER, OTHER), strict=True))
    opcode = {s: sass.watched(_listing(t), [("abs_clamp", "IABS")]) for s, t in by.items()}
    imm = {s: sass.watched(_listing(t), [("abs_clamp", "VIMNMX* *, 0x5, *")]) for s, t in by.items()}
    assert len(search.segments_of(points, opcode)) == 2
    assert len(search.segments_of(points, imm)) == 2
    both = {s: {**opcode[s], **imm[s]} for s in by}
    assert len(search.segments_of(points, both)) == 3


def test_the_table_writes_a_count_as_a_number():
    assert table._fact(3) == "3" and table._fact(True) == "present" and table._fact(False) == "absent"
