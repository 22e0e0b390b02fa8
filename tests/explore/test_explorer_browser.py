"""The explorer in a real headless Chromium (Debian's `chromium`): the site of a Carol index
loads with no console error, its tree lists every level-0 community, clicking a community
shows its report and draws its graph (WebGL pixels on screen), search finds an entity, and
the facts page shows the plots. Screenshots go to $GRAPHRAG_TEST_ARTIFACTS (else the test's
temporary folder)."""

import os
import time
from pathlib import Path

import numpy as np
import pytest

from graphrag_ray import schema
from graphrag_ray.cli import main
from graphrag_ray.storage import IndexStore
from graphrag_testkit.browser import HeadlessBrowser, find_chromium

from conftest import carol_input

CHROMIUM = find_chromium()
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium on PATH (Debian: apt-get install chromium; "
                             ".ci/run installs it)")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    folder = tmp_path_factory.mktemp("explorer")
    assert main(["index", "--input", str(carol_input(folder / "input")),
                 "--output", str(folder / "index"),
                 "--set", "runtime.engine=local"]) == 0
    assert main(["explore", "--index", str(folder / "index"), "--out", str(folder / "site")]) == 0
    return folder


@pytest.fixture
def browser():
    with HeadlessBrowser(CHROMIUM) as opened:
        yield opened


def artifacts(tmp_path: Path) -> Path:
    return Path(os.environ.get("GRAPHRAG_TEST_ARTIFACTS", tmp_path))


def drawn_pixels(png: Path, box: list[float], ratio: float) -> int:
    """Pixels inside `box` (CSS px: left, top, width, height) that are not the background."""
    import matplotlib.image

    image = matplotlib.image.imread(png)[..., :3]
    left, top, width, height = (int(v * ratio) for v in box)
    region = image[top + 2:top + height - 2, left + 2:left + width - 2]
    return int((np.abs(region - 1.0).sum(axis=-1) > 0.15).sum())


@pytest.mark.slow  # starts Chromium
def test_the_explorer_works_in_a_real_browser(site, browser, tmp_path):
    version = IndexStore(str(site / "index")).open()
    communities = version.read_table(schema.COMMUNITIES).to_pylist()
    reports = {r["community"]: r for r in version.read_table(schema.COMMUNITY_REPORTS).to_pylist()}
    browser.open((site / "site" / "index.html").as_uri())
    browser.wait_for("document.body && document.body.dataset.ready")

    # The tree lists every level-0 community.
    listed = browser.evaluate("[...document.querySelectorAll('#tree > li')]"
                              ".map(li => Number(li.dataset.community))")
    assert sorted(listed) == sorted(c["community"] for c in communities if c["level"] == 0)

    # Clicking one shows its report and draws its graph.
    chosen = max((c for c in communities if c["level"] == 0), key=lambda c: c["size"])
    browser.click(f'#tree > li[data-community="{chosen["community"]}"] > a')
    title = browser.wait_for("document.querySelector('#report h2')?.textContent")
    assert title == reports[chosen["community"]]["title"]
    nodes = int(browser.wait_for("document.getElementById('graph').dataset.nodes"))
    assert nodes >= chosen["size"]  # its members, and neighbours outside it
    assert browser.evaluate("GR.renderer.getGraph().order") == nodes
    time.sleep(0.5)  # let WebGL present the frame
    box = browser.evaluate("(() => { const r = document.getElementById('graph')"
                           ".getBoundingClientRect();"
                           " return [r.left, r.top, r.width, r.height]; })()")
    shot = browser.screenshot(artifacts(tmp_path) / "explorer-carol-community.png")
    # Every node is a disc of a few pixels: a canvas that drew nothing has none.
    assert drawn_pixels(shot, box, browser.evaluate("window.devicePixelRatio")) > 10 * nodes

    # A sub-community opens from the tree too.
    if any(c["parent"] == chosen["community"] for c in communities):
        browser.click(f'#tree > li[data-community="{chosen["community"]}"] > .toggle')
        child = browser.wait_for(
            f'document.querySelector(\'li[data-community="{chosen["community"]}"] > ul > li\')'
            "?.dataset.community")
        browser.click(f'li[data-community="{child}"] > a')
        browser.wait_for(f"document.getElementById('report').dataset.community === '{child}'")

    # Search finds an entity and opens its community.
    browser.type_text("#search", "scrooge")
    browser.wait_for("document.querySelectorAll('#search-results li[data-community]').length")
    browser.click("#search-results li[data-community]")
    browser.wait_for("document.querySelector('#graph-caption').textContent.length > 0")

    # The facts page and its plots.
    browser.click("#nav-facts")
    browser.wait_for("!document.getElementById('facts-view').hidden")
    loaded = browser.wait_for("(() => { const imgs = [...document.querySelectorAll('.plots img')];"
                              " return imgs.length && imgs.every(i => i.complete && i.naturalWidth)"
                              " && imgs.length; })()")
    assert loaded >= 3
    # Which methods answer from this index, lazy search with its budget among them.
    assert browser.evaluate("[...document.querySelectorAll('#facts-view td')].some("
                            "td => td.textContent.includes('default budget 500 tests'))")
    browser.screenshot(artifacts(tmp_path) / "explorer-carol-facts.png")
    assert browser.errors == [] and browser.evaluate("GR.errors") == []
