import os

import jax

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_numpy_dtype_promotion", "strict")

os.environ.setdefault("MPLBACKEND", "Agg")
