"""Open the built site in a real browser (headless Chromium) and check from its DOM
that the index, an API page and an example page rendered: a title, the element that
carries the page's content (a picture on the index and the example, a documented object
on the API page), and no error text. A screenshot of each is kept (CI artefacts).

    python docs/browser_check.py [SITE_DIR] [SCREENSHOT_DIR]

Without Chromium the check says so and skips (exit 0), except under CI (`CI=true`),
where a missing browser fails: `.ci/run` installs it from the distribution's packages."""

import os
import pathlib
import re
import shutil
import subprocess
import sys

PAGES = {
    # page: (what its title must contain, a regular expression for its content element)
    "index.html": ("diffmech", r'<img[^>]+src="images/crank_rocker\.png"'),
    "api/linkage/index.html": ("linkage", r'class="doc doc-object doc-function"[^>]*>.*?simulate_dynamics'),
    "examples/09_linkage_dynamics/index.html": ("Jansen", r'<img[^>]+src="data:image/png;base64,'),
}
ERRORS = ("Traceback (most recent call last)", "ModuleNotFoundError", "Error executing", "404 - Not found")


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def run(browser, *args) -> str:
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", *args]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise SystemExit(f"browser check: {' '.join(cmd)} failed:\n{out.stderr[-2000:]}")
    return out.stdout


def main(argv) -> int:
    site = pathlib.Path(argv[1] if len(argv) > 1 else "site").resolve()
    shots = pathlib.Path(argv[2] if len(argv) > 2 else "ci-artifacts").resolve()
    browser = chromium()
    if browser is None:
        if os.environ.get("CI") == "true":
            print("browser check: no Chromium under CI (.ci/run installs it): failing")
            return 1
        print("browser check: SKIPPED, no Chromium on this machine (apt-get install chromium)")
        return 0
    shots.mkdir(parents=True, exist_ok=True)
    failures = []
    for page, (title_word, content) in PAGES.items():
        path = site / page
        if not path.is_file():
            failures.append(f"{page}: not built")
            continue
        url = path.as_uri()
        dom = run(browser, "--virtual-time-budget=5000", "--dump-dom", url)
        title = re.search(r"<title>(.*?)</title>", dom, re.S)
        name = page.replace("/", "_").replace(".html", ".png")
        run(browser, "--window-size=1280,1600", f"--screenshot={shots / name}", url)
        problems = []
        if title is None or title_word not in title.group(1):
            problems.append(f"title {title.group(1) if title else None!r} lacks {title_word!r}")
        if not re.search(content, dom, re.S):
            problems.append(f"no content element matching {content!r}")
        problems += [f"error text {e!r}" for e in ERRORS if e in dom]
        if not (shots / name).is_file() or (shots / name).stat().st_size < 10_000:
            problems.append("no screenshot")
        status = "ok" if not problems else "FAILED: " + "; ".join(problems)
        print(f"browser check: {page}: {status} (screenshot {shots / name})")
        failures += [f"{page}: {p}" for p in problems]
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
