"""gpurepro.case.crash_claims: the claims a crash case with a counted exposure declares again and
again (fails less often than a reference, fails at all), with their sentences."""

from __future__ import annotations

from gpurepro.case import crash_claims as cc


def test_rate_against_names_the_reference():
    assert cc.rate_against() == ("{count} crashes in {exposure} cycles ({rate}) against the "
                                 "baseline's {reference_rate}")
    assert cc.rate_against("hold-far", "faults", "launches") == (
        "{count} faults in {exposure} launches ({rate}) against hold-far's {reference_rate}")


def test_fails_less_against_the_baseline_says_a_contradiction_contradicts_the_arm():
    c = cc.fails_less("one-thread", "the same loop in one thread", "Concurrency matters")
    assert (c.name, c.arm, c.reference, c.kind) == ("one-thread", "one-thread", None, "lower")
    assert c.supported == ("Concurrency matters: the same loop in one thread ({arm}) crashes less "
                           f"often than the baseline: {cc.rate_against()} ({cc.RATIO}).")
    assert c.contradicted.startswith("Contrary to what the arm was meant to show, the same loop")
    assert c.not_decided.endswith("; deciding it needs {needed}.")
    assert "{ratio_name}" in c.supported  # the horizon design names its own ratio


def test_fails_less_than_another_arm_names_it():
    c = cc.fails_less("lib-cuda", "the library calls on a plain cubin", "Plain cubins crash less",
                      reference="lib")
    assert c.reference == "lib"
    assert c.contradicted == ("The library calls on a plain cubin ({arm}) crashes more often than "
                              f"lib: {cc.rate_against('lib')} ({cc.RATIO}).")


def test_fails_at_all_is_a_count_rule_named_for_the_arm():
    c = cc.fails_at_all("always-unload", "unloading every module")
    assert (c.name, c.kind, c.outcome, c.detail, c.share) == (
        "always-unload-crashes", "outcome", "crashed", "SIGSEGV", 0.0)
    assert c.supported == ("Unloading every module ({arm}) crashes too: SIGSEGV in {count} of {n} "
                           "valid trials.")
    hung = cc.fails_at_all("stuck", "a stuck arm", outcome="hung", detail="hung", verb="hangs")
    assert hung.name == "stuck-hangs" and hung.outcome == "hung"
