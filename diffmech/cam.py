"""Disc cams with translating and oscillating followers (public namespace): a follower motion law, the
cam's profile from it, the follower's motion from a profile by the contact equation,
the pressure angle, the radius of curvature and undercut, the contact force. See
`diffmech._cam` for the conventions."""

from ._cam import (
    Arm as Arm,
    CamCheck as CamCheck,
    CamMotion as CamMotion,
    ContactForce as ContactForce,
    FlatArm as FlatArm,
    Follower as Follower,
    Law as Law,
    check as check,
    contact_force as contact_force,
    curvature_radius as curvature_radius,
    follow as follow,
    pitch_radius as pitch_radius,
    pressure_angle as pressure_angle,
    profile as profile,
    simulate as simulate,
)
