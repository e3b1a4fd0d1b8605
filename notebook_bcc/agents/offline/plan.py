"""The offline analyst's playbook: stages and steps, each step served by one recipe."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MODELLING", "StepPlay", "StagePlay", "follow_up_play", "playbook"]

MODELLING = "predictive_modelling"  # the stage that fits models of the target


@dataclass(frozen=True)
class StepPlay:
    id: str
    title: str
    goal: str
    recipe: str
    artifacts: tuple[tuple[str, str], ...]  # (name, description)
    required: tuple[str, ...] = ()
    acceptance: tuple[str, ...] = ()
    agent: str = "Explore-Agent"


@dataclass(frozen=True)
class StagePlay:
    id: str
    title: str
    goal: str
    steps: tuple[StepPlay, ...]
    artifacts: tuple[tuple[str, str], ...]
    required: tuple[str, ...] = ()


def _target_checks(target: str | None) -> tuple[str, ...]:
    if not target:
        return ()
    return (f"{target!r} in clean_dataset.columns", f"clean_dataset[{target!r}].notna().all()")


def _loading(files: int) -> StepPlay:
    artifacts = (
        ("raw_dataset", "DataFrame read from the submitted file"),
        ("data_profile", "shape and dtypes"),
    )
    goal = "Read the submitted file into raw_dataset with the right delimiter and encoding."
    if files > 1:
        artifacts += (
            ("tables", "every submitted file, read, by file name"),
            ("join_report", "shared columns checked as join keys; what was joined or left aside"),
        )
        goal = (
            f"Read all {files} submitted files, check the columns they share as join keys "
            "(unique on one side, match rate), join the lookups, and say which files are "
            "analysed and why any other is left aside; raw_dataset is the table analysed."
        )
    return StepPlay(
        "data_loading",
        "Reading the data",
        goal + " Acceptance: it has rows and columns.",
        "load_data",
        artifacts,
        ("user_submit_files",),
        ("len(raw_dataset) > 0", "raw_dataset.shape[1] > 0"),
    )


def playbook(
    supervised: bool, target: str | None = None, asks: bool = False, files: int = 1
) -> tuple[StagePlay, ...]:
    """All stages, in order. ``target`` (once known) sharpens acceptance criteria; ``asks``
    (the problem asks questions) adds ``final_answers`` to the summary; ``files`` > 1 reads
    and joins several files."""
    loading = _loading(files)
    integrity = StepPlay(
        "integrity_checks",
        "Checking the data",
        "Audit types, missing values, duplicates, constant and ID-like columns, numbers stored "
        "as text and dates. Acceptance: integrity_report is a dict.",
        "integrity_checks",
        (("integrity_report", "dict of integrity findings"),),
        ("raw_dataset",),
        ("isinstance(integrity_report, dict)",),
    )
    cleaning = StepPlay(
        "data_cleaning",
        "Cleaning the data",
        "Fix what the audit found, without touching the target's values. "
        "Acceptance: clean_dataset has rows.",
        "clean_data",
        (("clean_dataset", "cleaned DataFrame"), ("cleaning_log", "list of actions taken")),
        ("raw_dataset", "integrity_report"),
        ("len(clean_dataset) > 0", *_target_checks(target)),
    )
    univariate = StepPlay(
        "univariate_analysis",
        "Each variable on its own",
        "Describe each variable: summary statistics, histograms, frequent categories.",
        "univariate_eda",
        (("numeric_summary", "describe() of numeric columns"),),
        ("clean_dataset",),
        ("numeric_summary is not None",),
    )
    relations = StepPlay(
        "relationship_analysis",
        "How the variables relate",
        "Correlations between variables"
        + (" and each feature's association with the target." if supervised else "."),
        "relationship_eda",
        (("correlation_matrix", "correlations of numeric columns"),),
        ("clean_dataset",),
        ("correlation_matrix is not None",),
    )
    stages = [
        StagePlay(
            "data_existence_establishment",
            "The data",
            "Read the data and look at it. Artifacts: raw_dataset.",
            (loading,),
            (("raw_dataset", "DataFrame loaded from assets"),),
            ("user_submit_files",),
        ),
        StagePlay(
            "data_integrity_assessment",
            "Data quality",
            "Audit and clean the data. Artifacts: clean_dataset; Acceptance: no unexplained "
            "missing target values, types fixed.",
            (integrity, cleaning),
            (("clean_dataset", "cleaned DataFrame"),),
            ("raw_dataset",),
        ),
        StagePlay(
            "exploratory_data_analysis",
            "Exploring the data",
            "Understand distributions and relationships, with plots saved to outputs/.",
            (univariate, relations),
            (("numeric_summary", "summary statistics"), ("correlation_matrix", "correlations")),
            ("clean_dataset",),
        ),
    ]
    if supervised:
        selection = StepPlay(
            "model_selection",
            "Comparing models",
            "Compare a baseline, a linear model and gradient boosting with seeded 5-fold "
            "cross-validation on a training split, with leakage guards.",
            "model_selection",
            (
                ("model_comparison", "cv mean/std per model"),
                ("best_model_name", "name of the best model"),
                ("feature_columns", "features used"),
            ),
            ("clean_dataset",),
            ("len(model_comparison) >= 2",),
            "Model-Agent",
        )
        holdout = StepPlay(
            "holdout_evaluation",
            "Testing the best model on held-out data",
            "Fit the best model on the training split and score it on the hold-out test set.",
            "holdout_evaluation",
            (
                ("final_metrics", "task, metric, cv and test scores"),
                ("final_model", "fitted pipeline"),
            ),
            ("model_comparison", "best_model_name", "feature_columns"),
            ("final_metrics['test_score'] == final_metrics['test_score']",),
            "Model-Agent",
        )
        stability = StepPlay(
            "stability_check",
            "How much the score varies",
            "PCS stability: spread of the test score over bootstrap resamples and of the CV "
            "score over seeds.",
            "stability_check",
            (("stability_report", "bootstrap and seed spread"),),
            ("final_model", "final_metrics"),
            ("isinstance(stability_report, dict)",),
            "Model-Agent",
        )
        stages.append(
            StagePlay(
                MODELLING,
                f"Predicting {target}" if target else "Predicting the target",
                "Fit and compare models; report cross-validated and hold-out scores. "
                "Artifacts: final_metrics.",
                (selection, holdout),
                (("final_metrics", "final scores"),),
                ("clean_dataset",),
            )
        )
        stages.append(
            StagePlay(
                "stability_assessment",
                "Stability",
                "Check that the result holds under perturbations of data and seeds.",
                (stability,),
                (("stability_report", "stability figures"),),
                ("final_model", "final_metrics"),
            )
        )
    answers = (("final_answers", "each question of the problem, answered or not"),)
    summary = StepPlay(
        "final_summary",
        "What was found",
        "Write the closing summary with the real numbers"
        + ("; list the problem's questions in final_answers." if asks else "."),
        "final_summary",
        (("analysis_summary", "markdown summary"), *(answers if asks else ())),
        ("clean_dataset",),
        ("len(analysis_summary) > 0", *(("isinstance(final_answers, dict)",) if asks else ())),
        "Report-Agent",
    )
    stages.append(
        StagePlay(
            "communication",
            "Summary",
            "Summarise what was done and found, quoting the numbers.",
            (summary,),
            (("analysis_summary", "closing summary"), *(answers if asks else ())),
        )
    )
    return tuple(stages)


def follow_up_play(n: int, target: str | None = None) -> StagePlay:
    """The stage that answers follow-up ``n`` (``bcc ask``) on the cleaned table: a model of
    ``target`` when it asks for one, else its questions."""
    answers = (("final_answers", "the earlier answers and the follow-up's"),)
    if target:
        step = StepPlay(
            f"model_follow_up_{n}",
            f"A model of {target}",
            f"Cross-validate a model of {target} on clean_dataset against a baseline and add "
            "its score to final_answers. Acceptance: follow_up_model holds the scores.",
            "follow_up_model",
            (("follow_up_model", "the follow-up model's scores"), *answers),
            ("clean_dataset",),
            (f"follow_up_model['target'] == {target!r}", "isinstance(final_answers, dict)"),
            "Model-Agent",
        )
    else:
        step = StepPlay(
            f"answer_follow_up_{n}",
            "The follow-up's answer",
            "Answer the follow-up from clean_dataset and add it to final_answers, keeping the "
            "earlier answers. Acceptance: final_answers is a dict.",
            "follow_up_answers",
            answers,
            ("clean_dataset",),
            ("isinstance(final_answers, dict)",),
            "Report-Agent",
        )
    return StagePlay(
        f"follow_up_{n}",
        f"Follow-up {n}",
        "Answer the follow-up question from the cleaned table, without redoing earlier stages.",
        (step,),
        answers,
        ("clean_dataset",),
    )
