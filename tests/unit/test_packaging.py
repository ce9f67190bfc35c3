"""The wheel holds every package of the source tree (setuptools is given an explicit list)."""

from __future__ import annotations

import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # the same parser, from PyPI
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]


def test_every_package_folder_is_in_the_wheel() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    found = set()
    for name, folder in config["package-dir"].items():
        for init in (ROOT / folder).rglob("__init__.py"):
            relative = init.parent.relative_to(ROOT / folder).parts
            found.add(".".join((name, *relative)))
    assert found - listed == set()  # a code package left out of the wheel
    for package in listed:  # and every listed one exists (bridge/web holds only data)
        top = next(n for n in config["package-dir"] if package == n or package.startswith(n + "."))
        folder = ROOT / config["package-dir"][top] / package[len(top) + 1 :].replace(".", "/")
        assert folder.is_dir(), package
