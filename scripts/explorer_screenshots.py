"""Screenshots of the explorer on an index (for the docs), and how long its views take in
headless Chromium: the first page, opening the largest level-0 community, a search.

    python scripts/explorer_screenshots.py --index /tmp/pod/index --out docs/explorer --name podcast
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the test kit

from graphrag_ray import schema  # noqa: E402
from graphrag_ray.explore.site import build_site  # noqa: E402
from graphrag_ray.storage import IndexStore  # noqa: E402
from graphrag_testkit.browser import HeadlessBrowser, find_chromium  # noqa: E402


def densest(index: str) -> int:
    communities = IndexStore(index).open().read_table(
        schema.COMMUNITIES, ["community", "size", "relationship_ids"]).to_pylist()
    return max((c for c in communities if c["size"] <= 200),
               key=lambda c: len(c["relationship_ids"]))["community"]


def timed(browser: HeadlessBrowser, action, until: str) -> float:
    started = time.perf_counter()
    action()
    browser.wait_for(until, 120)
    return round(time.perf_counter() - started, 2)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--index", required=True)
    parser.add_argument("--out", required=True, help="folder for the PNGs")
    parser.add_argument("--name", default="index")
    parser.add_argument("--search", default="", help="a name to search for")
    parser.add_argument("--site", help="where to build the site (default: temp)")
    parser.add_argument("--community", type=int, help="the community to picture")
    args = parser.parse_args()
    site = Path(args.site or tempfile.mkdtemp(prefix="explorer-"))
    started = time.perf_counter()
    built = build_site(IndexStore(args.index).open(), site)
    figures = {"site_build_s": round(time.perf_counter() - started, 2), **built}
    out = Path(args.out)
    with HeadlessBrowser(find_chromium(), width=1500, height=1000) as browser:
        figures["first_page_s"] = timed(
            browser, lambda: browser.open((site / "index.html").as_uri()),
            "document.body && document.body.dataset.ready")
        largest = browser.evaluate(
            "[...document.querySelectorAll('#tree > li')].map(li => li.dataset.community)[0]")
        # A mid-sized community reads best in a picture; the largest is timed.
        figures["largest_community_s"] = timed(
            browser, lambda: browser.click(f'#tree > li[data-community="{largest}"] > a'),
            f"document.getElementById('report').dataset.community === '{largest}' && "
            "document.getElementById('graph').dataset.nodes")
        figures["largest_community_nodes"] = int(browser.evaluate(
            "document.getElementById('graph').dataset.nodes"))
        # The picture: the community with the most relationships among its 200 or fewer
        # members (a dense neighbourhood reads best), opened from the URL.
        shown = args.community if args.community is not None else densest(args.index)
        browser.evaluate(f"location.hash = 'c={shown}'")
        browser.wait_for(f"document.getElementById('report').dataset.community === '{shown}'")
        time.sleep(1.0)
        browser.screenshot(out / f"{args.name}-community.png")
        if args.search:
            figures["search_s"] = timed(
                browser, lambda: browser.type_text("#search", args.search),
                "document.querySelectorAll('#search-results li[data-community]').length")
            browser.screenshot(out / f"{args.name}-search.png")
            browser.click("#search-results li[data-community]")
            time.sleep(1.0)
        browser.click("#nav-facts")
        browser.wait_for("(() => { const i = [...document.querySelectorAll('.plots img')];"
                         " return i.length && i.every(x => x.complete); })()")
        browser.evaluate("window.scrollTo(0, 0); document.getElementById('facts-view')"
                         ".scrollTop = 10000")
        time.sleep(0.5)
        browser.screenshot(out / f"{args.name}-facts.png")
        figures["errors"] = browser.errors + browser.evaluate("GR.errors")
    print(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
