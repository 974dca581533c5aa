"""`grade release DIR --update`: bring a student kit handed out earlier to this release without losing work.

The release keeps, in `.kit-release.json` (grader.authoring.release.MANIFEST), the digest of every file it
wrote; a file whose digest differs is one a student edited. The update writes a fresh release aside (checked
and audited as any release), then lays it over the kit: kit files replaced, new ones added, files this
release dropped removed, while edited assignment files and everything the student added stay.
"""

import hashlib
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import grader
from grader.authoring import release
from grader.course import Course
from grader.course_table import ConfigError


@dataclass
class Update:
    """What `update_release` did to a kit already handed out, by relative path."""
    added: list[str] = field(default_factory=list)  # new in this release
    replaced: list[str] = field(default_factory=list)  # the kit's files that changed (untouched stubs among them)
    removed: list[str] = field(default_factory=list)  # the kit's files this release no longer has (unedited)
    kept: list[str] = field(default_factory=list)  # edited assignment files, left as they are
    stale_stubs: list[str] = field(default_factory=list)  # of those kept, the ones whose stub changed
    set_aside: list[str] = field(default_factory=list)  # edited kit files, now FILE.before-update


def update_release(*, course: Course, out: Path, steps: release.Steps | None = None) -> Update:
    """Bring the kit at `out`, handed out earlier (a student's copy, or the repository they pull from),
    to this release without losing work: a fresh release is written aside, then every kit file is
    replaced by its new version, except the assignment files a student has edited (told from the
    manifest's digests), which stay as they are; a kit file the student edited is kept beside it as
    FILE.before-update; what the student added (notes, scripts, a venv) is never touched."""
    import tempfile

    out = Path(out).resolve()
    package = Path(grader.__file__).resolve().parent
    before = _handed_out(out, kit=(course.root, package.parent))
    steps = steps or release.Quiet()
    release.check_current(course, steps)
    with tempfile.TemporaryDirectory(prefix="grade-release-") as tmp:
        fresh = Path(tmp) / "kit"
        release.write_kit(course, fresh, steps)
        steps.step("updating the kit handed out")
        return _overlay(fresh, out, before, release._relative(course.assignments_dir, course).as_posix())


def _handed_out(out: Path, kit: tuple[Path, ...]) -> dict[str, str]:
    """The manifest of the release at `out` (relative path -> digest); a ConfigError where `out` is none."""
    for folder in kit:
        if out.is_relative_to(folder.resolve()):
            raise ConfigError(f"release: {str(out)!r} is inside the kit ({folder}): write the release outside it")
    try:
        manifest = json.loads((out / release.MANIFEST).read_text())
    except (OSError, ValueError):
        raise ConfigError(f"release: --update: {str(out)!r} holds no {release.MANIFEST} (a kit written by grade "
                          "release with --update's support): write a new release instead") from None
    if not isinstance(manifest, dict):
        raise ConfigError(f"release: --update: {str(out / release.MANIFEST)!r} is not a release manifest")
    return manifest


def _overlay(fresh: Path, out: Path, before: dict[str, str], assignments: str) -> Update:
    new = release.digests(fresh, [p for p in release._files(fresh) if p.name != release.MANIFEST])
    done = Update()
    for rel, digest in sorted(new.items()):
        target, mine = out / rel, _digest(out / rel)
        edited = mine is not None and mine != before.get(rel, digest)
        if mine == digest:
            continue
        if edited and (rel.startswith(f"{assignments}/") or rel not in before):
            done.kept.append(rel)  # the student's work (or a file of theirs the new kit also names)
            if before.get(rel) != digest:
                done.stale_stubs.append(rel)
            continue
        if edited:
            shutil.copyfile(target, target.with_name(target.name + ".before-update"))
            done.set_aside.append(rel)
        (done.replaced if mine is not None else done.added).append(rel)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(fresh / rel, target)
    for rel, digest in sorted(before.items()):
        if rel not in new and _digest(out / rel) == digest and not rel.startswith(f"{assignments}/"):
            (out / rel).unlink()
            done.removed.append(rel)
    # last: a kit half updated is updated again in full
    shutil.copyfile(fresh / release.MANIFEST, out / release.MANIFEST)
    return done


def _digest(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None
