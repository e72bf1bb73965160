"""`osim.build_muscles`: a loaded model's muscles as musculotendons of their own OpenSim type.

End to end against OpenSim 4.6 (`arm26_reference.json`, its `equilibrium_a0.5`: the fiber-tendon
equilibrium of the six Thelen2003Muscles at activation 0.5 and zero speed at 11 poses):
arm26.osim loaded as it is (its two WrapEllipsoids included), its muscles built by
`osim.build_muscles` with Thelen's curves and a compliant tendon, our equilibrium solved at OUR
path lengths. All 66 (muscle, pose) pairs, the 9 where the ellipsoids wrap included, must match
OpenSim's fiber length to 1e-9 m and tendon force to 1e-7 F_iso: our path lengths equal
OpenSim's to ~1e-15 m (tests/paths/test_arm26.py, test_osim_arm26.py), and OpenSim
stops its equilibrium iteration at a force residual of 1e-8 F_iso, which moves the fiber by at
most ~1e-10 m and the tendon force by ~1e-8 F_iso times the tendon-to-fiber stiffness ratio
(observed in tests/muscle/test_thelen2003.py: 2.4e-11 m and 7.9e-6 N with OpenSim's own
lengths). So the file's parameters, their mapping onto `build_muscles` and the paths are all
checked at once; a wrong mapping of any Thelen constant moves the fiber by millimetres.
"""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import myotwin
from myotwin import osim
from myotwin.muscle import DeGrooteCurves, MillardCurves, ThelenCurves, equilibrium
from myotwin.muscle import muscle_outputs
from myotwin.osim.force_reading import TYPE_DEFAULTS
from opensim_live import opensim_package
from osim_synthetic import set_muscle_property, write_osim
from shared_reference import SHARED, needs

MODELS = SHARED / "reference" / "opensim" / "models"
REFERENCE = SHARED / "reference" / "opensim" / "arm26_reference.json"


def _needs(path):
    return needs(path)


def test_arm26_equilibrium_end_to_end_vs_opensim():
    reference = json.loads(_needs(REFERENCE).read_text())
    arm = osim.load(_needs(MODELS / "arm26.osim"))
    muscles = osim.build_muscles(arm, tendon="explicit_force")
    assert isinstance(muscles.curves, ThelenCurves) and muscles.names == arm.muscle_names
    n = muscles.n_muscles
    states = [s["state"] for s in reference["samples"]]
    q = jnp.asarray([[s["r_shoulder_elev"], s["r_elbow_flex"]] for s in states])
    lengths = jax.vmap(lambda x: myotwin.muscle_lengths(arm.model, x))(q)

    @jax.jit
    def solve(l_mt):
        a = jnp.full(n, 0.5)
        eq = equilibrium(muscles, a, l_mt, jnp.zeros(n))
        out = muscle_outputs(muscles, a, l_mt, jnp.zeros(n), eq.tendon_state)
        return out.fiber_length_m, out.tendon_force_N, eq.converged

    f_iso = np.asarray(muscles.max_isometric_force_N)
    compared, worst = 0, [0.0, 0.0]
    for sample, state, l_mt in zip(reference["samples"], states, lengths):
        fiber, force, converged = (np.asarray(x) for x in solve(l_mt))
        assert converged.all()
        pose = (state["r_shoulder_elev"], state["r_elbow_flex"])
        for k, name in enumerate(arm.muscle_names):
            ref = sample["outputs"][name]["equilibrium_a0.5"]
            err_l = abs(fiber[k] - ref["fiber_length"])
            err_f = abs(force[k] - ref["tendon_force"]) / f_iso[k]
            assert err_l <= 1e-9, f"{name} at {pose}: fiber length off by {err_l:.2e} m"
            assert err_f <= 1e-7, f"{name} at {pose}: tendon force off by {err_f:.2e} F_iso"
            worst = [max(worst[0], err_l), max(worst[1], err_f)]
            compared += 1
    assert compared == 66
    print(f"worst: fiber length {worst[0]:.1e} m, tendon force {worst[1]:.1e} F_iso")


def test_hand_written_arm26_muscles_equal_the_files():
    """`models.arm26.muscles()` (parameters transcribed by hand into `arm26.MUSCLES`) equals
    `osim.build_muscles` of arm26.osim, which the test above checks against OpenSim: every leaf
    of the two `Muscle` pytrees bitwise, the same names and tendon model."""
    from myotwin.models import arm26

    arm = osim.load(_needs(MODELS / "arm26.osim"))
    for tendon in ("explicit_force", "rigid"):
        ours, theirs = arm26.muscles(tendon), osim.build_muscles(arm, tendon=tendon)
        assert ours.names == theirs.names and ours.tendon == theirs.tendon
        leaves = zip(jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs),
                     strict=True)
        for a, b in leaves:
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_millard_and_thelen_files_build_their_own_families():
    tug = osim.load(_needs(MODELS / "Tug_of_War_Millard.osim"))
    muscles = osim.build_muscles(tug, tendon="damped_fiber_length")
    assert isinstance(muscles.curves, MillardCurves)
    np.testing.assert_array_equal(np.asarray(muscles.max_isometric_force_N),
                                  [tug.muscles[m]["max_isometric_force_N"]
                                   for m in tug.muscle_names])
    thelen = osim.build_muscles(osim.load(_needs(MODELS / "Tug_of_War.osim")), tendon="rigid")
    assert isinstance(thelen.curves, ThelenCurves)
    assert not isinstance(thelen.curves, DeGrooteCurves)


def _flag(root, flag):
    set_muscle_property(root, "Thelen2003Muscle", flag, "true")


def test_what_a_muscle_group_cannot_hold_is_refused(tmp_path):
    source = _needs(MODELS / "Tug_of_War.osim").read_text()
    rigid = osim.load(write_osim(tmp_path, source, lambda r: _flag(r, "ignore_tendon_compliance"),
                                 "rigid.osim"))
    with pytest.raises(ValueError, match="ignore_tendon_compliance is true.*tendon='rigid'"):
        osim.build_muscles(rigid, tendon="explicit_force")
    assert osim.build_muscles(rigid, tendon="rigid").n_muscles == 2
    no_act = osim.load(write_osim(tmp_path, source,
                                  lambda r: _flag(r, "ignore_activation_dynamics"), "act.osim"))
    with pytest.raises(ValueError, match="muscle 'muscle1': ignore_activation_dynamics"):
        osim.build_muscles(no_act, tendon="rigid")
    off = osim.load(write_osim(tmp_path, source, lambda r: [
        m.find("appliesForce").__setattr__("text", "false") for m in r.iter("Thelen2003Muscle")],
        "off.osim"))
    with pytest.raises(ValueError, match="muscle 'muscle1': appliesForce is false"):
        osim.build_muscles(off, tendon="rigid")
    with pytest.raises(ValueError, match=r"no muscles named \['nope'\]"):
        osim.build_muscles(rigid, tendon="rigid", names=["nope"])


def test_build_muscles_takes_a_loaded_model_and_a_collection_of_names(tmp_path):
    """(names='muscle1' was read letter by letter: 'no muscles named ['m', 'u', ...]'; a path
    for the model was an AttributeError.)"""
    path = _needs(MODELS / "Tug_of_War.osim")
    loaded = osim.load(path)
    with pytest.raises(TypeError, match=r"names must be a collection of muscle names, e\.g\. "
                                        r"names=\('muscle1',\), got 'muscle1'"):
        osim.build_muscles(loaded, tendon="rigid", names="muscle1")
    with pytest.raises(TypeError, match="loaded must be an OsimModel .*, got PosixPath"):
        osim.build_muscles(path, tendon="rigid")
    assert osim.build_muscles(loaded, tendon="rigid", names=("muscle1",)).n_muscles == 1


def test_a_millard_muscle_opensim_runs_undamped_is_refused(tmp_path):
    """OpenSim switches a compliant Millard2012EquilibriumMuscle with fiber_damping < 1e-3
    (MIN_NONZERO_DAMPING_COEFFICIENT) to its undamped classic Hill model; ours would run the
    damped one: refused, naming the value. At 1e-3 OpenSim's damped model is ours."""
    source = _needs(MODELS / "Tug_of_War_Millard.osim").read_text()

    def damping(value):
        return lambda root: set_muscle_property(root, "Millard2012EquilibriumMuscle",
                                                "fiber_damping", value)

    low = osim.load(write_osim(tmp_path, source, damping("0.0005"), "low.osim"))
    with pytest.raises(ValueError, match=r"fiber_damping \{'RightMuscle': 0.0005.*below 1e-3"):
        osim.build_muscles(low, tendon="opensim")
    edge = osim.load(write_osim(tmp_path, source, damping("0.001"), "edge.osim"))
    assert osim.build_muscles(edge, tendon="opensim").tendon.value == "damped_fiber_length"


def test_the_defaults_of_left_out_properties_are_opensims():
    """`force_reading.TYPE_DEFAULTS` against the properties of OpenSim 4.6's default-
    constructed muscles (exact: the same decimal literals), so a muscle that leaves a property
    out gets what OpenSim gives it and a group whose muscles give different properties
    builds."""
    opensim = opensim_package()
    for tag, defaults in TYPE_DEFAULTS.items():
        muscle = getattr(opensim, tag)()
        theirs = {p: float(muscle.getPropertyByName(p).toString()) for p in defaults}
        assert theirs == defaults, tag
