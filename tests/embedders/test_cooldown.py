from __future__ import annotations

import pytest

from robotmem.embedders.cooldown import Cooldown


def test_new_cooldown_is_ready(clock):
    cooldown = Cooldown(clock=clock)
    assert cooldown.ready
    assert cooldown.remaining_s == 0.0
    assert cooldown.failures == 0
    assert cooldown.last_error == ""


def test_backoff_doubles_from_60_to_a_300_second_cap(clock):
    cooldown = Cooldown(clock=clock)
    delays = []
    for attempt in range(6):
        delays.append(cooldown.record_failure(f"boom {attempt}"))
        assert not cooldown.ready
        assert cooldown.remaining_s == delays[-1]
        clock.advance(delays[-1])
        assert cooldown.ready
    assert delays == [60.0, 120.0, 240.0, 300.0, 300.0, 300.0]
    assert cooldown.failures == 6
    assert cooldown.last_error == "boom 5"


def test_cooldown_blocks_until_the_last_second(clock):
    cooldown = Cooldown(clock=clock)
    cooldown.record_failure("connection refused")
    clock.advance(59.5)
    assert not cooldown.ready
    assert cooldown.remaining_s == pytest.approx(0.5)
    clock.advance(0.5)
    assert cooldown.ready


def test_success_resets_the_sequence(clock):
    cooldown = Cooldown(clock=clock)
    cooldown.record_failure("a")
    clock.advance(60)
    cooldown.record_failure("b")
    assert cooldown.remaining_s == 120.0
    clock.advance(120)
    cooldown.record_success()
    assert cooldown.ready
    assert cooldown.failures == 0
    assert cooldown.last_error == ""
    assert cooldown.record_failure("c") == 60.0


def test_describe_names_the_wait_and_the_last_error(clock):
    cooldown = Cooldown(clock=clock)
    assert cooldown.describe() == "ready"
    cooldown.record_failure("timed out")
    clock.advance(3)
    assert cooldown.describe() == "cooling down for 57 s after 1 failure: timed out"
    clock.advance(57)
    assert cooldown.describe() == "retrying after 1 failure: timed out"


def test_default_clock_is_monotonic():
    cooldown = Cooldown()
    cooldown.record_failure("x")
    assert 59.0 < cooldown.remaining_s <= 60.0


def test_custom_steps_and_invalid_steps(clock):
    cooldown = Cooldown(clock=clock, steps=(1, 2))
    assert [cooldown.record_failure("x") for _ in range(3)] == [1.0, 2.0, 2.0]
    with pytest.raises(ValueError):
        Cooldown(clock=clock, steps=())
