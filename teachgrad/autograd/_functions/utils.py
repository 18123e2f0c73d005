"""torch's ``autograd._functions.utils``: a gradient reshaped (``maybe_view``) or summed
back (``maybe_unexpand``) to the shape of the tensor it is for."""

from ... import _seam


def maybe_view(tensor, size, check_same_size=True):
    """``tensor`` in the shape ``size`` (itself when it has that shape already).

    >>> import teachgrad as tg
    >>> maybe_view(tg.ones(2, 3), (3, 2)).shape
    teachgrad.Size([3, 2])
    """
    if check_same_size and tensor.size() == size:
        return tensor
    return tensor.contiguous().view(size)


def maybe_unexpand(tensor, old_size, check_same_size=True):
    """``tensor`` summed back to ``old_size``, the shape it was broadcast (expanded) from:
    over the dimensions broadcasting added in front, then over those it stretched from 1.

    >>> import teachgrad as tg
    >>> maybe_unexpand(tg.ones(4, 2, 3), (1, 3))
    tensor([[8., 8., 8.]])
    """
    if check_same_size and tensor.size() == old_size:
        return tensor
    return _seam.sum_to(tensor, old_size)  # (what the engine sums broadcast gradients back with)
