"""`python -m graphrag_testkit.llm_server --help` describes every option and names every
personality (it listed none and described no option)."""

import dataclasses

import pytest

from graphrag_testkit.llm_server import PERSONALITIES, SWITCH_HELP, Switches, main


def test_help_describes_every_switch_and_personality(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    shown = capsys.readouterr().out
    assert set(SWITCH_HELP) == {f.name for f in dataclasses.fields(Switches)}
    for name in SWITCH_HELP:
        flag = ("--no-" if getattr(Switches(), name) is True else "--") + name.replace("_", "-")
        assert flag in shown, flag
    for name, what in PERSONALITIES.items():
        assert name in shown and what[:30] in " ".join(shown.split())
