"""The command line's shape: every command is there, ``anchordiv demo`` builds the Streamlit command
line that serves the installed explorer, and progress goes to stderr while results go to stdout."""
from __future__ import annotations

import logging
import subprocess
import sys

import pytest

import anchordiv.cli.demo as demo
from anchordiv.cli import build_parser, main
from anchordiv.cli.logs import progress_bar, progress_shown
from anchordiv.resources import app_dir

COMMANDS = ("bench", "embed", "train-builtin", "embed-builtin-world", "evaluate-builtin", "explorer-bench", "reproduce",
            "figure", "sweep", "demo", "fetch-model", "suggest")


def test_every_command_is_there():
    assert tuple(command_parsers()) == COMMANDS


def test_demo_help_names_its_options():
    result = subprocess.run([sys.executable, "-m", "anchordiv", "demo", "--help"], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert "--port" in result.stdout and "--data-root" in result.stdout


def test_demo_serves_the_installed_explorer_headless():
    script = demo.app_script()
    assert script == app_dir() / "streamlit_app.py" and script.is_file()
    argv = demo.streamlit_argv(script, [])
    assert argv[:5] == [sys.executable, "-m", "anchordiv.app.serve", "run", str(script)]
    assert {"--server.headless=true", "--browser.gatherUsageStats=false", "--client.showErrorDetails=none",
            "--server.maxUploadSize=25", "--runner.postScriptGC=false"} <= set(argv[5:])
    assert demo.streamlit_argv(script, ["--data-root", "/data"], port=8600)[-4:] == [
        "--server.port=8600", "--", "--data-root", "/data"]


def test_demo_passes_what_follows_the_double_dash_to_the_explorer(tmp_path, monkeypatch):
    started = []
    monkeypatch.setattr(demo, "serve", lambda argv: started.append(argv) or 0)
    assert main(["demo", "--port", "8600", "--", "--data-root", str(tmp_path), "--allow-any-path"]) == 0
    assert started == [demo.streamlit_argv(demo.app_script(), ["--data-root", str(tmp_path), "--allow-any-path"],
                                           port=8600)]


def test_demo_serves_on_one_address_when_asked(monkeypatch, capsys):
    """``--address`` becomes Streamlit's ``server.address``; anything but an IP address or a host
    name is a usage error before the server starts."""
    started = []
    monkeypatch.setattr(demo, "serve", lambda argv: started.append(argv) or 0)
    assert main(["demo", "--address", " 127.0.0.1 "]) == 0
    assert "--server.address=127.0.0.1" in started[0] and started[0][-1] == "--server.address=127.0.0.1"
    assert main(["demo", "--address", "::1", "--port", "8600"]) == 0 and "--server.address=::1" in started[1]
    assert main(["demo", "--address", "localhost"]) == 0 and "--server.address=localhost" in started[2]
    assert not any(item.startswith("--server.address") for item in demo.streamlit_argv(demo.app_script()))
    capsys.readouterr()
    for bad in ("", "http://127.0.0.1", "127.0.0.1:8501", "-a", "a b", "x" * 100_000, "host;rm -rf /", "999.1.1.1"):
        assert main(["demo", f"--address={bad}"]) == 2, bad
        err = capsys.readouterr().err
        assert "is not an address to listen on" in err and "127.0.0.1" in err and len(err) < 400, err
    assert len(started) == 3


def test_demo_refuses_a_missing_data_root_before_the_server_starts(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(demo, "serve", lambda argv: pytest.fail("the server started"))
    assert main(["demo", "--", "--data-root", str(tmp_path / "nowhere")]) == 2
    assert capsys.readouterr().err.startswith("anchordiv demo: data root ")


# Each command that takes an encoder, with the least else it needs to parse.
ENCODER_COMMANDS = {"embed": ["embed", "photos"], "reproduce": ["reproduce"], "demo": ["demo"],
                    "figure": ["figure", "--queries", "random", "--geometries", "cosine", "--out", "f.png"],
                    "sweep": ["sweep", "--query", "random"], "suggest": ["suggest", "a dog"]}


def command_parsers() -> dict:
    commands = next(action for action in build_parser()._actions if action.dest == "command")
    return commands.choices


def test_the_encoder_is_encoder_and_its_old_name_model_still_works(capsys):
    """``--encoder`` names the encoder on every command that takes one; ``--model``, its name
    before, still sets it and says so on stderr, and --help names only ``--encoder``."""
    taking = {name for name, parser in command_parsers().items()
              if any(action.dest == "encoder" for action in parser._actions)}
    assert taking == set(ENCODER_COMMANDS)
    for name, argv in ENCODER_COMMANDS.items():
        help_text = command_parsers()[name].format_help()
        assert "--encoder SPEC" in help_text and "--model" not in help_text, name
        note = f"anchordiv {name}: --model is now called --encoder (--model still works for now)\n"
        for old, new in (([], ["--encoder", "open_clip:ViT-B-32"]), (["--model", "open_clip:ViT-B-32"], []),
                         (["--model=open_clip:ViT-B-32"], [])):
            assert build_parser().parse_args([*argv, *old, *new]).encoder == "open_clip:ViT-B-32"
            assert capsys.readouterr().err == (note if old else ""), (name, old)


def test_a_script_with_the_old_model_option_still_runs(monkeypatch, capsys):
    started = []
    monkeypatch.setattr(demo, "serve", lambda argv: started.append(argv) or 0)
    assert main(["demo", "--model", "builtin"]) == 0
    assert "anchordiv demo: --model is now called --encoder" in capsys.readouterr().err
    assert started[0][started[0].index("--") + 1:] == ["--encoder", "builtin"]  # the explorer is told the new name


@pytest.mark.parametrize("flag, shown", [([], True), (["--quiet"], False)])
def test_progress_goes_to_stderr_and_quiet_hides_it(flag, shown, monkeypatch, capsys):
    """A command's progress is the package's INFO log and its bars, on stderr; ``--quiet`` keeps warnings only
    (and tells the bars of the embedders, through ``progress_shown``, to stay hidden)."""
    def handler(args):
        assert progress_shown() == shown
        logging.getLogger("anchordiv.somewhere").info("halfway")
        logging.getLogger("anchordiv.somewhere").warning("careful")
        with progress_bar("work") as progress:
            progress(1.0, "done")
        print("the result")
        return 0

    monkeypatch.setattr(demo, "run", handler)  # the parser main builds takes the handler from the module
    assert main(["demo", *flag]) == 0
    captured = capsys.readouterr()
    assert captured.out == "the result\n"
    assert ("halfway" in captured.err) == shown and ("work" in captured.err) == shown and "careful" in captured.err

