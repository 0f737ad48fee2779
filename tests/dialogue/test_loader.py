"""The validator on a corpus of bad files: each expected error is written in the file itself.

`# <- COL: text` expects an error on that line at that column containing the text;
`# expect LINE:COL: text` does the same for any line. Every error must be expected.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from bot.dialogue import DialogueLoadError, check_dialogues, load_dialogues

HERE = Path(__file__).parent
BAD = HERE / "bad"
REPO = HERE.parents[1]
_INLINE = re.compile(r"#\s*<-\s*(\d+):\s*(.+)$")
_ANYWHERE = re.compile(r"#\s*expect\s+(\d+):(\d+):\s*(.+)$")


def expectations(path: Path) -> list[tuple[int, int, str]]:
    expected = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if match := _INLINE.search(line):
            expected.append((number, int(match.group(1)), match.group(2).strip()))
        for match in _ANYWHERE.finditer(line):
            expected.append((int(match.group(1)), int(match.group(2)), match.group(3).strip()))
    return expected


@pytest.fixture(scope="module")
def bad_errors() -> list[str]:
    dialogues, errors = check_dialogues(BAD)
    assert dialogues is None
    return [str(e) for e in errors]


@pytest.mark.parametrize("path", sorted(BAD.glob("*.yaml")), ids=lambda p: p.name)
def test_every_error_is_reported_where_it_is(path: Path, bad_errors: list[str]) -> None:
    expected = expectations(path)
    assert expected, f"{path.name} declares no expected error"
    actual = [e for e in bad_errors if e.startswith(f"{path}:")]
    unmatched = list(actual)
    for line, column, text in expected:
        prefix = f"{path}:{line}:{column}: "
        found = next((e for e in unmatched if e.startswith(prefix) and text in e), None)
        assert found, f"expected {prefix}…{text}…; got:\n" + "\n".join(actual)
        unmatched.remove(found)
    assert not unmatched, "unexpected errors:\n" + "\n".join(unmatched)


def test_a_set_with_errors_is_never_loaded() -> None:
    with pytest.raises(DialogueLoadError) as raised:
        load_dialogues(BAD)
    assert len(raised.value.errors) > 20
    assert str(raised.value).splitlines()[0].startswith(str(BAD))


def test_one_bad_file_keeps_the_whole_set_out(tmp_path: Path) -> None:
    for source in sorted((REPO / "dialogues").glob("*.yaml")):
        (tmp_path / source.name).write_text(source.read_text(encoding="utf-8"), encoding="utf-8")
    assert check_dialogues(tmp_path)[0] is not None
    (tmp_path / "broken.yaml").write_text("id: broken\ntitle: x\nstart: a\nsteps: {}\n")
    dialogues, errors = check_dialogues(tmp_path)
    assert dialogues is None
    assert [str(e) for e in errors] == [
        f"{tmp_path / 'broken.yaml'}:3:8: 'start' names step 'a', which does not exist",
        f"{tmp_path / 'broken.yaml'}:4:8: a dialogue needs at least one step",
    ]


def test_the_shipped_dialogues_are_valid() -> None:
    dialogues = load_dialogues(REPO / "dialogues")
    assert dialogues.dialogues


def test_yaml_booleans_stay_option_keys(tmp_path: Path) -> None:
    path = tmp_path / "yes.yaml"
    path.write_text(
        "id: yes_options\ntitle: t\nstart: a\nsteps:\n  a:\n    say: q\n"
        "    ask: {type: choice, save: a.x, options: {yes: 'Yes', no: 'No', on: 'On'}}\n"
        "    next: end\n"
    )
    dialogue = load_dialogues(path)["yes_options"]
    assert [o.key for o in dialogue.steps["a"].ask.options] == ["yes", "no", "on"]


def test_a_text_only_edit_keeps_ids_but_changes_the_hash(tmp_path: Path) -> None:
    path = tmp_path / "d.yaml"
    path.write_text("id: d\ntitle: t\nstart: a\nsteps:\n  a:\n    say: 'one'\n    next: end\n")
    before = load_dialogues(path)["d"]
    path.write_text("id: d\ntitle: t\nstart: a\nsteps:\n  a:\n    say: 'two'\n    next: end\n")
    after = load_dialogues(path)["d"]
    assert before.content_hash != after.content_hash
    assert list(before.steps) == list(after.steps)


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bot.cli", *args], capture_output=True,
                          text=True, cwd=REPO, timeout=60)


def test_validate_command_exit_codes_and_output() -> None:
    good = run_cli("validate", "dialogues")
    assert good.returncode == 0, good.stdout + good.stderr
    assert good.stdout.startswith("ok: ")
    bad = run_cli("validate", str(BAD.relative_to(REPO)))
    assert bad.returncode == 1
    lines = bad.stdout.splitlines()
    assert all(re.match(r"tests/dialogue/bad/[a-z_]+\.yaml:\d+:\d+: ", line) for line in lines)
    assert len(lines) == len(check_dialogues(BAD)[1])
    missing = run_cli("validate", "no/such/folder")
    assert missing.returncode == 1
    assert "no such file or directory" in missing.stdout
