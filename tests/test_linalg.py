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


@pytest.mark.parametrize("n", [9, 20])
def test_batched_large_systems_without_batched_lapack(n):
    # above 4 unknowns a batch is solved by elimination on the whole batch (≤ 16) or one
    # LAPACK call per system (> 16), never by a batched LAPACK call: against NumPy, with
    # one side only batched, under two vmaps, and differentiated (central differences)
    rng = np.random.default_rng(n)
    A = rng.normal(size=(6, n, n)) + 3 * np.eye(n)
    b = rng.normal(size=(6, n))
    ref = np.linalg.solve(A, b[..., None])[..., 0]
    np.testing.assert_allclose(jax.vmap(_linalg.solve)(A, b), ref, rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(
        jax.vmap(_linalg.solve, in_axes=(None, 0))(A[0], b), np.linalg.solve(A[0], b.T).T, rtol=1e-11, atol=1e-12
    )
    np.testing.assert_allclose(
        jax.vmap(jax.vmap(_linalg.solve))(A.reshape(2, 3, n, n), b.reshape(2, 3, n)),
        ref.reshape(2, 3, n),
        rtol=1e-11,
        atol=1e-12,
    )
    np.testing.assert_allclose(jax.vmap(_linalg.det)(A), np.linalg.det(A), rtol=1e-11)
    np.testing.assert_allclose(_linalg.det(A[0]), np.linalg.det(A[0]), rtol=1e-11)

    def loss(A):
        return jnp.sum(jax.vmap(_linalg.solve)(A, b) ** 2) + jnp.sum(jax.vmap(_linalg.det)(A)) * 1e-3

    g = np.asarray(jax.jit(jax.grad(loss))(jnp.asarray(A)))
    value = jax.jit(loss)  # one program for the six evaluations (eagerly: each primitive on its own)
    h = 1e-6
    for idx in [(0, 0, 0), (2, 1, n - 1), (5, n - 1, 3)]:
        E = np.zeros_like(A)
        E[idx] = h
        fd = (float(value(jnp.asarray(A + E))) - float(value(jnp.asarray(A - E)))) / (2 * h)
        assert g[idx] == pytest.approx(fd, rel=1e-6, abs=1e-8)
    gf = jax.jacfwd(lambda A: jax.vmap(_linalg.solve)(A, b))(jnp.asarray(A))
    assert np.isfinite(np.asarray(gf)).all()


@pytest.mark.parametrize("n", [1, 2, 3, 4, 6])
def test_newton_step_solve_equals_solve_and_keeps_singular_steps_non_finite(n):
    # `step` is `solve` routed through a product with the identity (so that XLA
    # computes an unrolled solve once for its several readers): the same values,
    # bit for bit, one system or a batch, vector or matrix right-hand side
    rng = np.random.default_rng(n)
    A = jnp.asarray(rng.normal(size=(64, n, n)) + 3 * np.eye(n))
    b = jnp.asarray(rng.normal(size=(64, n)))
    B = jnp.asarray(rng.normal(size=(64, n, 2)))
    for rhs in (b, B):
        ref = jax.jit(jax.vmap(_linalg.solve))(A, rhs)
        out = jax.jit(jax.vmap(_linalg.step))(A, rhs)
        np.testing.assert_array_equal(np.asarray(out), np.asarray(ref))
        np.testing.assert_array_equal(np.asarray(_linalg.step(A[0], rhs[0])), np.asarray(_linalg.solve(A[0], rhs[0])))
        assert float(jnp.max(jnp.abs(jnp.einsum("kij,kj...->ki...", A, out) - rhs))) <= 1e-13
    singular = jnp.zeros((n, n)).at[0, 0].set(1.0) if n > 1 else jnp.zeros((1, 1))
    assert not bool(jnp.all(jnp.isfinite(jax.jit(_linalg.step)(singular, jnp.ones(n)))))
