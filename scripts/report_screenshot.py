"""The README's screenshot of a sweep report: the demo's adaptive sweep's report (make demo writes
.demo/moons-adaptive-report.html), opened in headless Chromium and captured to docs/img/report.png.

Usage: .venv/bin/python scripts/report_screenshot.py [--report FILE] [--output PNG] [--height PIXELS]
Runs scripts/demo.py first when the report is not there. Needs Chromium (scripts/install_chromium.sh).
"""
import argparse
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from tests.report.chromium import Browser, find_chromium  # noqa: E402  pylint: disable=wrong-import-position


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n', 1)[0])
    parser.add_argument('--report', default=os.path.join(REPO, '.demo', 'moons-adaptive-report.html'))
    parser.add_argument('--output', default=os.path.join(REPO, 'docs', 'img', 'report.png'))
    parser.add_argument('--height', type=int, default=0, help='crop to this many pixels from the top (0: whole page)')
    args = parser.parse_args()
    if not os.path.isfile(args.report):
        subprocess.run([sys.executable, os.path.join(REPO, 'scripts', 'demo.py')], check=True)
    executable = find_chromium()
    if executable is None:
        sys.exit('Chromium is needed: scripts/install_chromium.sh')
    browser = Browser(executable)
    try:
        page = browser.page()
        page.load(args.report)
        if page.errors():
            sys.exit('the report logged errors: {}'.format(page.errors()))
        if args.height:
            page.send('Emulation.setDeviceMetricsOverride', {'width': 1040, 'height': args.height,
                                                             'deviceScaleFactor': 1, 'mobile': False})
        page.screenshot(args.output, full_page=not args.height)
    finally:
        browser.close()
    print('wrote {}'.format(os.path.relpath(args.output, REPO)))


if __name__ == '__main__':
    main()
