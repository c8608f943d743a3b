"""The copy-heads derivation, rendered from the symbolic source (`attnphase derive copy-heads` writes it to
derivations/copy_heads.md; a test keeps that file in sync)."""

from __future__ import annotations

import sympy

from attnphase.models.copy_heads.symbolic import (
    NAME, TITLE, causal_linear_action, causal_remainder_stationarity, causal_row_curvatures, causal_stability_matrix,
    copy_onset_leading_form, data_action, data_action_rows, first_attempt_action, gibbs_loss, l_row, linear_action,
    linear_action_map, m, mean_predictor_loss, q, softmax_action, softmax_shortcut_prior, symmetric_point_hessian, t, t2,
)

__all__ = ["NAME", "TITLE", "derivation_markdown"]


def derivation_markdown() -> str:
    """The equations of this module, rendered (deterministic)."""
    from attnphase.derive.render import MarkdownDocument

    doc = MarkdownDocument()
    doc.heading(TITLE, 1)
    doc.paragraph(
        "Copy task: L i.i.d. one-hot tokens over V symbols, target y_l = x_{l-1}. One attention head "
        "with positional attention G and read-out W ~ N(0, tau). W is integrated out exactly; n is beta "
        "times the number of target tokens. All expressions below are the ones the solvers compile."
    )
    doc.heading("Exact finite-P action (W integrated out)", 2)
    doc.paragraph(
        "With H = X G^T over the target columns, M = sum_mu H H^T and B = sum_mu H Y^T (V x V), "
        "S(G) = (V/2) log det(I + tau beta M) - (beta^2/2) tr[B^T (I/tau + beta M)^{-1} B] + (NV/2) log(2 pi/beta) "
        "+ (beta/2)||Y||^2, equal to the kernel form sum_c [1/2 log det 2 pi K + 1/2 y_c^T K^{-1} y_c], "
        "K = tau Phi Phi^T + I/beta (matrix-determinant lemma and Woodbury)."
    )
    doc.heading("Self-averaged data term", 2)
    doc.equation(sympy.Symbol("S_data"), data_action(m, q, t), label="data")
    doc.heading("Linear attention, Convention A (saddle point over G)", 2)
    doc.paragraph("G = tU + c(S - U); lam_t, lam_c are the prior precisions of the two modes.")
    doc.equation(sympy.Symbol("S_lin"), linear_action_map(), label="linear")
    doc.heading("Linear attention with the remainder rho (entropy weight D_r)", 2)
    doc.equation(sympy.Symbol("S_lin_rho"), linear_action(), label="linear-rho")
    doc.heading("First attempt: overlap m and norm q only", 2)
    doc.equation(sympy.Symbol("S_first"), first_attempt_action(), label="first")
    doc.heading("Softmax attention: previous-position logit x, large-L row rate", 2)
    doc.equation(sympy.Symbol("I_row"), softmax_shortcut_prior(), label="row-rate")
    doc.equation(sympy.Symbol("S_soft"), softmax_action(), label="softmax")
    doc.paragraph(
        "Large L (u >> 1): on the copy branch a^2 >> k/L, the fit gain is (eps n/2) rho with rho = 1/(1 + e^{-2y}), "
        "s = ln(L)/2 + sigma^2 + y; stationarity gives e^{-2y} = 2/ln L and coexistence "
        "n* = T ln^2 L/(4 eps sigma^2) (1 + (2 ln ln L + 4 sigma^2 + 2 - 2 ln 2)/ln L + ...)."
    )
    doc.heading("Derived: curvature of the linear action at the symmetric point", 2)
    doc.paragraph(
        "Hessian of S_lin in (t, c) at t = c = 0 (derive.calculus). H_tt = 0 gives the uniform onset n_U, "
        "H_cc = 0 the copy onset n_c; the off-diagonal entry couples them, so a nonzero t drives c linearly "
        "(a crossover)."
    )
    hessian_at_origin = symmetric_point_hessian()
    doc.equation(sympy.Symbol("H_tt"), hessian_at_origin[0, 0], label="H-tt")
    doc.equation(sympy.Symbol("H_tc"), hessian_at_origin[0, 1], label="H-tc")
    doc.equation(sympy.Symbol("H_cc"), hessian_at_origin[1, 1], label="H-cc")
    doc.paragraph(
        "Leading large-L form of the copy onset (derive.asymptotics), default convention "
        "(lam_c = L^2 (L-1)/sigma^2, W integrated out):"
    )
    doc.equation(sympy.Symbol("n_c"), copy_onset_leading_form(), label="copy-onset", relation="\\sim")
    doc.heading("Centred input tokens", 2)
    doc.paragraph(
        "Inputs x - 1/V (targets one-hot): the features have no all-ones component, the two all-ones terms "
        "of S_data drop and only H_tt changes at the symmetric point (the uniform mode loses its own data gain):"
    )
    doc.equation(sympy.Symbol("H_tt^centred"), symmetric_point_hessian(centred=True)[0, 0], label="H-tt-centred")
    doc.heading("Softmax: row mean field (finite-L sampling)", 2)
    doc.paragraph(
        "The data term couples the T rows only through m (mean previous-position weight) and q (mean row norm); "
        "the rows are independent under the prior, so the free energy is F(m, q) = T Lambda*(m, q) + S_data(m, q), "
        "Lambda* the Legendre transform of the row cumulant function Lambda(h, g) = ln E exp(h a + g q_row) under "
        "the exact row-logit density. The homogeneous action T I_row(x) + S_data is its limit when each row's "
        "tilted density concentrates; at L ~ 32 it does not (api.softmax_row_mean_field)."
    )
    doc.paragraph(
        "Dual plane: (h, g) -> (m, q) = grad Lambda(h, g) is a bijection (Lambda strictly convex), so F is also the function "
        "F~(h, g) = T(h m + g q - Lambda) + S_data(m, q) of the tilts, with the same stationary points of the same type "
        "(grad F~ = Hess Lambda . grad F) and the same mountain-pass barriers; Lambda does not depend on P, so one table "
        "of it serves a whole scan (api.softmax_dual_mean_field). Every minimum and barrier of the row mean field is "
        "searched on this plane (api.softmax_row_mean_field): following one root g(h) of the q-condition instead can "
        "miss minima, because that condition has several roots on the copy branch."
    )
    doc.heading("Causal mask", 2)
    doc.paragraph(
        "Row l (counted from 1) attends to the l positions m <= l; the targets are rows l = 2..L (T = L - 1). "
        "The uniform pattern is row dependent, U_l = 1_{m<=l}/l (the prior mean of a softmax row over l scores), "
        "and the copy direction of row l is delta_{m,l-1} - U_l (orthogonal to U_l, squared norm 1 - 1/l). The data "
        "term sums over rows, so it sees them only through row averages: m = <g_l>, q = <q_l> and, along the "
        "all-ones direction, t2 = <t_l^2> in M and t1 = <t_l> in B:"
    )
    doc.equation(sympy.Symbol("S_data^rows"), data_action_rows(m, q, t, t2), label="data-rows")
    doc.paragraph(
        "Linear attention G = kappa (A + b) mask, Convention A. With b at its minimum the prior of the target rows is "
        "(lam_a/2)[sum_l q_l - w_b (sum_l t_l)^2], lam_a = 1/(kappa^2 sigma^2), w_b = 1/(sum_l l + sigma^2/s1). The remainder "
        "of each row vanishes at the saddle point, all rows share one copy strength c (Jensen), and the T row sums "
        "t_l stay free; the action depends on them through Q_t = sum t_l^2/l, M_t = sum t_l/l, T_1 = sum t_l, "
        "T_2 = sum t_l^2 (H = sum_l 1/l):"
    )
    doc.equation(sympy.Symbol("S_lin^causal"), causal_linear_action(), label="linear-causal")
    lam_row, mu_row = causal_row_curvatures()
    doc.paragraph(
        "At the symmetric point the Hessian in (t_2..t_L, c) is diag(lambda/l + mu) on t plus a rank-3 part through "
        "(M_t, T_1, c), with"
    )
    doc.equation(sympy.Symbol("lambda"), lam_row, label="row-curvature-lambda")
    doc.equation(sympy.Symbol("mu"), mu_row, label="row-curvature-mu")
    doc.paragraph(
        "Minimising the diagonal part at fixed (M_t, T_1) leaves the inverse Gram matrix of (1/l, 1) weighted by "
        "1/(lambda/l + mu): Sigma_a = sum 1/(l(lambda + mu l)), Sigma_b = sum 1/(lambda + mu l), Sigma_c = sum l/(lambda + mu l) "
        "(digamma differences). The symmetric point is stable iff K is positive definite; the uniform onset is where its "
        "smallest eigenvalue vanishes, with the soft row profile t_l proportional to (alpha/l + beta)/(lambda/l + mu); "
        "the Landau expansion along that profile classifies the transition, and K_cc = 0 is the copy crossover."
    )
    doc.equation(sympy.Symbol("K"), causal_stability_matrix(), label="causal-stability")
    doc.paragraph("Softmax: row l is the softmax of l Gaussian scores; its large-l rate in the previous-position logit is")
    doc.equation(sympy.Symbol("I_l"), softmax_shortcut_prior(l_row), label="row-rate-l")
    doc.paragraph(
        "and its exact logit density is E[phi_sigma(x + ln sum_{m <= l, m != l-1} e^{z_m})] over the other l - 1 scores. "
        "The rows are independent under the prior and meet the data term through m and q, so the row mean field is "
        "F(m, q) = sup_{h,g} [T(h m + g q) - sum_l Lambda_l(h, g)] + S_data(m, q), each row with its own cumulant "
        "function Lambda_l(h, g) = ln E_l exp(h a + g q_l); without data its minimum is the causal uniform pattern "
        "m = H/T (c = 0). The copy strength is c = (T m - H)/(T - H)."
    )
    doc.heading("Causal mask with the remainder's entropy", 2)
    doc.paragraph(
        "What the sampled network realises (the sampler integrates over every score). Write each target row as "
        "t_l U_l + c (delta_{l-1} - U_l) + R_l with R_l orthogonal to both (dimension l - 2), and pool the rows' copy "
        "deviations c_l - c into R: the remainder R has zero row sums and is orthogonal to the shared copy direction, "
        "D = sum_l (l - 1) - 1 = L(L-1)/2 - 1 dimensions (periodic: T(L-1) - 1). R is orthogonal to the all-ones "
        "vector, so the bias does not reach it and its prior is isotropic, lam_a ||R||^2/2, with no coupling to (t_l, c); "
        "the data term sees it only through q = ... + rho, rho = ||R||^2/T. The integral over R at fixed rho is therefore "
        "exactly radial, proportional to rho^{D/2 - 1}: the rows' remainders (row-dependent dimensions l - 2, plus the "
        "copy deviations) enter only through their pooled dimension D, and the action gains lam_a T rho/2 - D_r ln rho "
        "with D_r = (D - 2)/2:"
    )
    doc.equation(sympy.Symbol("S_lin^causal,rho"), causal_linear_action(remainder=True), label="linear-causal-rho")
    doc.paragraph(
        "At the symmetric point t_l = c = 0 the remainder sits at the positive root rho_0(n) of (a quadratic in rho)"
    )
    doc.equation(sympy.Symbol("dS/drho"), causal_remainder_stationarity(), label="causal-rho-stationarity")
    doc.paragraph(
        "and, since S depends on rho through q, which is even in (t, c), rho decouples from (t_l, c) there: the stability "
        "matrix K is the one above with every u = tau n q/V at q = rho_0 (causal_stability_matrix(remainder=True)). Along "
        "the soft direction phi the remainder relaxes, S = S_0 + a_2 phi^2 + a_4 phi^4 + b phi^2 delta rho + S_rr delta rho^2/2 "
        "with b = da_2/drho, so the Landau quartic is a_4 - b^2/(2 S_rr) (it stays positive: second order, exponent 1/2). "
        "Crossover (K_cc = 0): K_cc/(T - H) = lam_a + l_W (V-1) tau n/(T(1 + u_0)) - eps tau n^2 (T - H)/(T^2 V (1 + u_0)), "
        "u_0 = tau n rho_0/V. With lam_a = L^2/sigma^2 (kappa = 1/L) and n ~ L^2, rho_0 -> 2 D_r/(lam_a T) -> sigma^2/(2L), "
        "so lam_a u_0 -> tau n L/(2V) dominates the left side and eps tau n^2/(L V) is the right side: "
        "n_X -> L^2/(2 eps) = V L^2/(2(V - 1)), independent of sigma^2 and tau, with O((ln L + V)/L) corrections. The "
        "remainder's volume grows like L^2/4 in ln rho and keeps rho_0 ~ 1/L, whose noise in the pooled features "
        "(u_0 ~ n/L) replaces Convention A's lam_a by lam_a u_0: the crossover moves from L^{3/2} V^{1/2} to L^2, as with "
        "the periodic boundary. The uniform onset is unchanged to leading order (u_0 ~ 1/L at n ~ V^2): P* ~ V^2."
    )
    doc.paragraph(
        "Fluctuations of the order parameters (api.linear_posterior_means): at large n the likelihood is invariant under "
        "G -> lambda G, W -> W/lambda, so the overall scale of G is held only by the prior and the O(V^2 + D) logarithms, "
        "and its relative width is ~ (V^2 + D)^{-1/2}; at L = 8 the means of t and rho over exp(-S) (Lebesgue measure in "
        "(t_l, c), d rho = rho d ln rho) lie 5-25% above the saddle point. These means, not the saddle values, are what "
        "the sampled network is compared with."
    )
    doc.heading("Test loss per position", 2)
    doc.equation(sympy.Symbol("E_mean"), mean_predictor_loss(m, q, t), label="loss-mean")
    doc.equation(sympy.Symbol("E_Gibbs"), gibbs_loss(m, q, t), label="loss-gibbs")
    return doc.text()
