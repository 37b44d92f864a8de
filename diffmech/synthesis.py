"""Four-bar synthesis — path generation (free, prescribed or cyclically ordered timing),
motion generation (rigid-body guidance) and function generation — under box bounds, a
fixed frame, Grashof, full-rotation and transmission-angle constraints, both assembly
branches; and path generation of linkages, by gradient descent from many starts."""

from ._synthesis import (
    ALTERNATIVES as ALTERNATIVES,
    AbstractTask as AbstractTask,
    Constraints as Constraints,
    Function as Function,
    InfeasibleError as InfeasibleError,
    Motion as Motion,
    MultiStart as MultiStart,
    Path as Path,
    PlacedFourBar as PlacedFourBar,
    Synthesis as Synthesis,
    function_generation as function_generation,
    motion_generation as motion_generation,
    path_generation as path_generation,
    save_design as save_design,
    synthesize as synthesize,
)


def view(targets=None, *, host: str = "127.0.0.1", port: int | None = None, extent: float = 1.0):
    """Pose a path synthesis in the browser (viser): click target points in the plane
    (a grid of half-width `extent`) or load a CSV, choose the timing and constraints,
    run the search with a progress bar, see the best four-bar drawn through the
    targets and save it. `targets`: initial points `(n, 2)`, or None. Listens on
    `host` (default 127.0.0.1) at `port` (default: a free one); needs the `view` extra.

    **Arguments:** `targets`, `host`, `port`, `extent`. **Returns:** a
    `SynthesisViewer` (`url`, `add_target`, `load_csv`, `search`, `save`, `close`).
    """
    from ._view import SynthesisViewer

    return SynthesisViewer(targets, host=host, port=port, extent=extent)
