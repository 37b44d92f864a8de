"""The delta robot's benchmark case, shared by the peers' standalone runs
(`python benchmarks/peers/mujoco_delta.py`, `python benchmarks/peers/pinocchio_delta.py`):
constant arm torques (the torques that hold `diffmech/linkage/data/delta.json` still at
its file configuration, plus 0.05, −0.03, 0.02 N m), and the arm angles diffmech's
`simulate_dynamics` reached for them at t = 0, 0.5, …, 5 s (jax 0.10.2, 2026-11-27),
which the standalone runs print their distance from. `benchmarks/bench_delta.py`
computes both afresh and compares the peers with diffmech's run of the day."""

import numpy as np

TAU = (-1.453562063241398, -1.533562063241382, -1.483562063241382)
REFERENCE_Q = np.array(
    [
        [0.0, 0.0, 0.0],
        [0.077484539013423, -0.009721389746909, 0.045316354550901],
        [0.068950674256209, 0.044917897955691, 0.060316353975397],
        [0.033279183662317, -0.008372419299496, 0.017343852037349],
        [0.048232046975798, -0.033995281370312, 0.018553853612216],
        [0.053417056960925, 0.055644460361667, 0.053957934139543],
        [0.086239697471541, -0.006277716905797, 0.051940988721347],
        [0.008790372259754, -0.008850890164027, 0.003231804740681],
        [0.054693164074851, 0.002032429452013, 0.033789480511748],
        [0.090273848514244, 0.025591582955647, 0.067830091321742],
        [0.021550143740341, 0.015339900097388, 0.018260352479318],
    ]
)
