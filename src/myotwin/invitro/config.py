"""Experiment configuration: one TOML file with units in every field name.

Sections: [link], [calibration], [safety], [trial]. Every field is optional; missing fields
take the defaults of the dataclasses below (`myotwin invitro show-config` prints them all).
Unknown sections or fields, wrong types and out-of-range values are rejected with the file,
the field and the value in the message.
"""

from __future__ import annotations

import dataclasses
import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from myotwin.scalars import is_finite_number, is_integer

from .calibration import Calibration, require_field
from .safety import SafetyConfig


#: The loop periods a link may run at (s): 10 Hz to 100 kHz.
PERIOD_RANGE_S = (1e-5, 0.1)


@dataclass(frozen=True)
class LinkConfig:
    protocol: str = "framed"
    """Wire protocol: 'framed' (ours: sync, sequence number, CRC) or 'legacy' (3-byte, 2017 rig)."""
    period_s: float = 0.001
    """Loop period; the device's clock. 1 kHz as in the seed."""
    port: str = ""
    """Serial port of a real rig (e.g. /dev/ttyACM0). Empty: start the emulated muscle on a pty."""
    baudrate: int = 115200
    busy_poll_s: float = 0.0
    """The host spins on the port for up to this long while waiting for a sample, instead of
    sleeping in select() (0: never; longer than the wait: spins for all of it). Off by default:
    on the 2-vCPU machine we measured, a spinning host delayed the kernel's pty transfers more
    than it saved (loop.md)."""
    realtime_priority: bool = True
    """Ask for SCHED_FIFO for the host and the emulated device while a trial runs (needs root
    or CAP_SYS_NICE; silently normal priority otherwise)."""
    device_spin_s: float = 200e-6
    """The emulated device sleeps until this long before each tick, then busy-waits (`emulate
    --spin-s`; a period or longer: it busy-waits through every tick, which is allowed)."""
    pin_cpus: bool = True
    """Pin the host and the emulated device to two different CPUs while a trial runs."""
    source: str = "<defaults>"

    def __post_init__(self) -> None:
        s = self.source
        require_field(self.protocol in ("framed", "legacy"), "protocol", self.protocol,
                      "'framed' or 'legacy'", s, "link")
        lo, hi = PERIOD_RANGE_S
        require_field(is_finite_number(self.period_s) and lo <= self.period_s <= hi, "period_s",
                      self.period_s, f"a period between {lo:g} and {hi:g} s", s, "link")
        require_field(isinstance(self.port, str), "port", self.port, "a str", s, "link")
        require_field(is_integer(self.baudrate) and self.baudrate > 0, "baudrate", self.baudrate,
                      "an integer > 0", s, "link")
        for name in ("busy_poll_s", "device_spin_s"):
            v = getattr(self, name)
            require_field(is_finite_number(v) and v >= 0, name, v, "a finite time >= 0 s", s,
                          "link")
        for name in ("realtime_priority", "pin_cpus"):      # "no" would be true
            v = getattr(self, name)
            require_field(isinstance(v, bool), name, v, "true or false (a bool)", s, "link")


@dataclass(frozen=True)
class TrialConfig:
    duration_s: float = 0.35
    """Closed-loop duration of each trial (covers stance, takeoff and the apex of the jump). The
    trial runs round(duration_s / link.period_s) ticks, the nearest whole number of periods;
    at least one period (checked by ExperimentConfig, which knows the period)."""
    seed: int = 0
    """Seed of the emulated sensor noise."""
    source: str = "<defaults>"

    def __post_init__(self) -> None:
        s, d = self.source, self.duration_s
        require_field(is_finite_number(d) and 0 < d <= 60, "duration_s", d,
                      "0 < duration <= 60 s", s, "trial")
        require_field(is_integer(self.seed) and self.seed >= 0, "seed", self.seed,
                      "an integer >= 0 (numpy.random.default_rng)", s, "trial")


@dataclass(frozen=True)
class ExperimentConfig:
    link: LinkConfig = field(default_factory=LinkConfig)
    calibration: Calibration = field(default_factory=Calibration)
    safety: SafetyConfig = field(default_factory=SafetyConfig)
    trial: TrialConfig = field(default_factory=TrialConfig)

    def __post_init__(self) -> None:
        """The checks across sections: the trial against the loop period (the watchdog's is
        `check_closed_loop`, since a loopback check runs without a watchdog)."""
        for name, cls in _SECTIONS.items():
            v = getattr(self, name)
            if not isinstance(v, cls):
                raise ValueError(f"ExperimentConfig: field '{name}' = {v!r}: expected "
                                 f"{cls.__name__}")
        period = self.link.period_s
        duration = self.trial.duration_s
        if not duration >= period:
            raise ValueError(f"{self.trial.source}: field 'trial.duration_s' = {duration!r}: "
                             f"expected at least one loop period link.period_s = {period!r} "
                             "(the trial runs round(duration_s / period_s) ticks)")

    def check_closed_loop(self) -> None:
        """ValueError unless the host's watchdog is longer than the loop period: a sample on
        time comes a period after the last one, so a shorter watchdog would trip every tick.
        Checked before a closed-loop trial (`experiment.run_condition`); the loopback check
        has no watchdog and runs at any rate in PERIOD_RANGE_S."""
        period, watchdog = self.link.period_s, self.safety.watchdog_s
        if not watchdog > period:
            raise ValueError(f"{self.safety.source}: field 'safety.watchdog_s' = {watchdog!r}: "
                             f"expected longer than the loop period link.period_s = {period!r} "
                             "(a sample on time comes a period after the last one: the "
                             "watchdog would trip every tick)")

    def to_dict(self) -> dict:
        out = {}
        for name in ("link", "calibration", "safety", "trial"):
            d = dataclasses.asdict(getattr(self, name))
            d.pop("source", None)
            out[name] = d
        return out


_SECTIONS = {"link": LinkConfig, "calibration": Calibration, "safety": SafetyConfig,
             "trial": TrialConfig}


def _section(cls, values: dict, section: str, source: str):
    known = {f.name: f for f in dataclasses.fields(cls) if f.name != "source"}
    kwargs = {}
    for key, value in values.items():
        if key not in known:
            raise ValueError(f"{source}: unknown field '{section}.{key}' "
                             f"(known: {', '.join(sorted(known))})")
        default = getattr(cls(), key)
        if isinstance(default, bool) or isinstance(value, bool):
            ok = isinstance(value, bool) and isinstance(default, bool)
        elif isinstance(default, float):
            ok = isinstance(value, (int, float))
            value = float(value) if ok else value
        else:
            ok = isinstance(value, type(default))
        if not ok:
            raise ValueError(f"{source}: field '{section}.{key}' = {value!r}: expected "
                             f"{type(default).__name__}")
        kwargs[key] = value
    return cls(**kwargs, source=source)


def load_config(path: str | Path | None = None) -> ExperimentConfig:
    """Read an experiment config (TOML). None: all defaults."""
    if path is None:
        return ExperimentConfig()
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except UnicodeDecodeError as err:
        raise ValueError(f"{p}: not a text (UTF-8) TOML file: {err.reason} at byte "
                         f"{err.start}") from None
    except FileNotFoundError:
        raise ValueError(f"config file not found: {p}") from None
    except OSError as e:
        raise ValueError(f"{p}: cannot read config file: {e.strerror or e}") from None
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"{p}: not valid TOML: {e}") from None
    for name, values in data.items():
        if name not in _SECTIONS and not isinstance(values, dict):
            raise ValueError(f"{p}: '{name}' = {values!r} at the top level: every setting "
                             f"belongs to a section ({', '.join(f'[{s}]' for s in _SECTIONS)})")
        if name not in _SECTIONS:
            raise ValueError(f"{p}: unknown section [{name}] (known: {', '.join(_SECTIONS)})")
        if not isinstance(values, dict):
            raise ValueError(f"{p}: '{name}' = {values!r}: expected a section [{name}]")
    parts = {name: _section(cls, data.get(name, {}), name, str(p))
             for name, cls in _SECTIONS.items()}
    return ExperimentConfig(**parts)


def config_to_toml(cfg: ExperimentConfig) -> str:
    """The config as TOML text (for `show-config` and for each trial's record)."""
    lines = []
    for section, values in cfg.to_dict().items():
        lines.append(f"[{section}]")
        for k, v in values.items():
            # JSON string escapes are valid TOML basic-string escapes (e.g. a port \\.\COM10)
            if isinstance(v, bool):
                lines.append(f"{k} = {'true' if v else 'false'}")
            else:
                lines.append(f"{k} = {json.dumps(v) if isinstance(v, str) else repr(v)}")
        lines.append("")
    return "\n".join(lines)
