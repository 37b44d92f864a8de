"""The error of a bad linkage description or configuration (its own module: the
description's reader, `_schema`, and the joint kinds it asks, `_joints`, both raise it)."""


class LinkageError(ValueError):
    """A linkage description or configuration is invalid; the message names the
    joint, link or path in the file, and the reason."""
