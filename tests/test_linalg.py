import jax
import jax.numpy as jnp
import numpy as np
import pytest

from diffmech import _linalg


@pytest.mark.parametrize("n", [1, 2, 3, 4, 7, 12, 15])
def test_solve_matches_lapack(n):
    rng = np.random.default_rng(n)
    A = rng.normal(size=(20, n, n))
    b = rng.normal(size=(20, n))
    B = rng.normal(size=(20, n, 3))
    ref_b = np.linalg.solve(A, b[..., None])[..., 0]
    ref_B = np.linalg.solve(A, B)
    np.testing.assert_allclose(jax.vmap(_linalg.solve)(A, b), ref_b, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(jax.vmap(_linalg.solve)(A, B), ref_B, rtol=1e-9, atol=1e-11)


def test_solve_needs_pivoting():
    # zero leading pivot; elimination without row exchanges would divide by zero
    A = jnp.array([[0.0, 2.0, 1.0], [1.0, 1.0, 0.0], [3.0, 0.0, 1.0]])
    b = jnp.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(_linalg.solve(A, b), np.linalg.solve(np.asarray(A), np.asarray(b)), rtol=1e-13)


def test_singular_is_not_finite_and_condition_is_inf():
    A = jnp.array([[1.0, 2.0], [2.0, 4.0]])
    assert not np.all(np.isfinite(_linalg.solve(A, jnp.array([1.0, 1.0]))))
    assert _linalg.condition_1(A) == np.inf
    I = jnp.eye(3)
    assert float(_linalg.condition_1(I)) == pytest.approx(1.0)
    D = jnp.diag(jnp.array([1.0, 1e-3, 1.0]))
    assert float(_linalg.condition_1(D)) == pytest.approx(1e3)
