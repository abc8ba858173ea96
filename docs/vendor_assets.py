"""Copy the browser assets the docs site needs offline into ``docs/vendor/``.

The site loads no file from a CDN: KaTeX (typesets the formulas that ``pymdownx.arithmatex``
marks) and iframe-worker (lets the search worker run from ``file://``, see mkdocs.yml) are
committed under ``docs/vendor/``, copied by this script from the npm packages pinned below.
Only what the site uses is kept: ``katex.min.js``, ``katex.min.css`` with its WOFF2 fonts (the
WOFF and TTF fallbacks are dropped from the stylesheet, every browser that runs the site reads
WOFF2), the iframe-worker shim, and both licences (about 0.6 MB in all).

Run it after changing a version::

    python docs/vendor_assets.py                     # npm install into a temporary folder
    python docs/vendor_assets.py --from node_modules # or copy from an existing install

and commit ``docs/vendor/``. ``--check`` compares the committed files with a fresh copy and
exits 1 when they differ (needs npm or ``--from``). The docs build itself needs neither npm nor
the network.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

PACKAGES = {"katex": "0.19.1", "iframe-worker": "1.0.4"}
VENDOR = Path(__file__).resolve().parent / "vendor"

# (package, path inside the package, path under docs/vendor/)
FILES = [
    ("katex", "LICENSE", "katex/LICENSE"),
    ("katex", "dist/katex.min.js", "katex/katex.min.js"),
    ("katex", "dist/katex.min.css", "katex/katex.min.css"),
    ("iframe-worker", "LICENSE", "iframe-worker/LICENSE"),
    ("iframe-worker", "shim/index.js", "iframe-worker/shim.js"),
]
# Fallback font formats after the WOFF2 source of each @font-face rule.
_FALLBACK_FONTS = re.compile(r',url\(fonts/[^)]+\.(?:woff|ttf)\) format\("(?:woff|truetype)"\)')


def npm_install(target: Path) -> Path:
    """``npm install`` the pinned packages into ``target``; return its node_modules."""
    npm = shutil.which("npm")
    if npm is None:
        sys.exit("npm is not on PATH: install Node.js, or pass --from NODE_MODULES")
    specs = [f"{name}@{version}" for name, version in PACKAGES.items()]
    subprocess.run([npm, "install", "--no-save", "--no-audit", "--no-fund", "--prefix",
                    str(target), *specs], check=True, stdout=subprocess.DEVNULL)
    return target / "node_modules"


def copy_assets(node_modules: Path, out: Path) -> list[Path]:
    """Write the vendored files from ``node_modules`` into ``out``; return their paths."""
    for name, version in PACKAGES.items():
        found = json.loads((node_modules / name / "package.json").read_text())["version"]
        if found != version:
            sys.exit(f"{node_modules / name} is version {found}, this script pins {version}")
    if out.exists():
        shutil.rmtree(out)
    written = []
    for package, source, dest in FILES:
        target = out / dest
        target.parent.mkdir(parents=True, exist_ok=True)
        data = (node_modules / package / source).read_bytes()
        if dest.endswith("katex.min.css"):
            data = _FALLBACK_FONTS.sub("", data.decode("utf-8")).encode("utf-8")
        target.write_bytes(data)
        written.append(target)
    fonts = out / "katex" / "fonts"
    fonts.mkdir()
    css = (out / "katex" / "katex.min.css").read_text(encoding="utf-8")
    for name in sorted(set(re.findall(r"url\(fonts/([^)]+)\)", css))):
        shutil.copyfile(node_modules / "katex" / "dist" / "fonts" / name, fonts / name)
        written.append(fonts / name)
    (out / "versions.json").write_text(json.dumps(PACKAGES, indent=2) + "\n", encoding="utf-8")
    written.append(out / "versions.json")
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--from", dest="node_modules", type=Path,
                        help="an existing node_modules holding the pinned packages")
    parser.add_argument("--check", action="store_true",
                        help="compare docs/vendor/ with a fresh copy instead of writing it")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        node_modules = args.node_modules or npm_install(Path(tmp) / "npm")
        out = Path(tmp) / "vendor" if args.check else VENDOR
        written = copy_assets(node_modules, out)
        if args.check:
            fresh = {p.relative_to(out) for p in out.rglob("*") if p.is_file()}
            committed = {p.relative_to(VENDOR) for p in VENDOR.rglob("*") if p.is_file()}
            differ = sorted(str(p) for p in fresh | committed if p not in fresh & committed
                            or not filecmp.cmp(out / p, VENDOR / p, shallow=False))
            if differ:
                print("docs/vendor differs from a fresh copy: " + ", ".join(differ))
                return 1
            print("docs/vendor is current")
            return 0
    size = sum(p.stat().st_size for p in written)
    print(f"wrote {len(written)} files ({size / 1e6:.2f} MB) to {VENDOR}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
