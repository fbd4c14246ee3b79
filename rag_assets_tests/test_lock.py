"""requirements.lock pins every dependency pyproject.toml declares (the install of ".[test]"), within the declared
range, and the README's and CI's installs of the project are constrained by it."""

import re
import tomllib

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from rag_assets_tests.support.paths import PROJECT_ROOT


def _declared(pyproject_text: str) -> list[Requirement]:
    """The dependencies and those of the extras the lock resolves ([tool.uv.pip] extra, read by `uv pip compile`)."""
    pyproject = tomllib.loads(pyproject_text)
    project = pyproject["project"]
    extras = [
        name for extra in pyproject["tool"]["uv"]["pip"]["extra"] for name in project["optional-dependencies"][extra]
    ]
    return [Requirement(requirement) for requirement in project["dependencies"] + extras]


def _pins(lock_text: str) -> dict[str, str]:
    pins = {}
    for line in lock_text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, separator, version = line.partition("==")
            assert separator and version, f"not an exact pin: {line!r}"
            pins[canonicalize_name(name)] = version
    return pins


def _stale(pyproject_text: str, lock_text: str) -> list[str]:
    """What the lock fails to pin of the declared dependencies: absent, or pinned outside the declared range."""
    pins = _pins(lock_text)
    stale = []
    for requirement in _declared(pyproject_text):
        pinned = pins.get(canonicalize_name(requirement.name))
        if pinned is None:
            stale.append(f"{requirement}: not in requirements.lock")
        elif not requirement.specifier.contains(pinned, prereleases=True):
            stale.append(f"{requirement}: requirements.lock pins {pinned}")
    return stale


def _read(name: str) -> str:
    return (PROJECT_ROOT / name).read_text()


def test_the_lock_pins_every_declared_dependency_within_its_range():
    assert _stale(_read("pyproject.toml"), _read("requirements.lock")) == []


def test_a_dependency_added_or_moved_without_relocking_is_stale():
    pyproject = _read("pyproject.toml")
    assert '"dagster==1.13.27",' in pyproject and '"pytest>=8",' in pyproject
    edited = pyproject.replace('"dagster==1.13.27",', '"dagster==1.13.28", "not-locked-yet>=1",')
    edited = edited.replace('"pytest>=8",', '"pytest>=999",')  # the test extra is locked too
    lock = _read("requirements.lock")
    assert _stale(edited, lock) == [
        "dagster==1.13.28: requirements.lock pins 1.13.27",
        "not-locked-yet>=1: not in requirements.lock",
        f"pytest>=999: requirements.lock pins {_pins(lock)['pytest']}",
    ]


def test_the_readme_and_ci_install_the_project_with_the_lock_as_constraints():
    installs = [
        line
        for name in ("README.md", ".ci/run")
        for line in _read(name).splitlines()
        if re.search(r"pip install .*-e (\.|\"\.\[)", line)
    ]
    assert len(installs) == 4  # the README's demo and test commands, CI's lint and test installs
    assert all(" -c requirements.lock -e " in line for line in installs), installs
