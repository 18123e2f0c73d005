"""``Adam`` and ``AdamW``: steps scaled by running averages of the gradient and its square.

The rule, for one parameter ``p`` with gradient ``g``, at step ``t = 1, 2, ...``
(torch's, step for step)::

    g = -g                                     if maximize
    p = p - lr * weight_decay * p              if decoupled weight decay (AdamW)
    g = g + weight_decay * p                   if plain weight decay (Adam)
    m = beta1 * m + (1 - beta1) * g            first moment  (m starts at 0)
    v = beta2 * v + (1 - beta2) * g * g        second moment (v starts at 0)
    v_max = maximum(v_max, v); use v_max for v if amsgrad
    m_hat = m / (1 - beta1**t)                 bias corrections: m and v start at 0
    v_hat = v / (1 - beta2**t)
    p = p - lr * m_hat / (sqrt(v_hat) + eps)

``optimizer.state[p]`` keeps ``step`` (a float tensor, like torch's), ``exp_avg`` (m),
``exp_avg_sq`` (v) and, with amsgrad, ``max_exp_avg_sq`` (v_max).

    >>> import teachgrad as tg
    >>> w = tg.tensor([1.0, -1.0], requires_grad=True)
    >>> opt = tg.optim.Adam([w], lr=0.1)
    >>> (w**2).sum().backward(); opt.step(); w    # the first step moves each entry by about lr
    tensor([ 0.9000, -0.9000], requires_grad=True)
"""

from __future__ import annotations

from .._creation import tensor, zeros_like
from .._tensor import Tensor
from ..ops.pointwise import maximum
from .optimizer import (
    Optimizer,
    as_number,
    check_one_element,
    check_setting,
    implementation_options,
)


class Adam(Optimizer):
    """Adam (Kingma & Ba), optionally AMSGrad, with L2 or decoupled weight decay.

    ``lr`` learning rate; ``betas`` decay rates of the running averages of the
    gradient and of its square; ``eps`` keeps the division safe; ``weight_decay``
    adds ``weight_decay * p`` to the gradient (or, with ``decoupled_weight_decay``,
    shrinks ``p`` directly: that is AdamW); ``amsgrad`` divides by the largest second
    moment seen so far; ``maximize`` climbs the objective instead.

    >>> import teachgrad as tg
    >>> w = tg.tensor([3.0], requires_grad=True)
    >>> opt = tg.optim.Adam([w], lr=0.5, amsgrad=True)
    >>> (w**2).sum().backward(); opt.step(); w
    tensor([2.5000], requires_grad=True)
    """

    def __init__(
        self,
        params,
        lr=1e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=0,
        amsgrad=False,
        *,
        foreach=None,
        maximize=False,
        capturable=False,
        differentiable=False,
        fused=None,
        decoupled_weight_decay=False,
    ):
        if isinstance(lr, Tensor) and foreach:
            raise ValueError(
                "lr as a Tensor is not supported for capturable=False and foreach=True"
            )
        check_one_element(lr, "lr")
        check_setting(lr >= 0.0, "learning rate", lr)  # (a NaN fails these too: refused)
        check_setting(eps >= 0.0, "epsilon value", eps)
        for i in (0, 1):
            check_setting(0.0 <= betas[i] < 1.0, f"beta parameter at index {i}", betas[i])
        check_setting(weight_decay >= 0.0, "weight_decay value", weight_decay)
        if not any(all(isinstance(beta, kind) for beta in betas[:2]) for kind in (float, Tensor)):
            raise ValueError("betas must be either both floats or both Tensors")
        check_one_element(betas[0], "betas[0]")
        check_one_element(betas[1], "betas[1]")
        # (a tensor is kept 0-d, as torch does: a number that can change in place)
        betas = tuple(beta.reshape(()) if isinstance(beta, Tensor) else beta for beta in betas)
        defaults = {
            "lr": lr,
            "betas": betas,
            "eps": eps,
            "weight_decay": weight_decay,
            "amsgrad": amsgrad,
            "maximize": maximize,
            **implementation_options(
                foreach=foreach, capturable=capturable, differentiable=differentiable, fused=fused
            ),
            "decoupled_weight_decay": decoupled_weight_decay,
        }
        super().__init__(params, defaults)

    def update(self, p, grad, group) -> None:
        """One Adam step for ``p`` (see the module docstring for the rule).

        >>> import teachgrad as tg
        >>> w = tg.ones(1, requires_grad=True); w.grad = tg.full((1,), 5.0)
        >>> opt = tg.optim.Adam([w], lr=0.5)
        >>> with tg.no_grad():
        ...     opt.update(w, w.grad, opt.param_groups[0])
        >>> w, opt.state[w]["step"]          # step 1: m_hat / sqrt(v_hat) = g / |g|
        (tensor([0.5000], requires_grad=True), tensor(1.))
        """
        lr, eps = as_number(group["lr"]), group["eps"]
        beta1, beta2 = (as_number(beta) for beta in group["betas"])
        weight_decay = group["weight_decay"]
        state = self.state[p]
        if not state:  # the first step of p
            state["step"] = tensor(0.0)
            state["exp_avg"] = zeros_like(p)
            state["exp_avg_sq"] = zeros_like(p)
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = zeros_like(p)
        m, v = state["exp_avg"], state["exp_avg_sq"]
        t = state["step"].add_(1).item()

        g = -grad if group["maximize"] else grad
        if weight_decay != 0:
            if group["decoupled_weight_decay"]:
                p.mul_(1 - lr * weight_decay)
            else:
                g = g + weight_decay * p
        m.mul_(beta1).add_(g, alpha=1 - beta1)
        v.mul_(beta2).add_(g * g, alpha=1 - beta2)
        if group["amsgrad"]:
            v_max = state["max_exp_avg_sq"]
            v = v_max.copy_(maximum(v_max, v))

        bias_correction1 = 1 - beta1**t
        bias_correction2 = 1 - beta2**t
        denom = v.sqrt() / bias_correction2**0.5 + eps
        p.add_(m / denom, alpha=-lr / bias_correction1)


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter): ``p`` shrinks by
    ``lr * weight_decay * p`` on its own, instead of the decay entering the averages.

    Same options as ``Adam``; ``weight_decay`` defaults to 0.01.

    >>> import teachgrad as tg
    >>> w = tg.tensor([2.0], requires_grad=True)
    >>> opt = tg.optim.AdamW([w], lr=0.1, weight_decay=0.5)
    >>> (w * 0).sum().backward(); opt.step(); w     # zero gradient: only the decay acts
    tensor([1.9000], requires_grad=True)
    """

    def __init__(
        self,
        params,
        lr=1e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=1e-2,
        amsgrad=False,
        *,
        foreach=None,
        maximize=False,
        capturable=False,
        differentiable=False,
        fused=None,
    ):
        super().__init__(
            params,
            lr,
            betas,
            eps,
            weight_decay,
            amsgrad,
            foreach=foreach,
            maximize=maximize,
            capturable=capturable,
            differentiable=differentiable,
            fused=fused,
            decoupled_weight_decay=True,
        )

    def load_state_dict(self, state_dict: dict) -> None:
        """As ``Optimizer.load_state_dict``; the weight decay stays decoupled (even when
        the state comes from an ``Adam``), as in torch.

        >>> import teachgrad as tg
        >>> w = tg.ones(1, requires_grad=True)
        >>> opt = tg.optim.AdamW([w]); opt.load_state_dict(tg.optim.Adam([w]).state_dict())
        >>> opt.param_groups[0]["decoupled_weight_decay"]
        True
        """
        super().load_state_dict(state_dict)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True
