"""Screw algebra (public namespace): twists `(ω; v)`, wrenches `(f; τ)`, the
reciprocal product, adjoint transforms, unit screws of R and P joints. See
`diffmech._screw` for the conventions."""

from ._screw import (
    N_MATRIX as N_MATRIX,
    adjoint as adjoint,
    compose as compose,
    exp as exp,
    prismatic as prismatic,
    reciprocal as reciprocal,
    revolute as revolute,
    rotation as rotation,
    rotation_vector as rotation_vector,
    skew as skew,
    transform as transform,
    twist_of as twist_of,
    vee as vee,
    wrench as wrench,
)
