"""teachgrad.optim: SGD, Adam and AdamW update parameters exactly as torch.optim does, step by
step (parameters and optimizer state), for every option; param groups, zero_grad, closures,
state dicts, errors and repr behave like torch's.

Each test builds the same small least-squares problem in teachgrad and in torch from the
same NumPy values and runs both optimizers side by side.
"""

import re

import numpy as np
import pytest

import teachgrad as tg
from teachgrad import optim

# --------------------------------------------------------------------------- the problem

_rng = np.random.default_rng(0)
PARAMS = [_rng.standard_normal((3, 4)), _rng.standard_normal(3)]  # W, b
STEPS = 6
X = _rng.standard_normal((STEPS, 4))  # one input and target per step: the gradients vary
Y = _rng.standard_normal((STEPS, 3))

TOLERANCE = {
    np.float64: {"rtol": 1e-10, "atol": 1e-12},
    np.float32: {"rtol": 1e-5, "atol": 1e-6},
}
DTYPES = [pytest.param(np.float64, id="float64"), pytest.param(np.float32, id="float32")]


def lib_optim(lib, torch):
    return optim if lib is tg else torch.optim


def make_params(lib, dtype=np.float64, arrays=PARAMS):
    return [lib.tensor(a.astype(dtype), requires_grad=True) for a in arrays]


def train_step(lib, opt, params, k, dtype=np.float64, set_to_none=True):
    """zero_grad, the loss of step ``k`` and its backward, then ``opt.step()``."""
    opt.zero_grad(set_to_none=set_to_none)
    W, b = params[0], params[1]
    x, y = lib.tensor(X[k].astype(dtype)), lib.tensor(Y[k].astype(dtype))
    ((W @ x + b - y) ** 2).sum().backward()
    opt.step()


def array(t):
    return t.detach().cpu().numpy()


def assert_same_params(ours, theirs, dtype=np.float64):
    for p, q in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(array(p), array(q), **TOLERANCE[dtype])


def assert_same_state(opt, torch_opt, params, torch_params, dtype=np.float64):
    """Per parameter, the same state entries (torch's names) with the same values."""
    for p, q in zip(params, torch_params, strict=True):
        ours, theirs = opt.state.get(p, {}), torch_opt.state.get(q, {})
        assert list(ours) == list(theirs)
        for key, value in theirs.items():
            tol = {} if key == "step" else TOLERANCE[dtype]
            np.testing.assert_allclose(array(ours[key]), array(value), **tol, err_msg=key)


def run_side_by_side(torch, name, options, dtype=np.float64, steps=5, groups=None):
    """Step both optimizers ``steps`` times, checking parameters and state after every step."""
    runs = []
    for lib in (tg, torch):
        params = make_params(lib, dtype)
        given = params if groups is None else groups(params)
        runs.append((lib, params, getattr(lib_optim(lib, torch), name)(given, **options)))
    (_, params, opt), (_, torch_params, torch_opt) = runs
    for k in range(steps):
        for lib, ps, o in runs:
            train_step(lib, o, ps, k, dtype)
        assert_same_params(params, torch_params, dtype)
        assert_same_state(opt, torch_opt, params, torch_params, dtype)
    return runs


# --------------------------------------------------------------------------- the update rules

SGD_OPTIONS = {
    "plain": {"lr": 0.1},
    "momentum": {"lr": 0.05, "momentum": 0.9},
    "momentum+dampening": {"lr": 0.05, "momentum": 0.9, "dampening": 0.5},
    "nesterov": {"lr": 0.05, "momentum": 0.9, "nesterov": True},
    "weight_decay": {"lr": 0.1, "weight_decay": 0.3},
    "momentum+weight_decay": {"lr": 0.05, "momentum": 0.8, "weight_decay": 0.1},
    "maximize": {"lr": 0.02, "maximize": True},
    "everything": {
        "lr": 0.02,
        "momentum": 0.7,
        "weight_decay": 0.2,
        "nesterov": True,
        "maximize": True,
    },
    "dampening+weight_decay+maximize": {
        "lr": 0.02,
        "momentum": 0.5,
        "dampening": 0.3,
        "weight_decay": 0.01,
        "maximize": True,
    },
}

ADAM_OPTIONS = {
    "defaults": {},
    "lr+betas": {"lr": 0.05, "betas": (0.8, 0.99)},
    "small betas": {"lr": 0.05, "betas": (0.3, 0.6)},
    "large eps": {"lr": 0.1, "eps": 0.1},
    "weight_decay": {"lr": 0.05, "weight_decay": 0.5},
    "amsgrad": {"lr": 0.2, "betas": (0.9, 0.6), "amsgrad": True},
    "maximize": {"lr": 0.05, "maximize": True},
    "everything": {
        "lr": 0.1,
        "betas": (0.85, 0.7),
        "eps": 1e-6,
        "weight_decay": 0.2,
        "amsgrad": True,
        "maximize": True,
    },
}

RULE_CASES = [
    pytest.param("SGD", options, id=f"SGD-{case}") for case, options in SGD_OPTIONS.items()
] + [
    pytest.param(name, options, id=f"{name}-{case}")
    for name in ("Adam", "AdamW")
    for case, options in ADAM_OPTIONS.items()
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name, options", RULE_CASES)
def test_updates_match_torch_step_by_step(torch, name, options, dtype):
    """Parameters and every state tensor (momentum_buffer, step, exp_avg, exp_avg_sq,
    max_exp_avg_sq) equal torch's after each of 5 steps, for each option."""
    run_side_by_side(torch, name, options, dtype)


@pytest.mark.parametrize("name", ["Adam", "AdamW"])
def test_the_amsgrad_case_really_uses_the_running_max(torch, name):
    """In the amsgrad case above the second moment shrinks somewhere, so max_exp_avg_sq
    differs from exp_avg_sq and the amsgrad rule is exercised (not just Adam's)."""
    runs = run_side_by_side(torch, name, ADAM_OPTIONS["amsgrad"])
    for _, params, opt in runs:
        state = opt.state[params[0]]
        assert not np.allclose(array(state["max_exp_avg_sq"]), array(state["exp_avg_sq"]))


def test_adam_and_adamw_differ_with_weight_decay(torch):
    """AdamW's decay is decoupled: with the same weight_decay it moves differently from Adam
    (so the AdamW cases above test a rule of their own)."""
    options = {"lr": 0.05, "weight_decay": 0.5}
    (_, adam_params, _), _ = run_side_by_side(torch, "Adam", options, steps=2)
    (_, adamw_params, _), _ = run_side_by_side(torch, "AdamW", options, steps=2)
    assert not np.allclose(array(adam_params[0]), array(adamw_params[0]))


# --------------------------------------------------------------------------- defaults and groups


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW"])
def test_defaults_match_torch(torch, name):
    """Each setting takes torch's default (AdamW's weight_decay is 0.01), torch's
    implementation switches (foreach, fused ...) included."""
    ours = getattr(optim, name)(make_params(tg)).defaults
    theirs = getattr(torch.optim, name)(make_params(torch)).defaults
    assert ours == theirs


def test_param_groups_with_different_lr(torch):
    """Two groups, each its own lr (the second inherits momentum from the defaults): each
    group is updated with its own settings, like torch."""

    def groups(params):
        return [{"params": [params[0]], "lr": 0.1}, {"params": [params[1]], "lr": 0.01}]

    runs = run_side_by_side(torch, "SGD", {"lr": 1.0, "momentum": 0.9}, groups=groups)
    (_, _, opt), (_, _, torch_opt) = runs
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.01]
    for ours, theirs in zip(opt.param_groups, torch_opt.param_groups, strict=True):
        assert ours["momentum"] == 0.9
        assert {k: v for k, v in ours.items() if k != "params"} == {
            k: theirs[k] for k in ours if k != "params"
        }


def test_accepts_lists_generators_and_group_dicts(torch):
    """params may be a list, a generator, or dicts (param groups): the same updates."""
    results = []
    for wrap in (list, iter, lambda ps: [{"params": ps}]):
        params = make_params(tg)
        opt = optim.Adam(wrap(params), lr=0.1)
        train_step(tg, opt, params, 0)
        assert all(a is b for a, b in zip(opt.param_groups[0]["params"], params, strict=True))
        results.append(params)
    torch_params = make_params(torch)
    train_step(torch, torch.optim.Adam(torch_params, lr=0.1), torch_params, 0)
    for params in results:
        assert_same_params(params, torch_params)


def test_add_param_group_during_training(torch):
    """A group added after some steps gets the defaults for what it does not set, and
    from then on is stepped with its own lr, like torch."""
    runs = []
    for lib in (tg, torch):
        params = make_params(lib)
        opt = lib_optim(lib, torch).Adam([params[0]], lr=0.05, amsgrad=True)
        runs.append((lib, params, opt))
    for k in range(STEPS):
        if k == 2:
            for _, params, opt in runs:
                opt.add_param_group({"params": params[1], "lr": 0.2})
        for lib, params, opt in runs:
            train_step(lib, opt, params, k)
        assert_same_params(runs[0][1], runs[1][1])
    (_, params, opt), (_, torch_params, torch_opt) = runs
    assert_same_state(opt, torch_opt, params, torch_params)
    added = opt.param_groups[1]
    assert added["params"][0] is params[1]
    assert (added["lr"], added["amsgrad"], added["betas"]) == (0.2, True, (0.9, 0.999))


# --------------------------------------------------------------------------- zero_grad


def test_zero_grad_sets_grads_to_none_by_default(torch):
    for lib in (tg, torch):
        params = make_params(lib)
        opt = lib_optim(lib, torch).SGD(params, lr=0.1)
        train_step(lib, opt, params, 0)
        assert all(p.grad is not None for p in params)
        opt.zero_grad()
        assert all(p.grad is None for p in params), lib.__name__


def test_zero_grad_in_place_keeps_the_same_grad_tensor(torch):
    """set_to_none=False fills the existing .grad with zeros: the same tensor object, so a
    reference taken before sees the zeros; like torch."""
    for lib in (tg, torch):
        params = make_params(lib)
        opt = lib_optim(lib, torch).SGD(params, lr=0.1)
        train_step(lib, opt, params, 0)
        before = [p.grad for p in params]
        assert all(np.any(array(g) != 0) for g in before)
        opt.zero_grad(set_to_none=False)
        for p, g in zip(params, before, strict=True):
            assert p.grad is g
            np.testing.assert_array_equal(array(g), np.zeros(p.shape))


@pytest.mark.parametrize("name, options", [RULE_CASES[1], RULE_CASES[len(SGD_OPTIONS)]])
def test_training_with_zero_grad_in_place_matches_torch(torch, name, options):
    """With zero_grad(set_to_none=False) the same .grad tensors are zeroed and refilled
    every step; the optimizer's state must not alias them (the momentum buffer is a copy
    of the first gradient), so the run still equals torch's."""
    runs = []
    for lib in (tg, torch):
        params = make_params(lib)
        runs.append((lib, params, getattr(lib_optim(lib, torch), name)(params, **options)))
    for k in range(STEPS):
        for lib, params, opt in runs:
            train_step(lib, opt, params, k, set_to_none=False)
        assert_same_params(runs[0][1], runs[1][1])
        assert_same_state(runs[0][2], runs[1][2], runs[0][1], runs[1][1])


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
def test_zero_grad_in_place_detaches_a_grad_with_history(torch):
    """A .grad made by backward(create_graph=True) has a grad_fn; set_to_none=False cuts it
    from the graph before zeroing it, as torch does."""
    for lib in (tg, torch):
        w = lib.tensor([1.0, 2.0], requires_grad=True)
        (w**3).sum().backward(create_graph=True)
        assert w.grad.grad_fn is not None
        lib_optim(lib, torch).SGD([w]).zero_grad(set_to_none=False)
        assert w.grad.grad_fn is None and not w.grad.requires_grad
        np.testing.assert_array_equal(array(w.grad), [0.0, 0.0])


# --------------------------------------------------------------------------- state dicts

STATEFUL_CASES = [
    pytest.param("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True}, id="SGD-nesterov"),
    pytest.param("SGD", {"lr": 0.1}, id="SGD-no-state"),
    pytest.param("Adam", {"lr": 0.05, "amsgrad": True, "weight_decay": 0.1}, id="Adam-amsgrad"),
    pytest.param("AdamW", {"lr": 0.05, "betas": (0.5, 0.9)}, id="AdamW"),
]


def _two_groups(params):
    return [{"params": [params[0]]}, {"params": [params[1]], "lr": 0.01}]


@pytest.mark.parametrize("name, options", STATEFUL_CASES)
def test_state_dict_structure_matches_torch(torch, name, options):
    """Same top-level keys, same parameter indices in state and groups, same per-parameter
    state names and values, same group settings; parameters themselves are not in it."""
    runs = run_side_by_side(torch, name, options, steps=2, groups=_two_groups)
    ours, theirs = runs[0][2].state_dict(), runs[1][2].state_dict()
    assert list(ours) == list(theirs) == ["state", "param_groups"]
    assert list(ours["state"]) == list(theirs["state"])
    for index, state in theirs["state"].items():
        assert list(ours["state"][index]) == list(state)
        for key, value in state.items():
            np.testing.assert_allclose(array(ours["state"][index][key]), array(value), 1e-10)
    assert len(ours["param_groups"]) == len(theirs["param_groups"]) == 2
    for group, torch_group in zip(ours["param_groups"], theirs["param_groups"], strict=True):
        assert group == torch_group
    assert [g["params"] for g in ours["param_groups"]] == [[0], [1]]


@pytest.mark.parametrize("name, options", STATEFUL_CASES)
def test_load_state_dict_continues_identically(torch, name, options):
    """Train 3 steps, save, load into a new optimizer (built with other settings) over
    copies of the parameters, train 3 more: the same parameters as torch doing the same,
    and as an uninterrupted teachgrad run."""
    resumed = {}
    for lib in (tg, torch):
        params = make_params(lib)
        opt = getattr(lib_optim(lib, torch), name)(_two_groups(params), **options)
        for k in range(3):
            train_step(lib, opt, params, k)
        saved = opt.state_dict()
        copies = [lib.tensor(array(p).copy(), requires_grad=True) for p in params]
        fresh = getattr(lib_optim(lib, torch), name)(_two_groups(copies), lr=0.5)
        fresh.load_state_dict(saved)
        assert fresh.param_groups[0]["lr"] == options["lr"]
        assert fresh.param_groups[0]["params"][0] is copies[0]
        for k in range(3, STEPS):
            train_step(lib, fresh, copies, k)
        resumed[lib] = copies
    assert_same_params(resumed[tg], resumed[torch])

    params = make_params(tg)
    uninterrupted = getattr(optim, name)(_two_groups(params), **options)
    for k in range(STEPS):
        train_step(tg, uninterrupted, params, k)
    assert_same_params(resumed[tg], params)


def test_load_state_dict_casts_state_to_the_parameters_dtype(torch):
    """State saved from float64 parameters, loaded for float32 ones: the moment tensors
    become float32, the step count keeps its dtype; like torch."""
    dtypes = {}
    for lib in (tg, torch):
        params = make_params(lib, np.float64)
        opt = lib_optim(lib, torch).Adam(params)
        train_step(lib, opt, params, 0)
        new_params = make_params(lib, np.float32)
        new = lib_optim(lib, torch).Adam(new_params)
        new.load_state_dict(opt.state_dict())
        state = new.state[new_params[0]]
        dtypes[lib] = {key: str(value.dtype).split(".")[-1] for key, value in state.items()}
        train_step(lib, new, new_params, 1, np.float32)  # and it can go on
    assert dtypes[tg] == dtypes[torch]
    assert dtypes[tg]["exp_avg"] == "float32"


def test_adamw_keeps_decoupled_weight_decay_when_loading_an_adam_state(torch):
    for lib in (tg, torch):
        params = make_params(lib)
        adamw = lib_optim(lib, torch).AdamW(params)
        adamw.load_state_dict(lib_optim(lib, torch).Adam(params).state_dict())
        assert adamw.param_groups[0]["decoupled_weight_decay"] is True


@pytest.mark.parametrize(
    "saved_groups",
    [
        pytest.param(lambda ps: ps[:2], id="different number of groups"),
        pytest.param(lambda ps: [{"params": ps[:1]}, {"params": ps[1:3]}], id="group size"),
    ],
)
def test_load_state_dict_refuses_groups_that_do_not_match(torch, saved_groups):
    """The same ValueError class and message start as torch's."""
    messages = []
    for lib in (tg, torch):
        params = make_params(lib) + make_params(lib)
        saved = lib_optim(lib, torch).SGD(saved_groups(params)).state_dict()
        target = lib_optim(lib, torch).SGD([{"params": params[:1]}, {"params": params[1:2]}])
        with pytest.raises(ValueError) as error:
            target.load_state_dict(saved)
        messages.append(str(error.value).splitlines()[0])
    assert messages[0] == messages[1]


# --------------------------------------------------------------------------- step and closure


def test_step_with_a_closure_returns_its_loss_and_runs_it_with_grad_enabled(torch):
    """The closure runs once, with grad enabled even when step() is called under
    no_grad; step returns the closure's loss; the update equals torch's."""
    runs = {}
    for lib in (tg, torch):
        params = make_params(lib)
        opt = lib_optim(lib, torch).SGD(params, lr=0.1, momentum=0.9)
        calls = []

        def closure(lib=lib, params=params, opt=opt, calls=calls):
            calls.append(lib.is_grad_enabled())
            opt.zero_grad()
            W, b = params
            loss = ((W @ lib.tensor(X[0]) + b - lib.tensor(Y[0])) ** 2).sum()
            loss.backward()
            return loss

        with lib.no_grad():
            loss = opt.step(closure)
        assert calls == [True]
        assert loss.requires_grad
        runs[lib] = (params, loss.item())
    assert_same_params(runs[tg][0], runs[torch][0])
    assert runs[tg][1] == pytest.approx(runs[torch][1], rel=1e-12)


def test_step_records_nothing_and_keeps_parameters_leaves(torch):
    """Updates happen under no_grad: parameters stay leaves with requires_grad, the
    state tensors don't require grad, and grad mode is what it was."""
    params = make_params(tg)
    opt = optim.Adam(params, lr=0.1, amsgrad=True)
    train_step(tg, opt, params, 0)
    assert tg.is_grad_enabled()
    for p in params:
        assert p.is_leaf and p.requires_grad and p.grad_fn is None
        assert not any(t.requires_grad for t in opt.state[p].values())


def test_step_without_closure_returns_none():
    params = make_params(tg)
    opt = optim.SGD(params)
    assert opt.step() is None


@pytest.mark.parametrize("name, options", STATEFUL_CASES)
def test_parameters_without_grad_are_skipped(torch, name, options):
    """A parameter that got no gradient is left alone: same values and version, no state,
    even with weight decay; like torch."""
    options = {**options, "weight_decay": 0.1}
    for lib in (tg, torch):
        params = make_params(lib) + [lib.tensor([1.0, -2.0], requires_grad=True)]
        opt = getattr(lib_optim(lib, torch), name)(params, **options)
        for k in range(3):
            train_step(lib, opt, params, k)
        unused = params[2]
        assert unused.grad is None
        np.testing.assert_array_equal(array(unused), [1.0, -2.0])
        assert unused._version == 0
        assert unused not in opt.state
        assert 2 not in opt.state_dict()["state"]


@pytest.mark.parametrize("name, options", STATEFUL_CASES + RULE_CASES[:2])
def test_each_step_bumps_the_parameters_version_like_torch(torch, name, options):
    """The update is in place: each parameter's _version goes up as in torch (once per
    step; twice for AdamW, whose decay is its own in-place op); zero_grad leaves it."""
    runs = run_side_by_side(torch, name, options, steps=1)
    (_, params, opt), (_, torch_params, torch_opt) = runs
    for k in range(1, 4):
        train_step(tg, opt, params, k)
        train_step(torch, torch_opt, torch_params, k)
        assert [p._version for p in params] == [p._version for p in torch_params]
    assert all(p._version >= 4 for p in params)


# --------------------------------------------------------------------------- errors

CONSTRUCTION_ERRORS = {
    "SGD negative lr": (lambda o, p: o.SGD([p], lr=-0.1), ValueError, "Invalid learning rate"),
    "SGD negative momentum": (
        lambda o, p: o.SGD([p], momentum=-0.5),
        ValueError,
        "Invalid momentum value",
    ),
    "SGD negative weight_decay": (
        lambda o, p: o.SGD([p], weight_decay=-1),
        ValueError,
        "Invalid weight_decay value",
    ),
    "SGD nesterov without momentum": (
        lambda o, p: o.SGD([p], nesterov=True),
        ValueError,
        "Nesterov momentum requires a momentum and zero dampening",
    ),
    "SGD nesterov with dampening": (
        lambda o, p: o.SGD([p], momentum=0.9, dampening=0.1, nesterov=True),
        ValueError,
        "Nesterov momentum requires a momentum and zero dampening",
    ),
    "Adam negative lr": (lambda o, p: o.Adam([p], lr=-1.0), ValueError, "Invalid learning rate"),
    "Adam negative eps": (lambda o, p: o.Adam([p], eps=-1.0), ValueError, "Invalid epsilon value"),
    "Adam beta1 = 1": (
        lambda o, p: o.Adam([p], betas=(1.0, 0.9)),
        ValueError,
        "Invalid beta parameter at index 0",
    ),
    "AdamW negative beta2": (
        lambda o, p: o.AdamW([p], betas=(0.9, -0.1)),
        ValueError,
        "Invalid beta parameter at index 1",
    ),
    "AdamW negative weight_decay": (
        lambda o, p: o.AdamW([p], weight_decay=-0.1),
        ValueError,
        "Invalid weight_decay value",
    ),
    "a single tensor": (
        lambda o, p: o.SGD(p),
        TypeError,
        "params argument given to the optimizer should be an iterable of Tensors or dicts",
    ),
    "no parameters": (lambda o, p: o.Adam([]), ValueError, "optimizer got an empty parameter list"),
    "a number among the params": (
        lambda o, p: o.SGD([p, 1.0]),
        TypeError,
        "optimizer can only optimize Tensors, but one of the params is float",
    ),
    "a non-leaf": (lambda o, p: o.SGD([p * 2]), ValueError, "can't optimize a non-leaf Tensor"),
    "a set of params": (
        lambda o, p: o.SGD([{"params": {p}}]),
        TypeError,
        "optimizer parameters need to be organized in ordered collections",
    ),
    "a parameter in two groups": (
        lambda o, p: o.SGD([{"params": [p]}, {"params": [p], "lr": 0.1}]),
        ValueError,
        "some parameters appear in more than one parameter group",
    ),
    "add_param_group with a list": (
        lambda o, p: o.SGD([p]).add_param_group([p]),
        TypeError,
        "param_group must be a dict",
    ),
}


@pytest.mark.parametrize(
    "build, error, phrase",
    [pytest.param(*case, id=name) for name, case in CONSTRUCTION_ERRORS.items()],
)
def test_errors_match_torch(torch, build, error, phrase):
    """torch raises this class with this phrase, and so does teachgrad."""
    for lib in (tg, torch):
        p = lib.ones(2, requires_grad=True)
        with pytest.raises(error, match=re.escape(phrase)):
            build(lib_optim(lib, torch), p)


def test_a_retained_non_leaf_can_be_optimized(torch):
    """torch accepts a non-leaf on which retain_grad() was called; so does teachgrad."""
    for lib in (tg, torch):
        h = lib.ones(2, requires_grad=True) * 2
        h.retain_grad()
        assert lib_optim(lib, torch).SGD([h]).param_groups[0]["params"][0] is h


def test_a_duplicate_parameter_in_a_group_warns(torch):
    for lib in (tg, torch):
        p = lib.ones(2, requires_grad=True)
        with pytest.warns(UserWarning, match="duplicate parameters"):
            lib_optim(lib, torch).SGD([p, p])


# --------------------------------------------------------------------------- repr


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW"])
def test_repr_like_torch(torch, name):
    """The same text as torch's repr, less the lines of torch's implementation switches."""
    reprs = []
    for lib in (tg, torch):
        params = make_params(lib)
        opt = getattr(lib_optim(lib, torch), name)([params[0]], lr=0.1)
        opt.add_param_group({"params": [params[1]], "lr": 0.01})
        reprs.append(repr(opt))
    assert reprs[0] == reprs[1]
    assert reprs[0].startswith(f"{name} (\nParameter Group 0\n")
