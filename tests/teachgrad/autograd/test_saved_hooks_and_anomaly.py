"""Saved-tensor hooks and anomaly detection, compared with torch.

* ``saved_tensors_hooks``: pack runs once per saved tensor at save time (built-in ops and
  custom Functions alike), unpack at each use; the innermost block wins; gradients, double
  backward and the in-place version check are unchanged; ``save_on_cpu`` and
  ``disable_saved_tensors_hooks`` behave like torch's; snapshots show hooked tensors;
* anomaly detection: a NaN-producing backward raises torch's error naming the node, a
  warning shows the forward line that made it, the snapshot marks the node; the modes
  nest and restore, and ``check_nan=False`` lets NaN through.
"""

import warnings

import numpy as np
import pytest

import teachgrad as tg


def graph_of(lib):
    return lib.autograd.graph


def program(lib):
    x = lib.tensor([0.5, -1.0, 2.0], dtype=lib.float64, requires_grad=True)
    w = lib.tensor([1.5, 0.5, -2.0], dtype=lib.float64, requires_grad=True)
    y = (x * w).sin() + x.exp() * w
    return x, w, y.sum()


def test_pack_and_unpack_calls_match_torch(torch):
    logs = []
    for lib in (tg, torch):
        log = []

        def pack(t, log=log):
            log.append(("pack", tuple(t.shape)))
            return t

        def unpack(t, log=log):
            log.append(("unpack", tuple(t.shape)))
            return t

        with graph_of(lib).saved_tensors_hooks(pack, unpack):
            x, w, loss = program(lib)
        log.append("backward")
        loss.backward()
        logs.append((log, x.grad.tolist(), w.grad.tolist()))
    assert logs[0][0] == logs[1][0]
    np.testing.assert_allclose(logs[0][1], logs[1][1])
    np.testing.assert_allclose(logs[0][2], logs[1][2])


def test_the_innermost_hooks_win_and_packed_values_can_be_anything():
    outer, inner = [], []
    hooks = tg.autograd.graph.saved_tensors_hooks
    outer_hooks = hooks(lambda t: outer.append(1) or t, lambda t: t)
    inner_hooks = hooks(lambda t: inner.append(1) or t.detach().cpu().numpy().copy(), tg.tensor)
    with outer_hooks, inner_hooks:
        x = tg.tensor([1.0, 2.0], requires_grad=True)
        y = (x * x).sum()
    assert outer == [] and inner == [1, 1]
    y.backward()
    assert x.grad.tolist() == [2.0, 4.0]


def test_custom_function_saves_go_through_the_hooks():
    packed = []

    class Cube(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x * x * g

    with tg.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t) or t, lambda t: t):
        x = tg.tensor(2.0, requires_grad=True)
        y = Cube.apply(x)
    assert len(packed) == 1 and packed[0] is x
    y.backward()
    assert x.grad.item() == 12.0


def test_double_backward_through_unpacked_copies_matches_torch(torch):
    """Unpack returns a *new* tensor: autograd still treats it as the original."""
    results = []
    for lib in (tg, torch):
        hooks = graph_of(lib).saved_tensors_hooks(lambda t: t.detach().clone(), lambda t: t)
        with hooks:
            x, w, loss = program(lib)
        (gx,) = lib.autograd.grad(loss, x, create_graph=True)
        (gxx,) = lib.autograd.grad(gx.sum(), [x])
        results.append((gx.detach().cpu().numpy(), gxx.cpu().numpy()))
    for a, b in zip(results[0], results[1]):
        np.testing.assert_allclose(a, b, rtol=1e-12)


@pytest.mark.parametrize(
    ("pack", "grad"),
    [(lambda t: t, [4.0, 6.0]), (lambda t: t.clone(), [2.0, 4.0])],
    ids=["same", "copy"],
)
def test_what_a_pack_hook_kept_is_not_version_checked(torch, pack, grad):
    """As in torch: what the pack hook returned is kept instead of the tensor, so a later
    in-place change of the tensor is not an error. A pack hook that keeps the tensor itself
    gives backward the changed values; one that copies it (as ``save_on_cpu`` does), the
    values forward saw."""
    for lib in (tg, torch):
        with graph_of(lib).saved_tensors_hooks(pack, lambda t: t):
            a = lib.tensor([1.0, 2.0], requires_grad=True)
            b = a * 1
            c = (b * b).sum()
        with lib.no_grad():
            b.add_(1)
        c.backward()
        assert a.grad.tolist() == grad


def test_unpack_must_return_a_tensor(torch):
    for lib in (tg, torch):
        with graph_of(lib).saved_tensors_hooks(lambda t: t, lambda t: "oops"):
            x = lib.ones(2, requires_grad=True)
            y = (x * x).sum()
        with pytest.raises(TypeError, match="unpack_hook"):
            y.backward()


def test_save_on_cpu_is_harmless_on_the_cpu(torch):
    grads = []
    for lib in (tg, torch):
        with graph_of(lib).save_on_cpu():
            x, w, loss = program(lib)
        loss.backward()
        grads.append(x.grad.cpu().numpy())
    np.testing.assert_allclose(grads[0], grads[1])


def test_disable_saved_tensors_hooks_like_torch(torch):
    for lib in (tg, torch):
        graph = graph_of(lib)
        disabled = graph.disable_saved_tensors_hooks("no hooks in here")
        hooks = graph.saved_tensors_hooks(lambda t: t, lambda t: t)
        with disabled, pytest.raises(RuntimeError, match="no hooks in here"), hooks:
            pass
        with graph.saved_tensors_hooks(lambda t: t, lambda t: t):  # allowed again afterwards
            pass


def test_snapshot_shows_hooked_saved_tensors():
    with tg.autograd.graph.saved_tensors_hooks(
        lambda t: t.detach().cpu().numpy().copy(), lambda a: tg.tensor(a)
    ):
        x = tg.ones(2, requires_grad=True)
        y = x.exp()
    (saved,) = tg.autograd.graph.snapshot(y).node_named("ExpBackward0").saved
    assert saved.hooked and saved.shape == [2] and saved.dtype == "float32"
    assert saved.preview is None  # what the pack hook holds is its own business


# --------------------------------------------------------------------------- anomaly detection


def nan_program(lib):
    x = lib.tensor([0.0, 1.0], requires_grad=True)
    y = x.sqrt()  # d sqrt/dx at 0 is inf; times the 0 below gives nan
    return (y * 0).sum(), y


def test_nan_in_backward_raises_torchs_error_and_points_at_the_forward_line(torch):
    for lib in (tg, torch):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with lib.autograd.detect_anomaly():
                loss, _ = nan_program(lib)
                with pytest.raises(RuntimeError) as error:
                    loss.backward()
        assert "Function 'SqrtBackward0' returned nan values in its 0th output." in str(error.value)
        messages = [str(w.message) for w in caught]
        assert any("Anomaly Detection has been enabled" in m for m in messages)
        (trace,) = [m for m in messages if "Traceback of forward call that caused the error" in m]
        assert "Error detected in SqrtBackward0" in trace
        if lib is tg:  # our trace names this test file and the line inside nan_program
            assert __file__ in trace and "y = x.sqrt()" in trace


def test_the_snapshot_marks_the_failing_node():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with tg.autograd.detect_anomaly():
            loss, y = nan_program(tg)
            with pytest.raises(RuntimeError):
                loss.backward(retain_graph=True)
    marked = [n.name for n in tg.autograd.graph.snapshot(loss).nodes if n.anomaly]
    assert marked == ["SqrtBackward0"]


def test_without_anomaly_detection_nan_passes_silently(torch):
    for lib in (tg, torch):
        loss, _ = nan_program(lib)
        loss.backward()
        x = loss.grad_fn.next_functions[0][0]
        assert x is not None  # (no error raised)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with tg.autograd.detect_anomaly(check_nan=False):
            loss, _ = nan_program(tg)
            loss.backward()  # traces are recorded, but NaN is allowed


def test_modes_nest_and_restore(torch):
    for lib in (tg, torch):
        ad, on, nan_on = lib.autograd, lib.is_anomaly_enabled, lib.is_anomaly_check_nan_enabled
        assert not on()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with ad.detect_anomaly(check_nan=False):
                assert on() and not nan_on()
                with ad.set_detect_anomaly(False):
                    assert not on()
                assert on()
        assert not on() and nan_on()
        ad.set_detect_anomaly(True)
        assert on()
        ad.set_detect_anomaly(False)
        assert not on()


def test_detect_anomaly_as_a_decorator():
    @tg.autograd.detect_anomaly()
    def run():
        loss, _ = nan_program(tg)
        loss.backward()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match="returned nan values"):
            run()
    assert not tg.autograd.is_anomaly_enabled()


def test_any_backward_error_gets_the_forward_trace():
    class Broken(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            raise ValueError("my backward is broken")

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with tg.autograd.detect_anomaly():
            y = Broken.apply(tg.ones(2, requires_grad=True)).sum()
            with pytest.raises(ValueError, match="my backward is broken"):
                y.backward()
    trace = next(str(w.message) for w in caught if "Error detected in" in str(w.message))
    assert "BrokenBackward" in trace and "Broken.apply" in trace


def test_the_first_forward_op_making_nan_or_inf_is_named_at_its_line():
    """Beyond torch: the op where values first went bad, not the backward that noticed."""
    x = tg.tensor([0.0, 1.0], requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with tg.autograd.detect_anomaly():
            y = x.log()  # log(0) = -inf: the first bad value
            z = (y * 0).sum()  # nan from here on, but log came first
    reports = [str(w.message) for w in caught if "first to produce nan or inf" in str(w.message)]
    assert len(reports) == 1
    assert reports[0].startswith("Anomaly detection: LogBackward0's forward op")
    assert "y = x.log()" in reports[0]
    marked = [n.name for n in tg.autograd.graph.snapshot(z).nodes if n.anomaly]
    assert marked == ["LogBackward0"]


def test_saved_tensors_on_disk_give_the_same_gradients_and_free_memory(tmp_path):
    """A pack hook that writes to disk and an unpack that reads back: same gradients, and
    the graph no longer holds the intermediate tensors (only file names)."""
    import gc
    import weakref

    files = []

    def pack(t):
        path = tmp_path / f"saved{len(files)}.npy"
        np.save(path, t.detach().cpu().numpy())
        files.append(path)
        return str(path)

    def unpack(path):
        return tg.tensor(np.load(path))

    def run(hooked):
        x = tg.tensor(np.linspace(-1, 1, 5), dtype=tg.float64, requires_grad=True)
        with tg.autograd.graph.saved_tensors_hooks(pack, unpack) if hooked else _nothing():
            h = x.sin()
            watcher = weakref.ref(h)
            loss = (h * h).exp().sum()
        del h
        gc.collect()
        held = watcher() is not None  # is the intermediate still alive, held by the graph?
        loss.backward()
        return x.grad.cpu().numpy(), held

    plain, held_plain = run(False)
    on_disk, held_hooked = run(True)
    np.testing.assert_array_equal(plain, on_disk)
    assert held_plain and not held_hooked
    assert len(files) == 4  # sin's input x, h twice for h * h, and exp's result


def _nothing():
    import contextlib

    return contextlib.nullcontext()
