"""The HTML reports of vjtrain and vjeval: self-contained pages, features drawn from their
families' geometry, bounded report samples, and pages that load and draw in a real browser.

The browser tests drive Debian's Chromium headless through its ChromeDriver (selenium); they are
skipped, with the reason, where either is not installed (``apt-get install chromium
chromium-driver``).
"""

from __future__ import annotations

import doctest
import importlib
import json
import os
import re
import shutil
import tempfile
from html.parser import HTMLParser
from pathlib import Path

import cv2
import numpy as np
import pytest
from click.testing import CliRunner

from vjboost._html import Page
from vjboost.cascade.report import TrainingSamples, _weight_map, draw_feature
from vjboost.eval.report import COLOURS, draw_detections
from vjboost.eval.run import sample_images
from vjboost.features.haar import HaarFamily
from vjboost.features.mblbp import MBLBPFamily

WIN = 16

# ------------------------------------------------------------------------------------------------
# Pages without a browser
# ------------------------------------------------------------------------------------------------


class _Refs(HTMLParser):
    """Every tag, and every address a tag or the style sheet points to."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.refs: list[str] = []
        self.style = ""
        self._in_style = False

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self._in_style = tag == "style"
        for k, v in attrs:
            if k in ("src", "href", "srcset", "poster", "data", "action") and v is not None:
                self.refs.append(v)

    def handle_endtag(self, tag):
        self._in_style = False

    def handle_data(self, data):
        if self._in_style:
            self.style += data


def assert_self_contained(text: str) -> _Refs:
    p = _Refs()
    p.feed(text)
    assert "script" not in p.tags and "iframe" not in p.tags
    for ref in p.refs:
        assert ref.startswith(("data:", "#")), f"the page fetches {ref[:60]!r}"
    assert "url(" not in p.style and "@import" not in p.style
    return p


def test_page_is_self_contained_and_escapes_text():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    page = Page("a <b>report</b>", subtitle="x & y")
    s = page.section("Numbers", intro="<script>alert(1)</script>")
    s.table(["k", "value", "note"], [[0, 0.5, None], [12345, 1e-7, "<i>"]])
    fig, ax = plt.subplots(figsize=(2, 1))
    ax.plot([0, 1], [1, 0])
    s.figure(fig, "a line")
    plt.close(fig)
    page.section("Numbers").gallery([np.zeros((4, 6), np.uint8)], ["black"], scale=2)
    text = page.render()
    refs = assert_self_contained(text)
    assert "&lt;script&gt;" in text and "<script>" not in text
    assert "12\u2009345" in text and "1e-07" in text and "–" in text
    # two sections of the same title get two anchors; the navigation links both
    assert 'href="#numbers"' in text and 'href="#numbers-2"' in text
    assert refs.tags.count("img") == 2
    assert 'width="12" height="8"' in text  # the gallery tile, enlarged twice
    with pytest.raises(ValueError, match="3 columns"):
        s.table(["a", "b", "c"], [[1, 2]])


@pytest.mark.parametrize("module", ["vjboost._html", "vjboost.eval.run", "vjboost.eval.report",
                                    "vjboost.cascade.report"])
def test_docstring_examples(module):
    res = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert res.attempted > 0 and res.failed == 0


# ------------------------------------------------------------------------------------------------
# Features drawn from describe()
# ------------------------------------------------------------------------------------------------


def test_haar_weight_map_gives_the_feature_value(rng):
    """The drawing's weight map, summed against a window, is the feature (upright and tilted,
    OpenCV's geometry): what is drawn white adds, what is drawn black subtracts."""
    fam = HaarFamily((12, 11), mode="ALL", normalize=False)
    windows = rng.integers(0, 256, (4, 12, 11), dtype=np.uint8)
    ids = np.sort(rng.choice(fam.n_features, 600, replace=False))
    values = fam.compute(windows)[ids]
    n_tilted = 0
    for row, i in zip(values, ids, strict=True):
        d = fam.describe(int(i))
        n_tilted += d["tilted"]
        m = _weight_map(d["rects"], d["tilted"], fam.window_shape)
        np.testing.assert_allclose((m[None] * windows).sum(axis=(1, 2)), row, atol=1e-3)
    assert n_tilted > 50


def test_mblbp_cells_give_the_code(rng):
    """describe()'s 9 cells, summed and compared with the centre (OpenCV's bit order), give the
    family's code."""
    fam = MBLBPFamily((12, 10))
    windows = rng.integers(0, 256, (5, 12, 10), dtype=np.uint8)
    values = fam.compute(windows)
    bits = [128, 64, 32, 1, 0, 16, 2, 4, 8]  # clockwise from the top-left; the centre has none
    for i in rng.choice(fam.n_features, 200, replace=False):
        d = fam.describe(int(i))
        assert len(d["cells"]) == 9 and d["centre"] == 4
        sums = np.array([[w[y:y + h, x:x + cw].astype(np.int64).sum()
                          for x, y, cw, h in d["cells"]] for w in windows])
        code = ((sums >= sums[:, 4:5]) * bits).sum(axis=1)
        np.testing.assert_array_equal(code, values[int(i)])


def test_draw_feature_uses_each_geometry():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from vjboost.features.fourier import FourierFamily, HaarWaveletFamily
    from vjboost.features.hog import HOGFamily
    from vjboost.features.pixel import PixelFamily

    haar = HaarFamily((12, 12), mode="ALL")
    tilted = next(i for i in range(haar.n_features) if haar.describe(i)["tilted"])
    cases = [
        (haar.describe(tilted), "image"),
        (MBLBPFamily((12, 12)).describe(3), "patch"),
        (HOGFamily((16, 16), pixels_per_cell=(7, 7)).describe(5), "patch"),
        (PixelFamily((8, 8)).describe(9), "patch"),
        (HaarWaveletFamily((16, 16)).describe(7), "image"),
        (FourierFamily((12, 12)).describe(2), "text"),
    ]
    assert cases[0][0]["tilted"]
    for d, what in cases:
        fig, ax = plt.subplots()
        draw_feature(ax, d)
        got = {"image": len(ax.images), "patch": len(ax.patches), "text": len(ax.texts)}
        assert got[what] > 0, (d["family"], got)
        if what != "text":
            assert not ax.texts
        plt.close(fig)


# ------------------------------------------------------------------------------------------------
# Report samples and detections
# ------------------------------------------------------------------------------------------------


def test_training_samples_keep_hardest_negatives_and_rejected_positives(rng):
    s = TrainingSamples(8)
    for stage in range(3):
        pos = rng.integers(0, 256, (40, 5, 4), dtype=np.uint8)
        neg = rng.integers(0, 256, (60, 5, 4), dtype=np.uint8)
        scores = rng.normal(size=100)
        thr = 0.25 * stage - 0.5
        s.add_stage(stage, pos, neg, scores, thr)
        # the hardest negatives are the last stage's 8 highest sums, highest first
        top = np.argsort(-scores[40:])[:8]
        np.testing.assert_array_equal(s.negatives, neg[top])
        np.testing.assert_allclose(s.negative_scores, scores[40:][top])
        assert s.negative_stage == stage
    wins, caps = s.hardest_negatives()
    assert len(wins) == 8 and float(caps[0]) > float(caps[-1])
    # rejected positives: at most size // 4 per stage, all below their stage's threshold
    st, sc = s.positive_stages, s.positive_scores
    assert len(st) == 6 and all(np.count_nonzero(st == k) == 2 for k in range(3))
    assert np.all(sc < np.array([0.25 * k - 0.5 for k in st]))
    wins, caps = s.rejected_positives(4)
    assert wins.shape == (4, 5, 4)
    # spread over the stages: one of every stage before the second of any
    assert [c.split(",")[0] for c in caps[:3]] == ["stage 0", "stage 1", "stage 2"]
    assert all(float(c.split(", ")[1]) < 0 for c in caps)
    # nothing is kept without sums; a wrong length is refused
    s.add_stage(3, pos, neg, None, 0.0)
    assert s.negative_stage == 2
    with pytest.raises(ValueError, match="100 stage sums"):
        s.add_stage(3, pos, neg, np.zeros(99), 0.0)


def test_draw_detections_colours_each_kind():
    gray = np.full((100, 120), 90, np.uint8)
    img = draw_detections(gray, [[10, 10, 20, 20], [60, 10, 20, 20], [10, 60, 20, 20]],
                          [0, -1, -2], [[10, 10, 20, 20], [60, 60, 30, 30]],
                          [[5, 55, 40, 40]], max_side=200)
    assert img.shape == (100, 120, 3)
    assert tuple(img[10, 15]) == COLOURS["true positive"]
    assert tuple(img[10, 65]) == COLOURS["false positive"]
    assert tuple(img[60, 15]) == COLOURS["ignored"]
    assert tuple(img[60, 75]) == COLOURS["missed"]
    assert tuple(img[40, 40]) == (90, 90, 90)


def test_sample_images_prefer_annotated_ones_spread_over_the_set():
    ann = {f"{k}.png": np.zeros((int(k % 3 == 0), 4)) for k in range(10)}
    names = list(ann)
    got = sample_images(ann, names, 3)
    assert got == ["0.png", "6.png", "9.png"]
    assert sample_images(ann, names, 5) == ["0.png", "3.png", "6.png", "9.png", "1.png"]
    assert sample_images(ann, names, 0) == []


# ------------------------------------------------------------------------------------------------
# vjtrain and vjeval write the pages
# ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def data_dir(small_face_set) -> Path:
    """The small face set, and an evaluation set: faces pasted into other images at known
    boxes."""
    import skimage.data as d

    root = small_face_set
    lfw = (d.lfw_subset()[:100] * 255).round().astype(np.uint8)
    (root / "ev").mkdir(exist_ok=True)
    lines = []
    for k, name in enumerate(("camera", "rocket", "gravel")):
        im = getattr(d, name)()
        if im.ndim == 3:
            im = cv2.cvtColor(im, cv2.COLOR_RGB2GRAY)
        im = cv2.resize(im, (240, 180), interpolation=cv2.INTER_AREA)
        boxes = [(20 + 60 * k, 30, 48, 48), (150, 100 - 20 * k, 40, 40)]
        for j, (x, y, w, h) in enumerate(boxes):
            im[y:y + h, x:x + w] = cv2.resize(lfw[10 * k + j], (w, h))
        cv2.imwrite(str(root / "ev" / f"{name}.png"), im)
        lines.append(f"ev/{name}.png 2 " + " ".join(" ".join(map(str, b)) for b in boxes))
    (root / "eval.dat").write_text("\n".join(lines) + "\n")
    return root


def _train(root: Path, out: Path, features: str, *extra: str):
    from vjboost.cli.train import vjtrain

    args = [str(root / "pos.npz"), str(root / "bg"), "-o", str(out), "--window",
            f"{WIN}x{WIN}", "--stages", "5", "--num-pos", "70", "--num-neg", "120",
            "--min-hit-rate", "0.9", "--seed", "3", "--threads", "1", "-q",
            "--features", features, *extra]
    return CliRunner().invoke(vjtrain, args)


def test_vjtrain_checks_eval_arguments_before_training(data_dir, tmp_path):
    res = _train(data_dir, tmp_path / "a", "haar", "--eval", str(data_dir / "missing.dat"))
    assert res.exit_code == 2 and "--eval" in res.output and "missing.dat" in res.output
    res = _train(data_dir, tmp_path / "b", "haar", "--eval-images", str(data_dir / "ev"))
    assert res.exit_code == 2 and "--eval-images" in res.output
    assert not (tmp_path / "a" / "checkpoint.json").exists()


@pytest.fixture(scope="module")
def trained(data_dir, tmp_path_factory):
    """vjtrain --eval runs (one per feature set), trained once for the module."""
    runs = {}

    def get(features: str) -> Path:
        if features not in runs:
            out = tmp_path_factory.mktemp("train") / features.replace(",", "_")
            res = _train(data_dir, out, features, "--eval", str(data_dir / "eval.dat"))
            assert res.exit_code == 0, res.output
            runs[features] = out
        return runs[features]

    return get


@pytest.mark.slow
@pytest.mark.parametrize("features", ["haar", "lbp", "haar,mblbp"])
def test_vjtrain_writes_the_report_page(trained, features):
    out = trained(features)
    report = json.loads((out / "report.json").read_text())
    text = (out / "report.html").read_text()
    refs = assert_self_contained(text)
    rows = report["stages"]
    assert rows and all(r["first_features"] for r in rows)
    fams = features.replace("lbp", "mblbp").replace("mbmblbp", "mblbp").split(",")
    assert report["families"] == fams
    assert all(sum(r["families"].values()) >= r["n_weak"] for r in rows)
    assert all(r["first_features"][0]["family"] in fams for r in rows)
    for png in ("stages", "acceptance", "loss", "features", "families", "time"):
        assert (out / f"{png}.png").stat().st_size > 1000
    ev = report["evaluation"]
    assert ev["n_images"] == 3 and ev["n_objects"] == 6
    assert ev["models"][0]["at_min_neighbors"]["min_neighbors"] == 3
    for title in ("Stages", "Training curves", "Features", "Hard examples", "Time and memory",
                  "Evaluation", "Detections: trained cascade"):
        assert f">{title}</h2>" in text
    assert "Hardest negatives of stage" in text
    # images: 6 plots + the curve, 32 hardest negatives, rejected positives, 3 detections
    n_pos = len(re.findall(r"<figcaption>stage \d+, -", text))
    assert n_pos > 0
    assert refs.tags.count("img") == 6 + 1 + 32 + n_pos + 3


def test_vjeval_writes_the_report_page(data_dir, tmp_path):
    from vjboost.cli.evaluate import main as vjeval

    out = tmp_path / "ev"
    res = CliRunner().invoke(vjeval, [str(data_dir / "eval.dat"), "-m", "vjboost:frontalface",
                                      "-m", "opencv:haarcascade_frontalface_default",
                                      "--label", "ours", "--label", "opencv", "-o", str(out),
                                      "--report-samples", "2", "--no-progress"])
    assert res.exit_code == 0, res.output
    text = (out / "report.html").read_text()
    refs = assert_self_contained(text)
    summary = json.loads((out / "eval.json").read_text())
    assert [m["label"] for m in summary["models"]] == ["ours", "opencv"]
    assert ">Detections: ours</h2>" in text and ">Detections: opencv</h2>" in text
    assert refs.tags.count("img") == 1 + 2 * 2
    res = CliRunner().invoke(vjeval, [str(data_dir / "eval.dat"), "-m", "vjboost:frontalface",
                                      "-o", str(tmp_path / "plain"), "--no-report",
                                      "--no-progress"])
    assert res.exit_code == 0 and not (tmp_path / "plain" / "report.html").exists()


# ------------------------------------------------------------------------------------------------
# In a real browser
# ------------------------------------------------------------------------------------------------

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium under ChromeDriver, offline and quiet."""
    if CHROMIUM is None or CHROMEDRIVER is None:
        pytest.skip("no Chromium/ChromeDriver installed (Debian: apt-get install chromium "
                    "chromium-driver)")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.skip("selenium is not installed (pip install -e .[dev])")
    os.environ.setdefault("SE_OFFLINE", "true")  # never let selenium look for drivers online
    profile = tempfile.mkdtemp(prefix="vjboost-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
              "--disable-background-networking", "--disable-component-update",
              "--disable-sync", "--hide-scrollbars", f"--user-data-dir={profile}",
              "--window-size=1280,900"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def check_in_browser(driver, page: Path, shot: Path) -> dict:
    """Load the page from its file URL; assert no console message, every image decoded, the
    header sticky, and the screenshot drawn where the plots are. Returns what was measured."""
    driver.get(page.resolve().as_uri())
    logs = [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
    assert not logs, logs
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1280, min(height + 120, 12000))
    images = driver.execute_script(
        "return Array.from(document.images).map(i => {const r = i.getBoundingClientRect();"
        "return {w: i.naturalWidth, h: i.naturalHeight, ok: i.complete, x: r.left + scrollX,"
        " y: r.top + scrollY, cw: r.width, ch: r.height}})")
    assert images and all(i["ok"] and i["w"] > 0 and i["h"] > 0 for i in images)
    sticky = driver.execute_script(
        "const th = document.querySelector('thead th'); return th && getComputedStyle(th).position")
    assert sticky == "sticky"
    assert driver.save_screenshot(str(shot))
    rgb = cv2.imread(str(shot))[:, :, ::-1]
    plots = [i for i in images if i["w"] >= 200]
    assert plots
    for i in plots:
        x, y, w, h = (int(round(i[k])) for k in ("x", "y", "cw", "ch"))
        if y + h > rgb.shape[0]:
            continue  # below a capped screenshot
        crop = rgb[y + 2:y + h - 2, x + 2:x + w - 2].astype(np.int64)
        assert crop.size and crop.std() > 8, f"blank plot at {x},{y}"
        # drawn: some of the crop is dark (axes, text, lines), not only the page background
        assert np.mean(crop.sum(axis=2) < 300) > 0.003, f"nothing drawn at {x},{y}"
    return {"images": images, "height": height}


@pytest.mark.slow
@pytest.mark.parametrize("features", ["haar", "lbp", "haar,mblbp"])
def test_training_report_in_browser(trained, browser, features, tmp_path):
    out = trained(features)
    shot = tmp_path / f"report_{features.replace(',', '_')}.png"
    seen = check_in_browser(browser, out / "report.html", shot)
    # the gallery tiles are the training windows, shown at three times their size
    tiles = [i for i in seen["images"] if (i["w"], i["h"]) == (WIN, WIN)]
    assert len(tiles) >= 32 and all(i["cw"] == 3 * WIN for i in tiles)


def test_evaluation_report_in_browser(data_dir, browser, tmp_path):
    from vjboost.cli.evaluate import main as vjeval

    out = tmp_path / "ev"
    res = CliRunner().invoke(vjeval, [str(data_dir / "eval.dat"), "-m", "vjboost:frontalface",
                                      "-o", str(out), "--no-progress"])
    assert res.exit_code == 0, res.output
    seen = check_in_browser(browser, out / "report.html", tmp_path / "eval.png")
    # the curve and the three images of the set, drawn at their size (at most 420 pixels)
    assert sorted((i["w"], i["h"]) for i in seen["images"]) == [(240, 180)] * 3 + [(640, 420)]
