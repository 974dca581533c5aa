"""`autograder.zip`: what Gradescope unpacks at /autograder/source.

    setup.sh, run_autograder   the specification's two scripts (grader/gradescope/scripts.py)
    kit/                       the grader package and a pyproject.toml without the instructors'
                               extras (what `grade release` ships), installed by setup.sh
    course/                    course.toml, the suites (public and hidden) with every module they
                               import, and the reference (the hidden tier compares with it): the
                               course as it travels to a Dask worker (grader.batch.cluster)

The zip is instructors' material: Gradescope never shows it to students, and the submission's
process, in namespaces, cannot reach it (grader/gradescope/runner.py says what the run had).
"""

from __future__ import annotations

import io
import re
import stat
import tarfile
import zipfile
from importlib import metadata
from pathlib import Path

import grader
from grader.authoring import release
from grader.course import Course
from grader.course_table import ConfigError
from grader.gradescope import scripts

# every entry gets this time, so that the same course gives the same zip
EPOCH = (1980, 1, 1, 0, 0, 0)
# what a URL for pip may hold here: it is written into setup.sh unquoted inside ${...}
URL = re.compile(r"[A-Za-z0-9._~:/?#@!&*+,;=%-]+")


def write_autograder(*, course: Course, assignment: str, out: Path, torch_index_url: str = "",
                     unsafe_process_isolation: bool = False) -> Path:
    """Write `out`/autograder.zip for `assignment` of `course`; return its path."""
    from grader.batch.cluster import pack_course

    course.assignment(assignment)
    if not course.reference.is_dir():
        raise ConfigError(f"gradescope: no reference tree at {str(course.reference)!r}: the hidden tier needs it "
                          "(grade gradescope runs in the instructors' kit)")
    if torch_index_url and not URL.fullmatch(torch_index_url):
        raise ConfigError(f"--torch-index-url: {torch_index_url!r} is not a URL")
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"DIR: {str(out)!r} is not a directory")
    if not out.resolve().parent.is_dir():
        raise ConfigError(f"DIR: the folder of {str(out)!r} does not exist")
    package = Path(grader.__file__).resolve().parent
    files: dict[str, bytes] = {
        "kit/pyproject.toml": release.pyproject_text(package.parent / "pyproject.toml").encode(),
        **{f"kit/grader/{p.relative_to(package).as_posix()}": p.read_bytes() for p in release._files(package)},
        **{f"course/{name}": data for name, data in _untar(pack_course(course)).items()},
    }
    executable = {
        "setup.sh": scripts.setup_sh(torch=_torch_version(), torch_index=torch_index_url),
        "run_autograder": scripts.run_autograder(assignment=assignment,
                                                 unsafe_process_isolation=unsafe_process_isolation),
    }
    out.mkdir(exist_ok=True)
    path = out / "autograder.zip"
    tmp = path.with_name(f".{path.name}.tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for name, text in executable.items():
            _add(z, name, text.encode(), 0o755)
        for name in sorted(files):
            _add(z, name, files[name], 0o644)
    tmp.replace(path)
    return path


def _add(z: zipfile.ZipFile, name: str, data: bytes, mode: int) -> None:
    info = zipfile.ZipInfo(name, date_time=EPOCH)
    info.external_attr = (stat.S_IFREG | mode) << 16  # unzip restores it: Gradescope runs the scripts
    info.compress_type = zipfile.ZIP_DEFLATED
    z.writestr(info, data)


def _untar(blob: bytes) -> dict[str, bytes]:
    found = {}
    with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
        for member in tar.getmembers():
            f = tar.extractfile(member) if member.isfile() else None
            if f is not None:
                found[member.name] = f.read()
    return found


def _torch_version() -> str:
    """The torch this kit grades with here, without a local build tag (`2.13.0+cpu` -> `2.13.0`)."""
    try:
        return metadata.version("torch").split("+")[0]
    except metadata.PackageNotFoundError:
        raise ConfigError("gradescope: torch is not installed here: the autograder installs the version the "
                          "kit grades with here") from None
