"""How an equation of motion is integrated, as one object shared by every family's
dynamics (as Diffrax passes its solver and step-size controller as objects): the
adaptive solver, its PID controller's tolerances, the step budget and the adjoint."""

from __future__ import annotations

from typing import Any, Literal, TypedDict

import diffrax
import equinox as eqx
import numpy as np

from ._validate import ArgumentTypeError, is_traced, options

__all__ = ["Integrator", "IntegratorFields"]

_SOLVERS = {"tsit5": diffrax.Tsit5, "dopri5": diffrax.Dopri5, "dopri8": diffrax.Dopri8}
SolverName = Literal["tsit5", "dopri5", "dopri8"]


class Integrator(eqx.Module):
    """The integration of an equation of motion (Diffrax).

    - `solver`: a Diffrax adaptive solver (`diffrax.Dopri8()`, `diffrax.Tsit5()`, ...;
      the explicit Runge–Kutta ones are tested) or one of the shorthands `"tsit5"`,
      `"dopri5"`, `"dopri8"` (the default);
    - `rtol`, `atol`: its PID step-size controller's tolerances (defaults 1e-10, 1e-12);
    - `max_steps`: the step budget (Diffrax's `max_steps`, default 100 000);
    - `adjoint`: a Diffrax adjoint for gradients (None: recursive checkpointing).

    Given to `fourbar.simulate_dynamics` and `linkage.simulate_dynamics` as
    `integrator=`; their separate keywords `solver=`, `rtol=`, ... build one.
    """

    solver: SolverName | diffrax.AbstractAdaptiveSolver = "dopri8"
    rtol: float = 1e-10
    atol: float = 1e-12
    max_steps: int = 100_000
    adjoint: diffrax.AbstractAdjoint | None = None

    def resolved(self, owner: str, dtype, xp) -> Resolved:
        """This integrator checked (eagerly, where its numbers are concrete; an error
        names `owner` and the field), as a compiled program takes it: the solver and
        adjoint objects, the tolerances arrays of `dtype` (`xp`: NumPy eagerly, so that
        other tolerances run the same program)."""
        solver = self.solver
        if isinstance(solver, str):
            if solver not in _SOLVERS:
                raise ValueError(
                    f"{owner}: `solver` must be a Diffrax adaptive solver or one of {sorted(_SOLVERS)}; got {solver!r}"
                )
            solver = _SOLVERS[solver]()
        elif not isinstance(solver, diffrax.AbstractAdaptiveSolver):
            raise ValueError(
                f"{owner}: `solver` must be a Diffrax adaptive solver (its step size is controlled at rtol, atol), "
                f"e.g. diffrax.Dopri8(), or one of {sorted(_SOLVERS)}; got {solver!r}"
            )
        if not isinstance(self.adjoint, (diffrax.AbstractAdjoint, type(None))):
            raise ArgumentTypeError(
                f"{owner}: `adjoint` must be a Diffrax adjoint or None; got {type(self.adjoint).__name__} "
                f"{self.adjoint!r:.80}"
            )
        rtol, atol = self.rtol, self.atol
        if not is_traced(rtol, atol) and not (np.ndim(rtol) == 0 and np.ndim(atol) == 0 and rtol > 0 and atol >= 0):
            raise ValueError(f"{owner}: `rtol` must be positive and `atol` non-negative; got {rtol!r}, {atol!r}")
        adjoint = diffrax.RecursiveCheckpointAdjoint() if self.adjoint is None else self.adjoint
        return Resolved(solver, xp.asarray(rtol, dtype), xp.asarray(atol, dtype), self.max_steps, adjoint)


class Resolved(eqx.Module):
    """An `Integrator` as a compiled program takes it (`Integrator.resolved`)."""

    solver: diffrax.AbstractAdaptiveSolver
    rtol: Any
    atol: Any
    max_steps: int
    adjoint: diffrax.AbstractAdjoint

    def controller(self) -> diffrax.PIDController:
        """The PID step-size controller at `rtol`, `atol`."""
        return diffrax.PIDController(rtol=self.rtol, atol=self.atol)


class IntegratorFields(TypedDict, total=False):
    """`Integrator`'s fields as separate keyword arguments (the dynamics' older form)."""

    solver: SolverName | diffrax.AbstractAdaptiveSolver
    rtol: float
    atol: float
    max_steps: int
    adjoint: diffrax.AbstractAdjoint | None


def as_integrator(owner: str, given: Integrator | None, separate: dict) -> Integrator:
    """`given`, or the `Integrator` built from the call's separate keywords."""
    return options(owner, "integrator", given, Integrator, separate, "a diffmech Integrator or None")
