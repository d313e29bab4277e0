"""argparse's usage errors never show a credential (issue 50, item 1): a misspelt
``--storage-options``, a stray JSON word, a URL with a password, the value of an unknown
option, on every subcommand; and they still name the option meant."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from interactive_recsys.cli._main import main
from interactive_recsys.cli._parser import build_parser
from interactive_recsys.cli._usage import masked_message
from interactive_recsys.redact import MASK
from tests.helpers import HANG_S

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
KEY, SECRET = "AKIAMARK7Q2Z", "S3CR3T-MARK-9f2c"
JSON = json.dumps({"key": KEY, "secret": SECRET})
#: The JSON split by the shell after a quoting slip (no quotes at all, or some).
FRAGMENTS = ["{key:", f"{KEY},", "secret:", f"{SECRET}}}"]
URL = f"https://ann:{SECRET}@host.example/data.csv"

#: A valid call of each subcommand, that the bad words are added to.
COMMANDS = {
    "demo": ["demo"],
    "fit": ["fit", "--workflow", "wf", "--input", "x", "--output", "y"],
    "run": ["run", "--workflow", "wf", "--input", "x", "--output", "y"],
    "update": ["update", "--workflow", "wf", "--input", "x", "--output", "y"],
    "predict": ["predict", "--model", "m", "--users", "u", "--output", "o"],
    "report": ["report", "nb.ipynb"],
    "criteo": ["criteo", "in", "out"],
    "clean": ["clean", "p"],
}
def test_every_subcommand_is_tried():
    from interactive_recsys.cli._parser import build_parser

    (sub,) = [a for a in build_parser()._actions if a.dest == "command"]
    assert set(COMMANDS) == set(sub.choices)


#: An option of each subcommand whose value argparse checks (a type or a choice).
TYPED = {
    "demo": "--rows",
    "fit": "--input-format",
    "run": "--oov-budget",
    "update": "--input-format",
    "predict": "--k",
    "report": "--timeout",
    "criteo": "--to",
    "clean": "--older-than",
}
#: Bad words that are argparse's to reject wherever they come after a valid call.
MISTAKES = {
    "underscore": ["--storage_options", JSON],
    "abbreviated": ["--storage-opts", JSON],
    "with equals": ["--storage_options=" + JSON.replace(" ", "")],
    "stray json": [JSON],
    "quoting slip": FRAGMENTS,
    "stray url": [URL],
    "secret option": ["--aws-secret", SECRET],
    "unknown option": ["--credentials", KEY],
}
CASES = [
    (command, mistake)
    for command in COMMANDS
    for mistake in MISTAKES
    # clean's PATHs take any word: only options are argparse's to reject there
    if not (command == "clean" and mistake in ("stray json", "quoting slip", "stray url"))
]


def _usage_error(argv: list[str], capsys) -> str:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    out, err = capsys.readouterr()
    assert out == ""
    return err


@pytest.mark.parametrize(("command", "mistake"), CASES)
def test_a_rejected_word_never_shows_a_secret(command, mistake, capsys):
    err = _usage_error(COMMANDS[command] + MISTAKES[mistake], capsys)
    assert SECRET not in err and KEY not in err, err
    assert "unrecognized arguments" in err and MASK in err
    assert "may hold credentials" in err
    assert err.count("usage: ") == 1 and f"usage: irs {command}" in err


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("value", [JSON, URL, "".join(FRAGMENTS)])
def test_a_value_argparse_refuses_is_not_shown(command, value, capsys):
    """invalid choice / invalid int / not an integer >= 1 repeat the value."""
    err = _usage_error([*COMMANDS[command], TYPED[command], value], capsys)
    assert SECRET not in err and KEY not in err, err
    assert f"argument {TYPED[command]}" in err and MASK in err


@pytest.mark.parametrize("argv", [[JSON], ["--storage-options", JSON], [URL, "run"]])
def test_top_level_errors_mask_too(argv, capsys):
    err = _usage_error(argv, capsys)
    assert SECRET not in err and KEY not in err, err


@pytest.mark.parametrize("command", ["run", "update", "predict", "report", "clean", "demo"])
@pytest.mark.parametrize(
    "typed", ["--storage_options", "--storage-opts", "--storage_optoins", "--Storage-Options"]
)
def test_the_option_meant_is_named(command, typed, capsys):
    err = _usage_error([*COMMANDS[command], typed, JSON], capsys)
    assert f"{typed}: did you mean --storage-options?" in err


def test_harmless_words_are_still_shown(capsys):
    """Only what may hold a credential is masked: plain paths and known options stay."""
    err = _usage_error(
        [
            "run",
            "in",
            "out",
            "--workflow",
            "wf",
            "--input",
            "x",
            "--output",
            "y",
            "s3://bucket/raw",
            "--days",
            "3",
        ],
        capsys,
    )
    assert "unrecognized arguments: in out s3://bucket/raw --days 3." in err
    assert "--days is an option of other irs commands, not of irs run" in err
    assert MASK not in err


def test_a_message_is_masked_by_the_words_of_the_call():
    parser = build_parser()
    argv = ["run", "--storage-options", "plainword", "--token=abc123", "s3://u:pw12345@b/k"]
    text = masked_message(
        "x 'plainword' --token=abc123 s3://u:pw12345@b/k plainwords", argv, parser
    )
    assert text.startswith("x '***' --token=*** s3://***@b/k plainwords")


def test_the_real_command_in_a_subprocess():
    env = dict(os.environ, PYTHONPATH=ROOT)
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "interactive_recsys.cli",
            "run",
            "--workflow",
            "wf",
            "--input",
            "x",
            "--output",
            "y",
            "--storage_options",
            JSON,
            *FRAGMENTS,
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=HANG_S,
    )
    assert out.returncode == 2
    assert SECRET not in out.stdout + out.stderr and KEY not in out.stdout + out.stderr
    assert "--storage_options: did you mean --storage-options?" in out.stderr
    assert "Traceback" not in out.stderr
