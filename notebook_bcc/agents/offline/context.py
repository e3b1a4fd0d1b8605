"""What a recipe is given (``RecipeContext``) and what it returns (``Cell``)."""

from __future__ import annotations

from dataclasses import dataclass

from notebook_bcc.inputs.questions import Question

__all__ = ["Cell", "RecipeContext"]


@dataclass(frozen=True)
class Cell:
    kind: str  # "text" (markdown) | "code"
    content: str


@dataclass(frozen=True)
class RecipeContext:
    target: str | None
    task: str  # "classification" | "regression" | "eda"
    seed: int = 42
    variant: int = 0
    questions: tuple[Question, ...] = ()  # the problem's questions (final_answers keys)
    drop: tuple[str, ...] = ()  # front matter drop: never features
    keep: tuple[str, ...] = ()  # front matter keep: features whatever the leakage guards say
    files: int = 1  # how many data files were submitted (several: each is read, then joined)
    join: bool = False  # the problem asks to join the files
    join_on: str | None = None  # the key it names
    sheet: str | None = None  # front matter sheet: the Excel sheet to read
    family: str = ""  # a fork's branch of the model comparison: "linear" | "boosting" | ""
