"""argparse's usage errors without a secret in them, and with the option meant.

argparse repeats the words it rejects (``unrecognized arguments: --storage_options {...}``,
``invalid choice: '...'``, ``invalid int value: '...'``), and a rejected word is often a
credential: the JSON of a misspelt ``--storage-options``, a fragment of it after a quoting
slip, the value of an option that does not exist. :class:`UsageParser` (every ``irs``
parser) reports such errors with these words masked (:data:`~interactive_recsys.redact.MASK`):

* any word that looks like JSON or a fragment of it (``{ } [ ] " ' : ,``), whole;
* a URL's credentials (:func:`~interactive_recsys.redact.redact_url`);
* the word after an option that no command has, or whose name looks secret (``--key``,
  ``--aws-secret``...), or after ``--storage-options``; the value of such an option given as
  ``--name=value``;
* whatever else :func:`~interactive_recsys.redact.redact_text` masks (secrets met before,
  ``name=value`` pairs with a secret name);

and it names the option meant when an unknown one is close to an option of the command
(``--storage_options``: did you mean ``--storage-options``?).

>>> parser = UsageParser(prog="irs")
>>> _ = parser.add_argument("--storage-options")
>>> shown_words(["--storage_options", '{"key": "AKIA"}', "in"], parser)
{'{"key": "AKIA"}': '***'}
"""

from __future__ import annotations

import argparse
import contextvars
import difflib
import re
import sys
from collections.abc import Mapping, Sequence
from typing import Any, NoReturn

from interactive_recsys.redact import MASK, is_secret_key, redact_text, redact_url

__all__ = ["UsageParser", "masked_message", "shown_words"]

#: Options whose value holds credentials.
SECRET_OPTIONS = ("--storage-options",)

_JSON_CHARACTERS = re.compile(r"""[{}\[\]"':,]""")
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://\S*")
_NUMBER = re.compile(r"-\d[\d.eE+\-]*")
_NOTE = f" ({MASK} marks words not shown: they may hold credentials.)"

_parsing: contextvars.ContextVar[bool] = contextvars.ContextVar("irs_parsing", default=False)


class _UsageError(Exception):
    """A usage error of ``parser``, raised to the outermost parse, which masks and prints it."""

    def __init__(self, parser: argparse.ArgumentParser, message: str) -> None:
        super().__init__(message)
        self.parser, self.message = parser, message


class UsageParser(argparse.ArgumentParser):
    """An :class:`argparse.ArgumentParser` whose usage errors mask the words that may hold
    credentials and name the option meant (see the module's text); its subparsers are of
    this class too.

    Parameters
    ----------
    hints : for options this command lacks (``"--storage-options"``), a sentence that says
        why and what to do instead, added to the error that rejects them.
    **kwargs : as :class:`argparse.ArgumentParser`.
    """

    def __init__(self, *args: Any, hints: Mapping[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.hints = dict(hints or {})

    def error(self, message: str) -> NoReturn:
        if _parsing.get():  # inside a parse: the outermost parser knows every word
            raise _UsageError(self, message)
        self._exit_with(self, message, [])

    def parse_known_args(
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> Any:
        if _parsing.get():  # a subcommand's parser, called by the outermost one
            return super().parse_known_args(args, namespace)
        argv = list(sys.argv[1:] if args is None else args)
        token = _parsing.set(True)
        try:
            return super().parse_known_args(argv, namespace)
        except _UsageError as exc:
            self._exit_with(exc.parser, exc.message, argv)
        finally:
            _parsing.reset(token)

    def parse_args(
        self,
        args: Sequence[str] | None = None,
        namespace: argparse.Namespace | None = None,
    ) -> argparse.Namespace:
        argv = list(sys.argv[1:] if args is None else args)
        parsed, extras = self.parse_known_args(argv, namespace)
        if extras:
            command = self._command_parser(parsed)
            self._exit_with(command, unrecognized_message(extras, argv, command, self), argv)
        return parsed

    def _command_parser(self, parsed: argparse.Namespace) -> argparse.ArgumentParser:
        """The parser of the subcommand that ``parsed`` ran (else this one)."""
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                chosen = getattr(parsed, action.dest, None)
                if chosen in action.choices:
                    return action.choices[chosen]
        return self

    def _exit_with(
        self, parser: argparse.ArgumentParser, message: str, argv: Sequence[str]
    ) -> NoReturn:
        parser.print_usage(sys.stderr)
        parser.exit(2, f"{parser.prog}: error: {masked_message(message, argv, self)}\n")


def _options(parser: argparse.ArgumentParser) -> list[str]:
    return [o for action in parser._actions for o in action.option_strings]


def _all_options(parser: argparse.ArgumentParser) -> set[str]:
    """The option strings of ``parser`` and of its subcommands' parsers."""
    found = set(_options(parser))
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found |= _all_options(sub)
    return found


def _is_option(word: str) -> bool:
    return word.startswith("-") and word != "-" and not _NUMBER.fullmatch(word)


def _known(name: str, options: set[str]) -> bool:
    """Whether ``name`` is an option of some command, or an abbreviation argparse takes."""
    return name in options or (name.startswith("--") and any(o.startswith(name) for o in options))


def _hides_its_value(name: str, options: set[str]) -> bool:
    """Whether the word after the option ``name`` may be a credential (and is not shown)."""
    return (
        not _known(name, options)
        or is_secret_key(name.lstrip("-"))
        or any(o.startswith(name) for o in SECRET_OPTIONS if name.startswith("--"))
    )


def _shown(word: str) -> str:
    """``word`` as an error may show it: a URL redacted, JSON (or a piece of it) masked."""
    if _URL.fullmatch(word):
        return redact_url(word)
    if _JSON_CHARACTERS.search(word):
        return MASK
    return redact_text(word)


def shown_words(argv: Sequence[str], parser: argparse.ArgumentParser) -> dict[str, str]:
    """The words of ``argv`` that an error must not show as they are, each with what it
    shows instead (the module's text says which)."""
    options = _all_options(parser)
    shown: dict[str, str] = {}
    hide_next = False
    for word in argv:
        if hide_next and not _is_option(word):
            shown[word] = MASK
            hide_next = False
            continue
        hide_next = False
        if _is_option(word):
            name, eq, value = word.partition("=")
            if not eq:
                hide_next = _hides_its_value(name, options)
            elif value and (_hides_its_value(name, options) or _shown(value) != value):
                shown[word] = f"{name}={MASK}"
                shown[value] = MASK
            continue
        if _shown(word) != word:
            shown[word] = _shown(word)
    return shown


def masked_message(message: str, argv: Sequence[str], parser: argparse.ArgumentParser) -> str:
    """argparse's ``message`` with the words of ``argv`` that may hold credentials masked
    (:func:`shown_words`), then through :func:`~interactive_recsys.redact.redact_text`."""
    out = message
    for word, shown in sorted(shown_words(argv, parser).items(), key=lambda p: -len(p[0])):
        out = out.replace(repr(word), repr(shown))
        out = re.sub(
            r"(?<![^\s'\"=])" + re.escape(word) + r"(?![^\s'\",.])", lambda _, s=shown: s, out
        )
    out = redact_text(out)
    if MASK in out and _NOTE not in out:
        out += _NOTE
    return out


def unrecognized_message(
    extras: Sequence[str],
    argv: Sequence[str],
    command: argparse.ArgumentParser,
    top: argparse.ArgumentParser,
) -> str:
    """The error for words no option of ``command`` took: the words (masked by
    :func:`masked_message` later), and for each unknown option, the option meant."""
    text = f"unrecognized arguments: {' '.join(extras)}"
    mine, everyone = _options(command), sorted(_all_options(top))
    notes: list[str] = []
    for word in extras:
        if not _is_option(word):
            continue
        name = word.partition("=")[0]
        meant = _meant(name, mine)
        elsewhere = None if meant else _meant(name, everyone)
        hint = getattr(command, "hints", {}).get(elsewhere)
        if meant:
            notes.append(f"{name}: did you mean {meant}?")
        elif hint:
            notes.append(f"{command.prog} has no {elsewhere} option: {hint}")
        elif elsewhere:
            notes.append(
                f"{elsewhere} is an option of other irs commands, not of "
                f"{command.prog} (see {command.prog} --help)."
            )
    notes = list(dict.fromkeys(notes))  # once each
    return f"{text}. {' '.join(notes)}" if notes else text


def _meant(name: str, options: Sequence[str]) -> str | None:
    """The option of ``options`` that ``name`` most likely means (``_`` for ``-``, a typo),
    else ``None``."""
    if len(name) < 3:  # -x, --: nothing to spell
        return None
    spelled = "--" + name.lstrip("-").replace("_", "-").lower()
    if spelled in options:
        return spelled
    close = difflib.get_close_matches(
        spelled, [o for o in options if o.startswith("--")], n=1, cutoff=0.75
    )
    return close[0] if close else None
