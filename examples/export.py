"""Regenerate the example data files from redistributable package data.

    python examples/export.py

- penguins/penguins.csv   palmerpenguins ``load_penguins()`` (CC0)
- diabetes/diabetes.csv   scikit-learn ``load_diabetes`` (BSD-3), unscaled, readable names
- wine/wine.csv           scikit-learn ``load_wine`` (BSD-3), with a ``cultivar`` column
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent

# Column meanings from scikit-learn's description of the diabetes data set.
DIABETES_NAMES = {
    "s1": "tc_total_cholesterol",
    "s2": "ldl",
    "s3": "hdl",
    "s4": "tch_cholesterol_ratio",
    "s5": "ltg_log_triglycerides",
    "s6": "glu_blood_sugar",
    "bp": "blood_pressure",
    "target": "disease_progression",
}


def export_penguins() -> Path:
    from palmerpenguins import load_penguins

    path = HERE / "penguins" / "penguins.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    load_penguins().to_csv(path, index=False)
    return path


def export_diabetes() -> Path:
    from sklearn.datasets import load_diabetes

    frame = load_diabetes(as_frame=True, scaled=False).frame.rename(columns=DIABETES_NAMES)
    path = HERE / "diabetes" / "diabetes.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(path, index=False)
    return path


def export_wine() -> Path:
    from sklearn.datasets import load_wine

    bunch = load_wine(as_frame=True)
    frame = bunch.frame.drop(columns=["target"])
    frame.insert(0, "cultivar", [f"cultivar_{int(t) + 1}" for t in bunch.target])
    path = HERE / "wine" / "wine.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(path, index=False)
    return path


def main() -> None:
    for export in (export_penguins, export_diabetes, export_wine):
        path = export()
        print(f"wrote {path.relative_to(HERE.parent)}")


if __name__ == "__main__":
    main()
