"""`python -m diffmech …`: the `diffmech` command."""

from ._cli import main

raise SystemExit(main())
