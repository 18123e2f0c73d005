"""``SGD``: stochastic gradient descent, with momentum, Nesterov momentum and weight decay.

The rule, for one parameter ``p`` with gradient ``g`` (torch's, step for step)::

    g = -g                        if maximize
    g = g + weight_decay * p      if weight_decay != 0
    if momentum != 0:
        b = g                                    on the first step
        b = momentum * b + (1 - dampening) * g   after it
        g = g + momentum * b      if nesterov, else  g = b
    p = p - lr * g

The momentum buffer ``b`` is kept in ``optimizer.state[p]["momentum_buffer"]``.

    >>> import teachgrad as tg
    >>> w = tg.tensor([1.0], requires_grad=True)
    >>> opt = tg.optim.SGD([w], lr=0.1, momentum=0.9)
    >>> for _ in range(2):
    ...     opt.zero_grad(); (w**2).sum().backward(); opt.step()
    >>> w             # 1 - 0.2 = 0.8, then 0.8 - 0.1 * (0.9 * 2 + 1.6) = 0.46
    tensor([0.4600], requires_grad=True)
"""

from __future__ import annotations

from .optimizer import (
    Optimizer,
    as_number,
    check_one_element,
    check_setting,
    implementation_options,
)


class SGD(Optimizer):
    """Stochastic gradient descent: ``p = p - lr * g``, optionally with momentum.

    ``lr`` learning rate; ``momentum`` factor of the running buffer; ``dampening``
    how much less each new gradient counts in the buffer; ``weight_decay`` adds
    ``weight_decay * p`` to the gradient (L2 penalty); ``nesterov`` looks ahead along
    the buffer; ``maximize`` climbs the objective instead of descending.

    >>> import teachgrad as tg
    >>> w = tg.tensor([2.0], requires_grad=True)
    >>> opt = tg.optim.SGD([w], lr=0.25)
    >>> (w**2).sum().backward(); opt.step(); w      # 2 - 0.25 * 4
    tensor([1.], requires_grad=True)
    """

    def __init__(
        self,
        params,
        lr=1e-3,
        momentum=0,
        dampening=0,
        weight_decay=0,
        nesterov=False,
        *,
        maximize=False,
        foreach=None,
        differentiable=False,
        fused=None,
    ):
        # (torch's SGD refuses negative settings only: unlike Adam, it lets a NaN through)
        check_one_element(lr, "lr")
        check_setting(not lr < 0.0, "learning rate", lr)
        check_setting(not momentum < 0.0, "momentum value", momentum)
        check_setting(not weight_decay < 0.0, "weight_decay value", weight_decay)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError(
                "Nesterov momentum requires a momentum and zero dampening\n"
                f"  got momentum={momentum}, dampening={dampening}"
            )
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "dampening": dampening,
            "weight_decay": weight_decay,
            "nesterov": nesterov,
            "maximize": maximize,
            **implementation_options(foreach=foreach, differentiable=differentiable, fused=fused),
        }
        super().__init__(params, defaults)

    def update(self, p, grad, group) -> None:
        """One SGD step for ``p`` (see the module docstring for the rule).

        >>> import teachgrad as tg
        >>> w = tg.ones(1, requires_grad=True); w.grad = tg.ones(1)
        >>> opt = tg.optim.SGD([w], lr=0.5, weight_decay=1.0)
        >>> with tg.no_grad():
        ...     opt.update(w, w.grad, opt.param_groups[0])
        >>> w              # 1 - 0.5 * (1 + 1 * 1)
        tensor([0.], requires_grad=True)
        """
        lr, momentum, dampening = as_number(group["lr"]), group["momentum"], group["dampening"]
        weight_decay = group["weight_decay"]
        g = -grad if group["maximize"] else grad
        if weight_decay != 0:
            g = g + weight_decay * p
        if momentum != 0:
            state = self.state[p]
            b = state.get("momentum_buffer")
            if b is None:
                b = state["momentum_buffer"] = g.clone()
            else:
                b.mul_(momentum).add_(g, alpha=1 - dampening)
            g = g + momentum * b if group["nesterov"] else b
        p.add_(g, alpha=-lr)
