"""Docs that cannot rot (issue 45): the site, built strictly, opens in headless Chromium with no broken
link or image."""

from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from tests.kit import needs
from tests.kit.chromium import Browser
from tests.kit.docs_pages import site_fixture  # noqa: F401 (the fixture `site`)

# the built site in a browser ---------------------------------------------------------------


class Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.refs: list[tuple[str, str]] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for key in ("href", "src"):
            if a.get(key) and tag in ("a", "img", "link", "script", "source"):
                self.refs.append((tag, a[key] or ""))


@pytest.mark.needs("chromium")  # checked before the site is built
def test_the_site_opens_in_chromium_with_no_broken_link_or_image(site, tmp_path):
    exe = needs.chromium()
    pages = sorted(p for p in site.rglob("index.html") if "search" not in p.parts)
    assert len(pages) >= 20, pages
    broken = []
    with Browser(exe, tmp_path) as browser:  # one browser for every page (tests/kit/chromium.py)
        doms = {html_page: browser.dom(html_page.as_uri()) for html_page in pages}
    for html_page, dom in doms.items():
        assert "<article" in dom, html_page  # Chromium read and laid out the page
        links = Links()
        links.feed(dom)
        for tag, ref in links.refs:
            parts = urlsplit(ref)
            if parts.scheme in ("http", "https", "mailto", "data") or not parts.path:
                continue
            target = (html_page.parent / unquote(parts.path)).resolve()
            if parts.scheme == "file":
                target = Path(unquote(parts.path))
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file():
                broken.append((str(html_page.relative_to(site)), tag, ref))
    assert not broken, broken
