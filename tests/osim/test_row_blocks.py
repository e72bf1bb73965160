"""`osim.row_blocks.map_row_blocks` against the row-by-row closed form: every row's outputs come
back in order, for row counts below, at and above the block size, with pytree rows, and the
function sees one shape only (the point of the blocks: one compilation)."""

import numpy as np
import pytest

from myotwin.osim.row_blocks import map_row_blocks


@pytest.mark.parametrize("n", [1, 7, 8, 9, 23])
def test_rows_come_back_in_order_from_blocks_of_one_shape(n):
    q = np.arange(n, dtype=float)
    qd = np.stack([q, -q], axis=1)
    shapes = set()

    def fn(block):
        shapes.add((block[0].shape, block[1].shape))
        return block[0] ** 2, block[1].sum(axis=1) + block[0]

    squares, sums = map_row_blocks(fn, (q, qd), 8)
    np.testing.assert_array_equal(squares, q ** 2)
    np.testing.assert_array_equal(sums, q)
    assert shapes == {((8,), (8, 2))}
