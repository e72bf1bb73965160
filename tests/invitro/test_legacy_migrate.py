"""Migration of the authors' MuJoCo 1.40 MJCF to MuJoCo 4 (notes/invitro-vr.md §6)."""


import mujoco
import numpy as np
import pytest

from myotwin.invitro.frog import migrate_legacy_mjcf
from shared_reference import SHARED

REFERENCE = SHARED / "reference" / "invitro-vr"
MODEL = REFERENCE / "5SegRM.xml"
needs_reference = pytest.mark.skipif(not MODEL.is_file(),
                                     reason=f"authors' reference files not found in {REFERENCE}")


@needs_reference
def test_original_is_rejected_by_mujoco_4():
    with pytest.raises(ValueError, match="collision"):
        mujoco.MjModel.from_xml_string(MODEL.read_text())


@needs_reference
def test_migrated_model_loads_with_the_documented_changes():
    before = MODEL.read_bytes()
    xml, changes = migrate_legacy_mjcf(MODEL.read_text(), str(MODEL))
    assert MODEL.read_bytes() == before                    # never touches the file
    model = mujoco.MjModel.from_xml_string(xml)
    # notes §6: nq 11, nv 10, nu 3, nbody 8, ngeom 13, 1 tendon, 5 pairs
    assert (model.nq, model.nv, model.nu, model.nbody, model.ngeom, model.ntendon, model.npair) == \
        (11, 10, 3, 8, 13, 1, 5)
    text = "\n".join(changes)
    for fragment in ("collision", "contype", "coordinate", "t_ank_side", "t_tmt_side"):
        assert fragment in text
    assert np.all(model.geom_contype == 0) and np.all(model.geom_conaffinity == 0)


@needs_reference
def test_side_sites_move_off_the_sphere_surface():
    xml, _ = migrate_legacy_mjcf(MODEL.read_text(), str(MODEL))
    model = mujoco.MjModel.from_xml_string(xml)
    for site, sphere in (("t_ank_side", "jointSphere_ank"), ("t_tmt_side", "jointSphere_tmt")):
        d = np.linalg.norm(model.site(site).pos - model.geom(sphere).pos)
        assert d == pytest.approx(1.01 * model.geom(sphere).size[0], rel=1e-6)


@needs_reference
def test_tendon_length_no_longer_flips_between_steps():
    # notes §6: with on-surface side-sites the length alternates 68.16 / 60.30 / 49.07 mm between
    # steps in the crouch. After migration it changes smoothly: < 0.1 mm per step over 50 steps
    # of the crouch sinking under gravity (measured 0.06 mm; unmigrated side-sites: 19 mm).
    xml, _ = migrate_legacy_mjcf(MODEL.read_text(), str(MODEL))
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    qpos_init = np.loadtxt(REFERENCE / "qposInit.dat")
    model.qpos0[:] = qpos_init          # the authors' crouch (rsim's qpos0 overwrite)
    data.qpos[:7] = qpos_init[:7]
    lengths = []
    for _ in range(50):
        mujoco.mj_step(model, data)
        lengths.append(data.ten_length[0])
    assert lengths[0] == pytest.approx(0.06816, abs=1e-5)
    assert np.abs(np.diff(lengths)).max() < 1e-4


TOY = """<mujoco>
  <compiler coordinate="{coord}" angle="radian"/>
  <option timestep="0.001" collision="{mode}"/>
  <worldbody>
    <geom name="floor" type="plane" size="1 1 .1"/>
    <body name="b" pos="0 0 .1">
      <freejoint/>
      <geom name="s" type="sphere" size="0.01" mass="0.01"/>
      <geom name="c" type="capsule" fromto="0 0 0 .05 0 0" size="0.005" contype="1" mass="0.01"/>
      <site name="side" pos="-0.01 0 0"/>
      <site name="inside" pos="-0.005 0 0"/>
      <site name="a" pos="0 0 0.03"/>
      <site name="b" pos="0.02 0 -0.03"/>
    </body>
  </worldbody>
  <contact><pair geom1="floor" geom2="s"/></contact>
  <tendon>
    <spatial name="t1"><site site="a"/><geom geom="s" sidesite="side"/><site site="b"/></spatial>
    <spatial name="t2"><site site="a"/><geom geom="s" sidesite="inside"/><site site="b"/></spatial>
  </tendon>
</mujoco>"""


def test_predefined_turns_off_every_dynamic_collision():
    xml, changes = migrate_legacy_mjcf(TOY.format(coord="local", mode="predefined"), "toy.xml")
    model = mujoco.MjModel.from_xml_string(xml)
    assert np.all(model.geom_contype == 0) and model.npair == 1
    assert any("geom c" in c for c in changes)           # explicit contype overridden too
    # on-surface side-site moved; the deliberately inside one is left alone
    assert np.linalg.norm(model.site("side").pos) == pytest.approx(0.0101)
    assert np.linalg.norm(model.site("inside").pos) == pytest.approx(0.005)


def test_dynamic_mode_drops_the_pairs():
    xml, changes = migrate_legacy_mjcf(TOY.format(coord="local", mode="dynamic"), "toy.xml")
    assert mujoco.MjModel.from_xml_string(xml).npair == 0
    assert any("removed pair" in c for c in changes)


def test_global_coordinates_and_bad_xml_are_reported_with_the_source():
    with pytest.raises(ValueError, match="toy.xml.*coordinate"):
        migrate_legacy_mjcf(TOY.format(coord="global", mode="all"), "toy.xml")
    with pytest.raises(ValueError, match="broken.xml"):
        migrate_legacy_mjcf("<mujoco><worldbody>", "broken.xml")
    with pytest.raises(ValueError, match="toy.xml.*collision"):
        migrate_legacy_mjcf(TOY.format(coord="local", mode="sometimes"), "toy.xml")


def test_modern_file_passes_unchanged_in_meaning():
    modern = "<mujoco><worldbody><body><freejoint/><geom size='.1'/></body></worldbody></mujoco>"
    xml, changes = migrate_legacy_mjcf(modern, "modern.xml")
    assert changes == []
    assert mujoco.MjModel.from_xml_string(xml).nq == 7
