"""Devices: what can be checked on any machine, and the GPU checks for a machine with one.

On the CPU:
* no op quietly copies arrays to the host: ``.get()``/``asnumpy`` appear only where the
  API returns host data (printing, ``item``/``tolist``/``numpy``, transfers, previews,
  gradcheck's reports);
* DLPack interop with torch and NumPy shares memory both ways;
* snapshots say where each tensor lives.

Marked ``cuda`` (skipped without CuPy and a GPU): the same graph on CUDA, mixed-device
errors naming both devices, gradients on the parameter's device, ``save_on_cpu`` really
moving saved tensors to the host and back, ``.numpy()`` refusing a CUDA tensor, DLPack
with CuPy and torch CUDA tensors, and snapshots and pictures of a CUDA graph.
"""

import ast
import pathlib

import numpy as np
import pytest

import teachgrad as tg

PACKAGE = pathlib.Path(tg.__file__).parent
HOST_COPIES_ALLOWED = {  # files whose job is to hand data to the host
    "_backend.py",  # transfers (.to("cpu"))
    "_tensor.py",  # item(), tolist(), numpy(), pickling
    "_printing.py",  # printing shows values
    "testing.py",  # assert_close compares values
    "autograd/gradcheck.py",  # prints Jacobians in its reports
    "autograd/snapshot.py",  # a few values as a preview, for pictures
}


def _host_copies(path: pathlib.Path) -> list:
    """Lines calling ``.get()`` without arguments or any ``asnumpy``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "get" and not node.args and not node.keywords:
                found.append(node.lineno)
            if node.func.attr == "asnumpy":
                found.append(node.lineno)
    return found


def test_no_op_copies_arrays_to_the_host():
    offenders = {}
    for path in PACKAGE.rglob("*.py"):
        relative = path.relative_to(PACKAGE).as_posix()
        lines = _host_copies(path)
        if lines and relative not in HOST_COPIES_ALLOWED:
            offenders[relative] = lines
    assert not offenders, f"host copies inside ops (keep data on its device): {offenders}"


def test_the_scan_finds_host_copies(tmp_path):
    """(So the test above is not vacuous.)"""
    sample = tmp_path / "sample.py"
    sample.write_text("def f(x):\n    y = x.get()\n    return cupy.asnumpy(y)\n")
    assert _host_copies(sample) == [2, 3]


@pytest.mark.no_standin("DLPack with torch's CPU tensors shares host memory")
def test_dlpack_shares_memory_with_torch_both_ways(torch):
    t = torch.arange(4.0)
    x = tg.from_dlpack(t)
    t[0] = 9.0
    assert x.tolist() == [9.0, 1.0, 2.0, 3.0]
    y = tg.ones(3)
    z = torch.from_dlpack(y)
    y.add_(1)
    assert z.tolist() == [2.0, 2.0, 2.0]
    with pytest.raises(BufferError, match="require gradient"):
        torch.from_dlpack(tg.ones(2, requires_grad=True))


@pytest.mark.no_standin("the CPU half; test_snapshots_and_pictures_of_a_cuda_graph is the CUDA one")
def test_snapshots_say_where_tensors_live():
    w = tg.ones(2, requires_grad=True)
    snap = tg.autograd.graph.snapshot((w * 2).sum())
    assert {d for n in snap.nodes for d in n.devices} == {"cpu"}


# --------------------------------------------------------------------------- on a GPU


@pytest.mark.cuda
def test_the_same_training_step_on_cuda_and_cpu():
    def step(device):
        tg.manual_seed(0)
        model = tg.nn.Sequential(tg.nn.Linear(8, 16), tg.nn.ReLU(), tg.nn.Linear(16, 3)).to(device)
        x = tg.randn(5, 8).to(device)
        y = tg.tensor([0, 1, 2, 1, 0]).to(device)
        loss = tg.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        assert all(p.grad.device == p.device for p in model.parameters())
        return loss.item(), [p.grad.cpu().numpy() for p in model.parameters()]

    cpu_loss, cpu_grads = step("cpu")
    gpu_loss, gpu_grads = step("cuda")
    np.testing.assert_allclose(gpu_loss, cpu_loss, rtol=1e-5)
    for a, b in zip(gpu_grads, cpu_grads, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


@pytest.mark.cuda
def test_mixed_devices_raise_torchs_error():
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device") as err:
        tg.ones(2, device="cuda") + tg.ones(2, device="cpu")
    assert "cuda" in str(err.value) and "cpu" in str(err.value)


@pytest.mark.cuda
def test_numpy_refuses_a_cuda_tensor_like_torch():
    with pytest.raises(TypeError, match="can't convert cuda"):
        tg.ones(2, device="cuda").numpy()


@pytest.mark.cuda
@pytest.mark.no_standin("pinned host memory needs real CuPy (cupyx.empty_pinned)")
def test_save_on_cpu_moves_saved_tensors_to_the_host_and_back():
    x = tg.randn(4, device="cuda", requires_grad=True)
    with tg.autograd.graph.save_on_cpu(pin_memory=True):
        y = x.exp().sum()
    (saved,) = tg.autograd.graph.snapshot(y).node_named("ExpBackward0").saved
    assert saved.hooked and saved.device.startswith("cuda")  # the original's device
    y.backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), x.exp().detach().cpu().numpy(), rtol=1e-6)


@pytest.mark.cuda
@pytest.mark.no_standin("DLPack with CuPy needs real CuPy")
def test_dlpack_with_cupy_and_torch_cuda(torch):
    import cupy

    c = cupy.arange(3.0)
    t = tg.from_dlpack(c)
    assert t.device.type == "cuda"
    c[0] = 5.0
    assert t.tolist() == [5.0, 1.0, 2.0]
    if torch.cuda.is_available():
        back = torch.from_dlpack(tg.ones(2, device="cuda"))
        assert back.is_cuda


@pytest.mark.cuda
def test_snapshots_and_pictures_of_a_cuda_graph():
    w = tg.ones(2, device="cuda", requires_grad=True)
    loss = (w * 2).sum()
    snap = tg.autograd.graph.snapshot(loss)
    assert snap.node_named("leaf").devices == ["cuda:0"]
    assert snap.node_named("MulBackward0").devices == ["cuda"]
    assert snap.node_named("output").value == "4"  # a preview, copied to the host
    viz = pytest.importorskip("viz")
    assert "cuda:0" in viz.draw(loss).source
