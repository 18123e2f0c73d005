"""tg.nn.Module and the containers, checked against torch.nn.

Models are written once as ``build(nn)`` and built with both libraries (their
layer names and arguments are the same), so each test can compare what
teachgrad does with what torch does: reprs, parameter names, state dicts,
errors, hooks, modes.
"""

import copy
import pickle
import re
from collections import OrderedDict

import numpy as np
import pytest

import teachgrad as tg

from ._common import assert_close, from_torch, state_dict_from_torch, torch_text, twin

# ----------------------------------------------------------------------------- models


def build_zoo(nn):
    """One of every layer, nested three deep, with non-default settings."""
    return nn.Sequential(
        OrderedDict(
            [
                (
                    "features",
                    nn.Sequential(
                        nn.Conv2d(3, 8, 3, padding=1),
                        nn.ReLU(inplace=True),
                        nn.Conv2d(
                            8,
                            8,
                            (3, 5),
                            stride=2,
                            dilation=2,
                            groups=4,
                            bias=False,
                            padding_mode="reflect",
                        ),
                        nn.Conv2d(8, 4, 4, padding="same"),
                        nn.Conv2d(4, 4, 1, padding="valid", padding_mode="circular"),
                        nn.Dropout(0.25),
                        nn.Flatten(),
                    ),
                ),
                (
                    "head",
                    nn.ModuleList(
                        [nn.Linear(16, 16) for _ in range(3)]
                        + [nn.Linear(16, 4, bias=False), nn.GELU(approximate="tanh"), nn.GELU()]
                    ),
                ),
                (
                    "norms",
                    nn.ModuleDict(
                        {
                            "ln": nn.LayerNorm(4),
                            "frozen": nn.LayerNorm((2, 3), eps=1e-3, elementwise_affine=False),
                            "no_bias": nn.LayerNorm(5, bias=False),
                        }
                    ),
                ),
                ("emb", nn.Embedding(10, 4, padding_idx=-1)),
                (
                    "acts",
                    nn.Sequential(
                        nn.Tanh(),
                        nn.Sigmoid(),
                        nn.SiLU(),
                        nn.Softmax(dim=-1),
                        nn.LogSoftmax(dim=1),
                        nn.Identity(),
                        nn.Unflatten(1, (2, 2)),
                        nn.Flatten(0, 2),
                        nn.Sequential(),
                        nn.ModuleList(),
                    ),
                ),
                (
                    "losses",
                    nn.ModuleList(
                        [
                            nn.MSELoss(),
                            nn.L1Loss(reduction="sum"),
                            nn.NLLLoss(ignore_index=0),
                            nn.CrossEntropyLoss(label_smoothing=0.1),
                            nn.BCELoss(),
                            nn.BCEWithLogitsLoss(),
                        ]
                    ),
                ),
            ]
        )
    )


def build_mlp(nn):
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3), nn.Tanh(), nn.Linear(3, 2))


def build_tied(nn):
    """An embedding and an output layer sharing one weight, and one ReLU used twice."""
    embed, out, act = nn.Embedding(5, 3), nn.Linear(3, 5, bias=False), nn.ReLU()
    out.weight = embed.weight
    return nn.Sequential(embed, act, out, act)


def build_with_buffers(nn, lib):
    model = nn.Sequential(nn.Linear(2, 2), nn.CrossEntropyLoss(weight=lib.ones(2)))
    model[0].register_buffer("steps", lib.zeros(1, dtype=lib.int64))
    model[0].register_buffer("scratch", lib.zeros(3), persistent=False)
    return model


def make_block(lib):
    """A user-written Module subclass with its own extra_repr and a None child."""

    class Block(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = lib.nn.Parameter(lib.ones(3))
            self.proj = lib.nn.Linear(3, 3)
            self.skip = None
            self.add_module("missing", None)

        def forward(self, x, shift=0.0):
            return self.proj(x) * self.scale + shift

        def extra_repr(self):
            return "scale=3,\nline two"

    return Block()


# ----------------------------------------------------------------------------- repr


@pytest.mark.parametrize("build", [build_zoo, build_mlp, build_tied], ids=["zoo", "mlp", "tied"])
def test_repr_matches_torch(torch, build):
    assert torch_text(repr(build(tg.nn))) == repr(build(torch.nn))


def test_repr_of_a_custom_module_with_multiline_extra_repr_matches_torch(torch):
    assert torch_text(repr(make_block(tg))) == repr(make_block(torch))


def test_repr_of_a_module_list_groups_repeated_layers(torch):
    for lib in (tg, torch):
        layers = [lib.nn.ReLU(), lib.nn.ReLU(), lib.nn.Tanh(), lib.nn.ReLU()]
        text = repr(lib.nn.ModuleList(layers))
        assert "(0-1): 2 x ReLU()" in text and "(3): ReLU()" in text
    assert repr(tg.nn.ModuleList(layers[:0])) == "ModuleList()"


# ----------------------------------------------------------------------------- names and walking


@pytest.mark.parametrize("build", [build_zoo, build_mlp, build_tied], ids=["zoo", "mlp", "tied"])
def test_parameter_names_and_shapes_match_torch(torch, build):
    ours, theirs = build(tg.nn), build(torch.nn)
    assert [(k, tuple(p.shape)) for k, p in ours.named_parameters()] == [
        (k, tuple(p.shape)) for k, p in theirs.named_parameters()
    ]
    assert len(list(ours.parameters())) == len(list(theirs.parameters()))
    assert all(isinstance(p, tg.nn.Parameter) for p in ours.parameters())


@pytest.mark.parametrize("build", [build_zoo, build_mlp, build_tied], ids=["zoo", "mlp", "tied"])
def test_state_dict_keys_and_shapes_match_torch(torch, build):
    ours, theirs = build(tg.nn).state_dict(), build(torch.nn).state_dict()
    assert isinstance(ours, OrderedDict)
    assert [(k, tuple(v.shape)) for k, v in ours.items()] == [
        (k, tuple(v.shape)) for k, v in theirs.items()
    ]


@pytest.mark.parametrize("build", [build_zoo, build_tied], ids=["zoo", "tied"])
def test_module_walks_match_torch(torch, build):
    ours, theirs = build(tg.nn), build(torch.nn)

    def walks(model):
        return (
            [(name, type(m).__name__) for name, m in model.named_modules()],
            [(name, type(m).__name__) for name, m in model.named_children()],
            [type(m).__name__ for m in model.modules()],
            [type(m).__name__ for m in model.children()],
            [name for name, _ in model.named_parameters(prefix="net")],
            [name for name, _ in model[0].named_parameters(recurse=False)],
        )

    assert walks(ours) == walks(theirs)


def test_a_shared_parameter_is_listed_once_but_saved_under_each_name(torch):
    model = build_tied(tg.nn)
    assert model[0].weight is model[2].weight
    assert [name for name, _ in model.named_parameters()] == ["0.weight"]
    assert list(model.state_dict()) == ["0.weight", "2.weight"]
    assert [n for n, _ in model.named_parameters(remove_duplicate=False)] == [
        n for n, _ in build_tied(torch.nn).named_parameters(remove_duplicate=False)
    ]


def test_buffers_are_walked_and_saved_like_torch(torch):
    ours, theirs = build_with_buffers(tg.nn, tg), build_with_buffers(torch.nn, torch)
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in theirs.named_buffers()]
    assert list(ours.state_dict()) == list(theirs.state_dict())  # "scratch" is not persistent
    assert "0.scratch" not in ours.state_dict()
    assert ours[1].weight.tolist() == [1.0, 1.0]
    assert list(ours.parameters()) == list(ours[0].parameters())  # buffers are not parameters


# ----------------------------------------------------------------------------- attributes and registration


def test_unknown_attribute_error_matches_torch(torch):
    for lib, prefix in ((tg, ""), (torch, "")):
        with pytest.raises(AttributeError) as info:
            lib.nn.Linear(2, 2).foo  # noqa: B018
        assert str(info.value) == prefix + "'Linear' object has no attribute 'foo'"


def test_registering_a_plain_tensor_as_parameter_is_a_type_error(torch):
    pattern = r"cannot assign '(\w+\.)*\w*Tensor' object to parameter 'w'"
    for lib in (tg, torch):
        with pytest.raises(TypeError, match=pattern):
            lib.nn.Module().register_parameter("w", lib.ones(2))


@pytest.mark.parametrize(
    ("action", "error"),
    [
        (lambda lib, m: setattr(m, "weight", lib.ones(2, 2)), TypeError),
        (lambda lib, m: setattr(m, "act", 3), TypeError),
        (lambda lib, m: m.register_buffer("b", 3), TypeError),
        (lambda lib, m: m.register_parameter("a.b", None), KeyError),
        (lambda lib, m: m.register_parameter("", None), KeyError),
        (lambda lib, m: m.register_buffer("in_features", lib.ones(1)), KeyError),
        (lambda lib, m: m.add_module("act", lib.ones(1)), TypeError),
        (lambda lib, m: m.add_module(3, lib.nn.ReLU()), TypeError),
    ],
    ids=[
        "tensor-as-parameter",
        "int-as-module",
        "int-as-buffer",
        "dotted-name",
        "empty-name",
        "taken-name",
        "tensor-as-module",
        "name-not-string",
    ],
)
def test_registration_errors_match_torch(torch, action, error):
    messages = []
    for lib in (tg, torch):
        model = lib.nn.Linear(2, 2)
        model.act = lib.nn.ReLU()
        with pytest.raises(error) as info:
            action(lib, model)
        messages.append(str(info.value))
    ours, theirs = messages
    # torch names a tensor's type 'torch.FloatTensor' where teachgrad says 'Tensor'
    assert (
        re.sub(r"torch\.\w*Tensor\b", "Tensor", theirs).split("(")[0]
        == torch_text(ours).split("(")[0]
    )


def test_setting_a_registered_parameter_to_none_unregisters_its_value():
    lin = tg.nn.Linear(2, 2)
    lin.bias = None
    assert lin.bias is None
    assert [n for n, _ in lin.named_parameters()] == ["weight"]
    assert list(lin.state_dict()) == ["weight"]


def test_assignment_moves_an_attribute_between_registries(torch):
    for lib in (tg, torch):
        m = lib.nn.Module()
        m.thing = 5
        m.thing = lib.nn.Parameter(lib.ones(1))  # a plain attribute becomes a parameter
        assert "thing" not in m.__dict__ and list(m._parameters) == ["thing"]
        with pytest.raises(TypeError, match="as parameter 'thing'"):
            m.thing = lib.nn.ReLU()  # a parameter's name only takes a Parameter or None
        del m.thing
        m.thing = lib.nn.ReLU()
        assert list(m._parameters) == [] and list(m._modules) == ["thing"]
        m.thing = lib.nn.Parameter(lib.ones(1))  # a Parameter may replace a child
        assert list(m._parameters) == ["thing"] and list(m._modules) == []
        del m.thing
        with pytest.raises(AttributeError, match="'Module' object has no attribute 'thing'"):
            m.thing  # noqa: B018


def test_buffers_accept_tensors_and_none_by_assignment():
    m = tg.nn.Module()
    m.register_buffer("running", tg.zeros(2))
    m.running = tg.ones(2)
    assert m.state_dict()["running"].tolist() == [1.0, 1.0]
    with pytest.raises(TypeError, match="cannot assign 'list' as buffer 'running'"):
        m.running = [1.0]


def test_assigning_before_module_init_is_an_attribute_error(torch):
    def forgetful(lib):
        class Forgetful(lib.nn.Module):
            def __init__(self):
                self.w = lib.nn.Parameter(lib.ones(1))  # before super().__init__()

        return Forgetful()

    for lib in (tg, torch):
        with pytest.raises(AttributeError, match=re.escape("before Module.__init__() call")):
            forgetful(lib)


def test_a_module_without_forward_says_so_like_torch(torch):
    messages = []
    for lib in (tg, torch):
        with pytest.raises(NotImplementedError) as info:
            lib.nn.Module()(lib.ones(1))
        messages.append(str(info.value))
    assert messages[0] == messages[1]


def test_dir_lists_registered_names():
    names = dir(make_block(tg))
    assert {"scale", "proj", "forward", "training"} <= set(names)


# ----------------------------------------------------------------------------- state dicts


def test_state_dict_holds_detached_tensors_sharing_the_parameters_memory():
    model = build_mlp(tg.nn)
    sd = model.state_dict()
    weight = sd["0.weight"]
    assert type(weight) is tg.Tensor and not weight.requires_grad
    assert weight.data_ptr() == model[0].weight.data_ptr()
    kept = model.state_dict(keep_vars=True)["0.weight"]
    assert kept is model[0].weight


@pytest.mark.parametrize("build", [build_mlp, build_tied], ids=["mlp", "tied"])
def test_loaded_torch_weights_give_torch_outputs(torch, build):
    model, reference = twin(build, torch)
    if build is build_mlp:
        x = np.random.default_rng(0).normal(size=(5, 4)).astype("float32")
        ours, theirs = model(tg.tensor(x)), reference(torch.tensor(x))
    else:
        ids = [[0, 4, 2], [1, 1, 3]]
        ours, theirs = model(tg.tensor(ids)), reference(torch.tensor(ids))
    assert_close(ours, theirs)


def test_load_state_dict_copies_values_and_keeps_parameter_objects():
    source, target = build_mlp(tg.nn), build_mlp(tg.nn)
    weight = target[0].weight
    result = target.load_state_dict(source.state_dict())
    assert repr(result) == "<All keys matched successfully>"
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert target[0].weight is weight and weight.is_leaf and weight.requires_grad
    assert bool((weight == source[0].weight).all())
    assert weight.data_ptr() != source[0].weight.data_ptr()  # copied, not shared


def _edited_state_dict(lib, model, drop=(), add=(), reshape=()):
    sd = OrderedDict((k, v.clone()) for k, v in model.state_dict().items())
    for key in drop:
        del sd[key]
    for key in add:
        sd[key] = lib.zeros(1)
    for key in reshape:
        sd[key] = lib.zeros(7)
    return sd


STATE_DICT_EDITS = {
    "missing": {"drop": ["2.bias", "0.weight"]},
    "unexpected": {"add": ["5.weight", "0.running", "0.weight.extra"]},
    "both": {"drop": ["4.bias"], "add": ["extra"]},
    "shape": {"reshape": ["2.bias"]},
    "shape-and-missing": {"reshape": ["0.bias"], "drop": ["4.weight"]},
}


@pytest.mark.parametrize("edit", sorted(STATE_DICT_EDITS))
def test_strict_loading_errors_match_torch(torch, edit):
    messages = []
    for lib in (tg, torch):
        model = build_mlp(lib.nn)
        sd = _edited_state_dict(lib, model, **STATE_DICT_EDITS[edit])
        with pytest.raises(RuntimeError) as info:
            model.load_state_dict(sd)
        messages.append(str(info.value))
    assert messages[0].startswith("Error(s) in loading state_dict for Sequential:\n\t")
    assert torch_text(messages[0]) == messages[1]


@pytest.mark.parametrize("edit", ["missing", "unexpected", "both"])
def test_non_strict_loading_reports_keys_like_torch(torch, edit):
    results = []
    for lib in (tg, torch):
        model = build_mlp(lib.nn)
        sd = _edited_state_dict(lib, model, **STATE_DICT_EDITS[edit])
        result = model.load_state_dict(sd, strict=False)
        results.append((result.missing_keys, result.unexpected_keys, repr(result)))
    assert results[0] == results[1]


def test_non_strict_loading_still_copies_what_matches():
    source, target = build_mlp(tg.nn), build_mlp(tg.nn)
    sd = source.state_dict()
    del sd["4.bias"]
    target.load_state_dict(sd, strict=False)
    assert bool((target[0].weight == source[0].weight).all())
    assert not bool((target[4].bias == source[4].bias).all())


def test_load_state_dict_needs_a_mapping_of_tensors():
    model = tg.nn.Linear(2, 2)
    with pytest.raises(TypeError, match="Expected state_dict to be dict-like"):
        model.load_state_dict([("weight", tg.zeros(2, 2))])
    with pytest.raises(RuntimeError, match='While copying the parameter named "bias"'):
        model.load_state_dict({"weight": tg.zeros(2, 2), "bias": [0.0, 0.0]})


def test_assign_loading_takes_the_given_tensors():
    model = tg.nn.Linear(2, 2)
    new_weight = tg.ones(2, 2)
    model.load_state_dict({"weight": new_weight, "bias": tg.zeros(2)}, assign=True)
    assert isinstance(model.weight, tg.nn.Parameter) and model.weight.requires_grad
    assert model.weight.data_ptr() == new_weight.data_ptr()


def test_buffers_round_trip_through_state_dict():
    a, b = build_with_buffers(tg.nn, tg), build_with_buffers(tg.nn, tg)
    a[0].steps.fill_(7)
    a[1].weight.mul_(3.0)
    b.load_state_dict(a.state_dict())
    assert b[0].steps.tolist() == [7] and b[1].weight.tolist() == [3.0, 3.0]


# ----------------------------------------------------------------------------- modes and gradients


def test_train_and_eval_reach_every_descendant(torch):
    for lib in (tg, torch):
        model = build_zoo(lib.nn)
        assert model.eval() is model
        assert not any(m.training for m in model.modules())
        model.norms.train()  # a subtree only
        assert [m.training for m in model.modules()] == [
            name.startswith("norms") for name, _ in model.named_modules()
        ]
        assert model.train() is model and all(m.training for m in model.modules())
        with pytest.raises(ValueError, match="training mode is expected to be boolean"):
            model.train("yes")


def _backward_once(model):
    model(tg.ones(3, 4)).pow(2).sum().backward()


def test_zero_grad_sets_to_none_by_default():
    model = build_mlp(tg.nn)
    _backward_once(model)
    assert all(p.grad is not None for p in model.parameters())
    model.zero_grad()
    assert all(p.grad is None for p in model.parameters())


def test_zero_grad_can_zero_in_place():
    model = build_mlp(tg.nn)
    _backward_once(model)
    grads = [p.grad for p in model.parameters()]
    model.zero_grad(set_to_none=False)
    for p, g in zip(model.parameters(), grads):
        assert p.grad is g and not bool(g.any())
    _backward_once(model)  # accumulates into the zeroed tensors again
    assert all(bool(p.grad.any()) for p in model.parameters())


def test_zero_grad_detaches_a_grad_that_has_a_graph():
    lin = tg.nn.Linear(2, 1)
    (grad,) = tg.autograd.grad(lin(tg.ones(1, 2)).sum(), [lin.weight], create_graph=True)
    lin.weight.grad = grad * 1.0
    lin.zero_grad(set_to_none=False)
    assert lin.weight.grad.grad_fn is None and lin.weight.grad.tolist() == [[0.0, 0.0]]


def test_requires_grad_freezes_and_unfreezes_every_parameter():
    model = build_mlp(tg.nn)
    assert model.requires_grad_(False) is model
    assert not any(p.requires_grad for p in model.parameters())
    model.requires_grad_()
    assert all(p.requires_grad for p in model.parameters())


def test_gradient_reaches_every_parameter_of_a_sequential_like_torch(torch):
    model, reference = twin(build_mlp, torch)
    x = np.random.default_rng(1).normal(size=(6, 4)).astype("float32")
    model(tg.tensor(x)).square().mean().backward()
    reference(torch.tensor(x)).square().mean().backward()
    for (name, p), (_, q) in zip(model.named_parameters(), reference.named_parameters()):
        assert p.grad is not None and bool(p.grad.abs().sum() > 0), name
        assert_close(p.grad, q.grad)


def test_apply_visits_children_before_parents_like_torch(torch):
    def visit_order(lib):
        seen = []
        model = build_zoo(lib.nn)
        assert model.apply(lambda m: seen.append(type(m).__name__)) is model
        return seen

    assert visit_order(tg) == visit_order(torch)


# ----------------------------------------------------------------------------- dtype and device


def test_to_float64_keeps_parameter_identity_and_converts_grads():
    model = build_mlp(tg.nn)
    _backward_once(model)
    before = list(model.parameters())
    assert model.to(tg.float64) is model
    after = list(model.parameters())
    assert all(p is q for p, q in zip(before, after))
    assert all(p.dtype is tg.float64 and p.grad.dtype is tg.float64 for p in after)
    assert all(isinstance(p, tg.nn.Parameter) and p.is_leaf for p in after)
    assert model(tg.ones(2, 4, dtype=tg.float64)).dtype is tg.float64


def test_to_accepts_keywords_devices_and_tensors():
    model = tg.nn.Linear(2, 2)
    model.to(dtype=tg.float64)
    assert model.weight.dtype is tg.float64
    model.to("cpu", tg.float32)
    assert model.weight.dtype is tg.float32 and model.weight.device == tg.device("cpu")
    model.to(tg.zeros(1, dtype=tg.float64))
    assert model.bias.dtype is tg.float64


def test_double_float_half_and_cpu_cast_floating_tensors_only():
    model = build_with_buffers(tg.nn, tg)
    weight = model[0].weight
    model.double()
    assert model[0].weight is weight and weight.dtype is tg.float64
    assert model[1].weight.dtype is tg.float64  # a float buffer follows
    assert model[0].steps.dtype is tg.int64  # an integer buffer does not
    assert model.half()[0].bias.dtype is tg.float16
    assert model.float()[0].weight.dtype is tg.float32
    assert model.cpu()[0].weight.device == tg.device("cpu")


@pytest.mark.cuda
def test_cuda_and_cpu_move_parameters_in_place_and_keep_results():
    model = build_mlp(tg.nn)
    x = tg.randn(3, 4)
    expected = model(x)
    params = list(model.parameters())
    assert model.cuda() is model
    assert all(p is q and p.is_cuda for p, q in zip(model.parameters(), params))
    assert_close(model(x.cuda()).cpu(), expected)
    model.to("cpu")
    assert all(p.device == tg.device("cpu") for p in model.parameters())


def test_to_an_integer_dtype_is_refused_like_torch(torch):
    for lib in (tg, torch):
        with pytest.raises(TypeError, match="nn.Module.to only accepts floating point"):
            lib.nn.Linear(2, 2).to(lib.int64)


# ----------------------------------------------------------------------------- hooks


def _hook_story(lib):
    """Pre-hooks and forward hooks of every kind on one module; returns what happened."""
    log = []

    class Shift(lib.nn.Module):
        def forward(self, x, shift=0.0):
            log.append(("forward", x.tolist(), shift))
            return x + shift

    m = Shift()
    m.register_forward_pre_hook(lambda mod, args: log.append(("pre", args[0].tolist())))
    m.register_forward_pre_hook(lambda mod, args: log.append("pre, prepended"), prepend=True)
    double = m.register_forward_pre_hook(lambda mod, args: args[0] * 2)  # one value: wrapped
    m.register_forward_pre_hook(
        lambda mod, args, kwargs: (args, {**kwargs, "shift": 10.0}), with_kwargs=True
    )
    m.register_forward_hook(lambda mod, args, out: out * 100)
    m.register_forward_hook(
        lambda mod, args, kwargs, out: log.append(("post", sorted(kwargs), out.tolist())),
        with_kwargs=True,
    )
    first = m(lib.tensor([1.0]), shift=1.0)
    log.append(("result", first.tolist()))
    double.remove()
    second = m(lib.tensor([1.0]))
    log.append(("result", second.tolist()))
    return log


def test_forward_hooks_run_in_torchs_order_with_torchs_effects(torch):
    ours = _hook_story(tg)
    assert ours == _hook_story(torch)
    assert ("result", [1200.0]) in ours and ("result", [1100.0]) in ours


def test_hook_handles_work_as_context_managers():
    m = tg.nn.Identity()
    with m.register_forward_hook(lambda mod, args, out: out + 1):
        assert m(tg.tensor([0.0])).tolist() == [1.0]
    assert m(tg.tensor([0.0])).tolist() == [0.0]


def test_a_pre_hook_with_kwargs_must_return_args_and_kwargs():
    m = tg.nn.Identity()
    m.register_forward_pre_hook(lambda mod, args, kwargs: args, with_kwargs=True)
    with pytest.raises(RuntimeError, match="forward pre-hook must return None or a tuple"):
        m(tg.ones(1))


# ----------------------------------------------------------------------------- copying


def test_deepcopy_and_pickle_keep_shared_parameters_shared():
    model = build_tied(tg.nn)
    for clone in (copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
        assert clone[0].weight is clone[2].weight and clone[1] is clone[3]
        assert clone[0].weight is not model[0].weight
        assert bool((clone[0].weight == model[0].weight).all())
        assert isinstance(clone[0].weight, tg.nn.Parameter)


# ----------------------------------------------------------------------------- containers


def _layout(container):
    """Names and types of a container's children: what torch and teachgrad should agree on."""
    return [(name, type(m).__name__) for name, m in container.named_children()]


def _sequential_story(lib):
    nn = lib.nn
    seq = nn.Sequential(nn.ReLU(), nn.Tanh(), nn.Sigmoid(), nn.Identity())
    story = [len(seq), type(seq[-1]).__name__, _layout(seq[1:3]), type(seq[1:3]).__name__]
    story.append([type(m).__name__ for m in seq])
    del seq[1]
    story.append(_layout(seq))
    seq[0] = nn.GELU()
    story.append(_layout(seq))
    assert seq.append(nn.SiLU()) is seq
    seq.insert(1, nn.ReLU())
    seq.insert(-1, nn.Tanh())
    story.append(_layout(seq))
    del seq[::2]
    story.append(_layout(seq))
    seq.extend([nn.ReLU(), nn.ReLU()])
    story.append(_layout(seq))
    named = nn.Sequential(OrderedDict([("first", nn.ReLU()), ("second", nn.Tanh())]))
    story.append((_layout(named), type(named.second).__name__, _layout(named[1:])))
    del named[0]
    story.append(_layout(named))
    return story


def test_sequential_indexing_and_editing_match_torch(torch):
    assert _sequential_story(tg) == _sequential_story(torch)


def test_sequential_index_errors_match_torch(torch):
    for lib in (tg, torch):
        seq = lib.nn.Sequential(lib.nn.ReLU())
        with pytest.raises(IndexError, match="index 1 is out of range"):
            seq[1]  # noqa: B018
        with pytest.raises(IndexError, match="index -2 is out of range"):
            seq[-2]  # noqa: B018


def test_sequential_runs_its_children_in_order():
    seq = tg.nn.Sequential(tg.nn.ReLU(), tg.nn.Sigmoid())
    x = tg.tensor([-1.0, 2.0])
    assert seq(x).tolist() == x.relu().sigmoid().tolist()


def _module_list_story(lib):
    nn = lib.nn
    layers = nn.ModuleList([nn.Linear(2, 2), nn.ReLU()])
    layers.append(nn.Tanh()).extend([nn.Sigmoid(), nn.Identity()])
    layers.insert(1, nn.GELU())
    story = [_layout(layers), len(layers), type(layers[-2]).__name__, _layout(layers[1::2])]
    layers += [nn.SiLU()]
    story.append(type(layers.pop(2)).__name__)
    del layers[0]
    story.append(_layout(layers))
    layers[1] = nn.Linear(3, 3)
    story.append([name for name, _ in layers.named_parameters()])
    story.append(_layout(layers + nn.ModuleList([nn.ReLU()])))
    return story


def test_module_list_editing_matches_torch(torch):
    assert _module_list_story(tg) == _module_list_story(torch)


def test_module_list_extend_needs_an_iterable(torch):
    for lib in (tg, torch):
        with pytest.raises(TypeError, match="ModuleList.extend should be called with an iterable"):
            lib.nn.ModuleList().extend(lib.nn.ReLU())


def test_module_list_registers_its_layers():
    layers = tg.nn.ModuleList([tg.nn.Linear(2, 2) for _ in range(3)])
    assert [n for n, _ in layers.named_parameters()][:2] == ["0.weight", "0.bias"]
    assert len(list(layers.parameters())) == 6
    with pytest.raises(NotImplementedError):
        layers(tg.ones(2))


def _module_dict_story(lib):
    nn = lib.nn
    heads = nn.ModuleDict({"b": nn.Linear(2, 1), "a": nn.ReLU()})
    heads["c"] = nn.Tanh()
    heads.update([("d", nn.Sigmoid())])
    heads.update({"a": nn.GELU()})
    story = [list(heads), list(heads.keys()), len(heads), "a" in heads, "z" in heads]
    story.append([type(m).__name__ for m in heads.values()])
    story.append([(k, type(m).__name__) for k, m in heads.items()])
    story.append(type(heads.pop("b")).__name__)
    del heads["c"]
    story.append(_layout(heads))
    heads.clear()
    story.append(len(heads))
    return story


def test_module_dict_matches_torch(torch):
    assert _module_dict_story(tg) == _module_dict_story(torch)


def test_module_dict_update_errors_match_torch(torch):
    for lib in (tg, torch):
        with pytest.raises(TypeError, match="should be Iterable"):
            lib.nn.ModuleDict().update([3])
        with pytest.raises(ValueError, match="has length 3; 2 is required"):
            lib.nn.ModuleDict().update([("a", lib.nn.ReLU(), 1)])


def test_loading_torch_weights_into_containers(torch):
    def build(nn):
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.blocks = nn.ModuleList([nn.Linear(3, 3) for _ in range(2)])
                self.heads = nn.ModuleDict({"out": nn.Linear(3, 1)})

            def forward(self, x):
                for block in self.blocks:
                    x = block(x).tanh()
                return self.heads["out"](x)

        return Net()

    model, reference = twin(build, torch)
    x = np.linspace(-1, 1, 12, dtype="float32").reshape(4, 3)
    assert_close(model(tg.tensor(x)), reference(torch.tensor(x)))
    assert from_torch(reference.heads["out"].weight).tolist() == model.heads["out"].weight.tolist()
    assert list(state_dict_from_torch(reference)) == list(model.state_dict())
