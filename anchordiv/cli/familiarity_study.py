"""``python -m anchordiv.cli.familiarity_study [--write]``: the study that chose the built-in model's
familiarity check (:func:`anchordiv.builtin.familiarity_study.study`) run on the shipped encoder and
emoji world, printing every candidate's figure; ``--write`` also rewrites the reference in
``assets/``. A maintainer's study of several minutes, not an ``anchordiv`` command: it lives here,
above the builtin package, because it loads the encoders and the datasets, which import that package.
"""
from __future__ import annotations

import argparse


def main(argv: list[str] | None = None) -> int:
    from ..builtin.familiarity_study import study
    from ..datasets import load_emoji_world
    from ..encoders.builtin import load_builtin_encoder

    parser = argparse.ArgumentParser(prog="python -m anchordiv.cli.familiarity_study",
                                     description="How the built-in model's familiarity check was chosen.")
    parser.add_argument("--write", action="store_true", help="also write the reference into assets/")
    write = parser.parse_args(argv).write
    study(load_builtin_encoder(device="cpu"), load_emoji_world("all"), write=write)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
