"""A second identical eager call compiles nothing: backend compilations counted by
`jax.monitoring` while a call runs again (on a new but equal object where the README
builds one per call: a bundled example is a fresh `Linkage` each time)."""

import contextlib

import jax
import numpy as np
import pytest

from diffmech import examples, linkage

pytestmark = pytest.mark.xdist_group("linkage")  # the linkage worker: its programs compile once

_EVENT = "/jax/core/compile/backend_compile_duration"


@contextlib.contextmanager
def compilations():
    """The backend compilations made inside the block (a list, filled as they happen)."""
    seen, on = [], [True]

    def listen(event, duration, **kwargs):
        if on[0] and event == _EVENT:
            seen.append(duration)

    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        yield seen
    finally:
        on[0] = False


@pytest.mark.parametrize("name", ["theo_jansen", "rssr"])
def test_a_linkages_second_simulation_compiles_nothing(name):
    """The initial configuration's check is made inside the one program on every call
    (it was a static flag that flipped after a linkage's first call: every linkage paid
    its compile twice)."""
    steps = {"theo_jansen": 61, "rssr": 67}[name]  # lengths no other test compiles
    first = linkage.simulate(examples.load(name), steps=steps)
    with compilations() as seen:
        linkage.simulate(examples.load(name), steps=steps)  # a new object: its first call, checked
        lk = examples.load(name)
        linkage.simulate(lk, steps=steps)
        same = linkage.simulate(lk, steps=steps)  # the same object again (its check made)
    assert seen == [], len(seen)
    np.testing.assert_array_equal(np.asarray(first.coords), np.asarray(same.coords))
