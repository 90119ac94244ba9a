"""How far apart two training runs' losses may be when only their allreduce differs.

Two runs of `python -m hosts train --precision-check` (softmax regression, plain SGD with
step eta, same seed, same data shards), e.g. one with in-network aggregation (float32 as
block floating point) and one with Gloo, start from the same weights.  Their weights drift
apart only through rounding: the allreduce's own error, the float32 forward/backward and the
float32 update.  This module bounds the resulting loss difference step by step from what
the runs recorded.

Model: w in R^(10 x 65) (weights and bias; x~ = [x, 1], pixels in [0, 1]), the batch loss
L(w) = mean_k CE(softmax(W x~_k), y_k).

1. L is convex and H-smooth with H <= 1/2 max_k ||x~_k||^2: the cross-entropy's Hessian in
   the logits is diag(p) - p p^T <= 1/2 (I - 11^T/10) (Boehning's bound), so in w it is at
   most 1/2 ||x~||^2.  For a convex H-smooth function and eta <= 2/H, the gradient step
   w -> w - eta grad L(w) is non-expansive (co-coercivity of the gradient).  Both runs take
   that step on the same global batch, so the distance D_t = ||w^a_t - w^b_t|| (Frobenius)
   grows only by what each run's step does differently from the exact step:
       D_{t+1} <= D_t + eta (E^a_t + E^b_t) + R^a_t + R^b_t,   D_0 = 0,
   E_t = ||computed mean gradient - exact mean gradient at the run's own weights||, and
   R_t the float32 rounding of the update w - eta g.
2. E_t <= (1/N) sum_r ||g32_r - g64_r|| (each rank's float32 gradient against float64 at
   the same weights: measured by the run) + the allreduce's error / N + u ||g|| (the
   division by N in float32), where the allreduce's error is
   * in-network: the norm of hosts/ina/quantize.py's per-element bound (N 2^(E-S-1) per block
     of agreed exponent E, plus the result's rounding to float32), recorded by the hook;
   * Gloo (N - 1 float32 additions in some order): gamma_{N-1} sum_r ||g32_r||, gamma_m =
     m u / (1 - m u).
3. R_t <= u (eta ||g_t|| + (1 + u) ||w_{t+1}||) (1 + u): one rounding of eta g, one of the
   subtraction.
4. The per-sample loss is G-Lipschitz in w with G = sqrt(2) max_k ||x~_k|| (its gradient
   is (p - y) x~^T and ||p - y|| <= sqrt(2)), so at step t, on any batch,
   |L(w^a_t) - L(w^b_t)| <= G D_t.  That bounds the float64 losses the runs recorded (at
   their float32 weights); the float32 losses differ from those by what each run measured.

u = 2^-24, float32's unit roundoff.
"""

from __future__ import annotations

import math

import numpy as np

UNIT = 2.0 ** -24


def gamma(m: int) -> float:
    return m * UNIT / (1 - m * UNIT)


def data_constants(images: np.ndarray) -> tuple[float, float]:
    """(H, G) of point 1 and 4 for the images the runs train on (pixels in [0, 1])."""
    squared = float((np.asarray(images, dtype=np.float64) ** 2).sum(axis=1).max()) + 1.0
    return 0.5 * squared, math.sqrt(2.0 * squared)


def step_errors(reports: list, mode: str, lr: float) -> tuple[np.ndarray, np.ndarray]:
    """(E_t, R_t) per step (points 2 and 3) from one run's ranks' reports."""
    world = len(reports)
    steps = [r["per_step"] for r in reports]
    compute = np.mean([s["grad_fp_error"] for s in steps], axis=0)
    if mode == "ina" and world > 1:
        allreduce = np.max([s["allreduce_bound"] for s in steps], axis=0) / world
    else:
        allreduce = gamma(world - 1) * np.sum([s["local_grad_norm"] for s in steps],
                                              axis=0) / world
    mean_grad = np.asarray(steps[0]["mean_grad_norm"])
    weights = np.asarray(steps[0]["weight_norm"])
    errors = compute + allreduce + UNIT * mean_grad
    rounding = UNIT * (lr * mean_grad + (1 + UNIT) * weights) * (1 + UNIT)
    return errors, rounding


def loss_bounds(run_a: tuple, run_b: tuple, lr: float, images: np.ndarray) -> np.ndarray:
    """Per step t, the bound G D_t on |L(w^a_t) - L(w^b_t)| (float64 losses).  run_x:
    (mode, the ranks' reports).  ValueError if eta > 2/H (point 1 does not hold)."""
    h, g = data_constants(images)
    if lr > 2.0 / h:
        raise ValueError(f"lr {lr:g} exceeds 2/H = {2.0 / h:g}: the step is not non-expansive")
    errors_a, rounding_a = step_errors(run_a[1], run_a[0], lr)
    errors_b, rounding_b = step_errors(run_b[1], run_b[0], lr)
    growth = lr * (errors_a + errors_b) + rounding_a + rounding_b
    distance = np.concatenate([[0.0], np.cumsum(growth)[:-1]])
    return g * distance


def rank_losses(reports: list, key: str) -> np.ndarray:
    """Per step, the mean over ranks of their batch losses (the global batch's loss)."""
    return np.mean([r["per_step"][key] for r in reports], axis=0)
