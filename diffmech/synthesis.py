"""Path generation: four-bars (free or prescribed timing, ground placement, full-rotation
cranks, both branches) and linkages, by gradient descent from many starts."""

from ._synthesis import PlacedFourBar as PlacedFourBar, Synthesis as Synthesis, path_generation as path_generation, save_design as save_design
