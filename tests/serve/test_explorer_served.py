"""The explorer's site as the query service serves it (`/explore/`), in a real headless
Chromium: it loads over HTTP with no console error, its tree lists every level-0 community
and a community's report opens."""

import pytest
from served_index import no_serve_keys, serving  # noqa: F401  (an autouse fixture)

from graphrag_ray import schema
from graphrag_ray.config import ServeConfig
from graphrag_ray.serve.runner import ServeSpec, local_service
from graphrag_ray.storage import IndexStore
from graphrag_testkit.browser import HeadlessBrowser, find_chromium

CHROMIUM = find_chromium()


@pytest.mark.slow  # starts Chromium
@pytest.mark.skipif(CHROMIUM is None, reason="no chromium on PATH (Debian: apt-get install "
                                             "chromium; .ci/run installs it)")
def test_the_served_explorer_loads_in_a_real_browser(small_index):
    version = IndexStore(str(small_index)).open()
    communities = version.read_table(schema.COMMUNITIES).to_pylist()
    reports = {r["community"]: r for r in version.read_table(schema.COMMUNITY_REPORTS).to_pylist()}
    with serving(local_service(ServeSpec(str(small_index), settings=ServeConfig()))) as url, \
            HeadlessBrowser(CHROMIUM) as browser:
        browser.open(url + "/explore")  # redirected to /explore/
        browser.wait_for("document.body && document.body.dataset.ready")
        listed = browser.evaluate("[...document.querySelectorAll('#tree > li')]"
                                  ".map(li => Number(li.dataset.community))")
        assert sorted(listed) == sorted(c["community"] for c in communities if c["level"] == 0)
        chosen = max((c for c in communities if c["level"] == 0), key=lambda c: c["size"])
        browser.click(f'#tree > li[data-community="{chosen["community"]}"] > a')
        title = browser.wait_for("document.querySelector('#report h2')?.textContent")
        assert title == reports[chosen["community"]]["title"]
        assert browser.evaluate("location.pathname") == "/explore/"
        assert browser.errors == [] and browser.evaluate("GR.errors") == []
