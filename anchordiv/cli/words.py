"""The library's refusals in the command line's words, said in one place (:func:`in_command_words`,
which :func:`anchordiv.cli.main` calls for every ``ValueError``).

* An encoder's advice names its loader's arguments as parts
  (:class:`~anchordiv.encoders.advice.AdvisedError`): ``pretrained='TAG'`` and ``allow_download=True``
  are said as the options ``--pretrained TAG`` and ``--allow-download``.
* A calibration with nothing to measure
  (:class:`~anchordiv.models.calibration.NothingToCalibrate`) names the options that chose the two
  anchor sets it compared, where the command has them, and ``--weighting balanced`` where the
  command has that option (its geometry calibrates only for the calibrated weighting).

* A posterior kind fitted without a prior set (:class:`~anchordiv.models.registry.PriorNeeded`)
  names the option that gives one, where the command has it.

None of these modules is imported here: an error of theirs can only have come from a module already loaded."""
from __future__ import annotations

import sys

# Per command: the options that choose the two anchor sets a calibration compares.
ANCHOR_SET_OPTIONS = {
    "sweep": "anchor sets A and B (--anchors-a or --preset-a, and --anchors-b or --preset-b)",
    "figure": "anchor sets A and B (--anchors-a or --preset-a, and --anchors-b or --preset-b)",
    "reproduce": "the object and style anchors (with --folder: --object-anchors and --style-anchors, or the label "
                 "columns --object-column and --style-column they come from)",
}


# Per command: the option that gives a posterior kind its prior anchor set.
PRIOR_OPTION = {"figure": "--prior-anchors FILE (one anchor per line)"}

# The commands whose --weighting chooses balanced or literal weights, which need no calibration.
WEIGHTING_COMMANDS = ("sweep", "figure")


def in_command_words(error: ValueError, command: str | None) -> str:
    """``error``'s message as command ``command`` says it (``str(error)`` where nothing needs saying
    otherwise)."""
    advice = sys.modules.get("anchordiv.encoders.advice")
    if advice is not None and isinstance(error, advice.AdvisedError):
        return error.say(advice.option_words)
    calibration = sys.modules.get("anchordiv.models.calibration")
    if calibration is not None and isinstance(error, calibration.NothingToCalibrate) and command in ANCHOR_SET_OPTIONS:
        other = " or --weighting balanced (or literal)" if command in WEIGHTING_COMMANDS else ""
        return (f"{ANCHOR_SET_OPTIONS[command]} give every sampled gallery image the same top-{error.k} neighbours, "
                f"so p cannot be calibrated; give anchor sets that rank the images differently{other}")
    registry = sys.modules.get("anchordiv.models.registry")
    if registry is not None and isinstance(error, registry.PriorNeeded) and command in PRIOR_OPTION:
        return f"--kind: the {error.short} model needs a prior anchor set; give it with {PRIOR_OPTION[command]}"
    return str(error)
