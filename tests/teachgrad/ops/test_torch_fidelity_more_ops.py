"""Differences from torch found by a differential fuzzer over the ops the other fuzzers do
not draw (losses of ``nn.functional``, indexing ops, linear algebra, reductions with no
degrees of freedom, ``allclose``), each compared with torch across its variations: the same
program runs on both libraries, and either both raise (same class, same first line) or both
give the same values, gradients and second derivatives.
"""

import warnings

import numpy as np
import pytest

from tests.teachgrad.autograd.test_torch_fidelity import assert_like_torch
from tests.teachgrad.inplace._common import numpy

pytestmark = pytest.mark.usefixtures("torch")  # (skips, or fails in CI, without the oracle)


# --------------------------------------------------------------------------- no degrees of freedom


@pytest.mark.parametrize("correction", [0, 1, 2, 5])
@pytest.mark.parametrize("dim", ["all", 0, -1, (0,)], ids=str)
@pytest.mark.parametrize("shape", [(), (1,), (3,), (2, 3)], ids=str)
@pytest.mark.parametrize("name", ["var", "std"])
def test_var_and_std_with_no_degrees_of_freedom_differentiate_as_torch(name, shape, dim, correction):
    """Over all elements with N − correction ≤ 0, torch's var gradient is inf · sign(x − mean)
    (NaN where x = mean); over given dims it is 2 / (N − correction) · (x − mean), negative
    or infinite as that number is. The second derivative and the tangent follow."""
    def program(lib):
        x = lib.tensor(np.arange(1.0, 1 + np.prod(shape)).reshape(shape) % 3, requires_grad=True)
        kwargs = {} if dim == "all" else {"dim": dim}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ("degrees of freedom is <= 0", both libraries)
            y = getattr(x, name)(correction=correction, **kwargs)
            (g,) = lib.autograd.grad(y.sum(), x, create_graph=True)
            (gg,) = lib.autograd.grad(g.sum(), x, allow_unused=True)
            fw = lib.autograd.forward_ad
            with fw.dual_level():
                dual = fw.make_dual(x.detach(), lib.ones_like(x))
                tangent = fw.unpack_dual(getattr(dual, name)(correction=correction, **kwargs))[1]
        return [numpy(t) for t in (y, g, gg, tangent)]

    assert_like_torch(program)
