"""What a new campaign's initialize asks to freeze: `--evaluator FILE` and `--evaluator-input FILE...`, or an
`evaluation:` section (`script`, `inputs`, `model`) of an autofl.yaml the user wrote before initialize.

The flags win over the file. Usage::

    config = with_evaluation(config, options, paths)   # config plus `evaluation` (see store/frozen.build)
"""

from __future__ import annotations

from ..common import bounded
from .outcome import CampaignError
from .store import frozen, sources


def with_evaluation(config: dict, options, paths) -> dict:
    """`config` with the `evaluation` section the request asks for (unchanged when none is asked)."""
    script = getattr(options, "evaluator", None)
    inputs = list(getattr(options, "evaluator_input", None) or [])
    model = None
    if not script:
        declared = _declared(paths)
        script, model = declared.get("script"), declared.get("model")
        inputs = inputs or list(declared.get("inputs") or [])
    if not script:
        if inputs:
            raise CampaignError("--evaluator-input needs --evaluator FILE (the evaluator those inputs belong to)")
        return config
    if model is not None and sources.unsafe_relative(model):  # never a path out of the result (absolute, `..`)
        raise CampaignError(
            f"evaluation.model in autofl.yaml ({model!r}) must be a plain relative path below server/simulate_job/ "
            "(no leading /, no . or .. parts); fix it"
        )
    section, _files = frozen.build(paths.workspace, str(script), [str(item) for item in inputs], model)
    return {**config, "evaluation": section}


def _declared(paths) -> dict:
    """The `evaluation` section of an autofl.yaml that exists before the campaign does ({} when none)."""
    import yaml

    try:
        data = bounded.read_regular(paths.autofl_yaml, bounded.MAX_DOCUMENT_BYTES)
    except bounded.BoundedReadError as error:
        raise CampaignError(f"{paths.autofl_yaml} {error}; fix or remove it") from None
    if data is None:
        return {}
    try:
        document = yaml.load(data.decode("utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (ValueError, yaml.YAMLError, RecursionError):
        raise CampaignError(f"{paths.autofl_yaml} is not valid YAML; fix or remove it") from None
    section = document.get("evaluation") if isinstance(document, dict) else None
    if section is None:
        return {}
    if not isinstance(section, dict) or not isinstance(section.get("script", ""), str):
        raise CampaignError(f"{paths.autofl_yaml}: evaluation must be a mapping with script: FILE")
    inputs = section.get("inputs") or []
    if not isinstance(inputs, list) or not all(isinstance(item, str) for item in inputs):
        raise CampaignError(f"{paths.autofl_yaml}: evaluation.inputs must be a list of file paths")
    return section


def check_unchanged(config: dict, options) -> None:
    """The evaluator is fixed when the campaign starts: initialize on an existing campaign may only repeat it."""
    script = getattr(options, "evaluator", None)
    inputs = getattr(options, "evaluator_input", None)
    current = frozen.section(config) or {}
    if (script and script != current.get("script")) or (inputs and sorted(inputs) != current.get("inputs")):
        raise CampaignError(
            "the frozen evaluator is fixed when the campaign starts; start a fresh campaign to measure the score "
            "with another evaluator or other inputs"
        )
