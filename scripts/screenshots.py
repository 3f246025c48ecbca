#!/usr/bin/env python3
"""Screenshots of an HTML report for the README: `scripts/screenshots.py REPORT.html OUTDIR [PREFIX]`.
Writes PREFIX-top.png (header to time per rank) and one PNG per section (PREFIX-<section>.png),
rendered by Debian's Chromium in headless mode."""

import sys
from pathlib import Path

from playwright.sync_api import sync_playwright


def main() -> int:
    html, out = Path(sys.argv[1]).resolve(), Path(sys.argv[2])
    prefix = sys.argv[3] if len(sys.argv) > 3 else "report"
    out.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"])
        page = browser.new_page(viewport={"width": 1200, "height": 900}, device_scale_factor=1)
        page.goto(html.as_uri())
        page.wait_for_selector("body[data-rendered=true]")
        page.add_style_tag(content="nav { position: static; }")  # no sticky bar over section shots
        top = page.locator("#ranks").bounding_box()
        page.screenshot(path=str(out / f"{prefix}-top.png"), clip={"x": 0, "y": 0, "width": 1200,
                                                                     "height": top["y"] + top["height"] + 16})
        for section in page.locator("main > section").all():
            section.screenshot(path=str(out / f"{prefix}-{section.get_attribute('id')}.png"))
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
