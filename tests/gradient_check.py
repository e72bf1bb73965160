"""A loss and its reverse-mode gradient from one compiled program, for the gradient tests.

Those tests compare `jax.grad` of a rollout's loss with central differences of the loss. Beside
`jax.jit(jax.grad(loss))`, a `jax.jit(loss)` for the differences compiles the forward rollout
a second time, although the gradient's program holds it already (its primal pass). Here both
call one `jax.jit(jax.value_and_grad(loss))`, and each difference also runs the reverse pass.
That costs less than a second compilation where the differences are few (the equality tests'
welded model: its forward rollout compiled in 8 s alone, a scratch timing; the test 31.9 ->
17.9 s). Where a test takes many differences of a long rollout the reverse passes cost more
(the applied forces' and the limits' gradient tests, 7.9 -> 10.9 s and 9.2 -> 9.8 s when
tried), and those tests compile `jax.jit(loss)` as before. The test times: pytest on the
test alone, one run each.
"""

from __future__ import annotations

import jax


def value_and_gradient(loss, argnums=0):
    """(value, gradient): functions of loss's arguments returning loss(*args) and
    jax.grad(loss, argnums)(*args), both from one jitted jax.value_and_grad."""
    both = jax.jit(jax.value_and_grad(loss, argnums=argnums))
    return (lambda *args: both(*args)[0]), (lambda *args: both(*args)[1])
