"""tools/scan_time.py: the scan rule's timing (CMU-MIT for timing only, dlib in the same run)."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parents[1] / "tools"


@pytest.fixture
def st(monkeypatch):
    monkeypatch.syspath_prepend(str(TOOLS))
    return importlib.import_module("scan_time")


def test_scans_are_parsed_and_refused_in_one_line(st, capsys):
    assert st.parse_scans("off,5, 7", 17) == [None, 5, 7]
    for bad in ("0", "18", "x", "5,5", ""):
        with pytest.raises(ValueError, match="--k"):
            st.parse_scans(bad, 17)
    for argv, message in ((["--k", "99"], "--k"), (["--repeats", "0"], "--repeats"),
                          (["--threads", "0"], "--threads"),
                          (["--model", "vjboost:no_such_model"], "no_such_model")):
        assert st.main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("error: ") and message in err and "\n" not in err


@pytest.mark.slow
@pytest.mark.shared_data
def test_quick_run_times_every_scan_against_dlib(st, shared_dir, monkeypatch, capsys):
    pytest.importorskip("dlib")
    monkeypatch.setattr(st.bp, "SHARED", shared_dir)
    assert st.main(["--quick", "--k", "off,5,7"]) == 0
    res = json.loads(capsys.readouterr().out.strip().splitlines()[-1][len("RESULT "):])
    assert res["images"] == 20 and res["clock"] == "cpu" and res["threads"] == 1
    assert list(res["ms_per_mp"]) == ["off", "5", "7"]
    ref = res["dlib_ms_per_mp"]
    assert ref > 0
    for k, ms in res["ms_per_mp"].items():
        assert ms > 0 and res["time_over_dlib"][k] == pytest.approx(ms / ref, abs=1e-3)
    assert res["within_target"] == [k for k, r in res["time_over_dlib"].items()
                                    if r <= st.TARGET]
    want = ("off" if "off" in res["within_target"] else
            min((k for k in res["within_target"]), key=int, default=None))
    assert res["fewest_within_target"] == want
