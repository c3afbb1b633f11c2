"""A setting's range is declared once, on its dataclass field (finite.bounds), and read by
both the command line and the dataclass's own check."""

import argparse
from dataclasses import dataclass, field

import pytest

from sigmoid_head.cli.options import add_dataclass_options
from sigmoid_head.safe.finite import bounds, check_fields


def _layers(t):
    v = tuple(int(x) for x in t.split(","))
    if min(v) < 0:
        raise ValueError(f"{t!r}: layers are 0-based")
    return v

@dataclass
class C:
    n: int = field(default=2, metadata=bounds(low=1))
    """n."""
    t: float | None = field(default=None, metadata=bounds("temperature"))
    """t."""
    layers: tuple | None = field(default=None, metadata={"parse": _layers})
    """l."""

def test_cli_and_dataclass_read_one_range(capsys):
    p = argparse.ArgumentParser()
    add_dataclass_options(p, C)
    a = p.parse_args(["--n", "3", "--t", "none", "--layers", "1,2"])
    assert (a.n, a.t, a.layers) == (3, None, (1, 2))
    for bad in (["--n", "0"], ["--t", "nan"], ["--layers", "-1"]):
        with pytest.raises(SystemExit):
            p.parse_args(bad)
    err = capsys.readouterr().err
    assert "must be in [1, inf)" in err and "0-based" in err
    with pytest.raises(ValueError, match="n must be in"):
        check_fields(C(n=0))
    check_fields(C(n=5, t=2.0))
