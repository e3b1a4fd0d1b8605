"""The offline analyst on every table of ../shared/datasets (issue: offline analyst).

For each dataset of manifest.csv: write a problem.md from its row, run `bcc run` (offline,
with the final verification), and report wall time, stages, cells, failed behaviors, cv_mean
and test_score. For supervised datasets, re-execute the produced notebook and add one cell that
cross-validates scikit-learn's HistGradientBoosting with default settings on the same training
rows, features and folds (categoricals ordinal-encoded), so the two CV means compare directly.

Usage: .venv/bin/python benchmarks/offline_quality.py [--only NAME ...] [--keep DIR]
Prints a markdown table and the count of datasets meeting: exit 0, WORKFLOW_COMPLETED,
verification passed, wall time <= 120 s, cv_mean >= HGB cv_mean - 0.03.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "datasets"
sys.path.insert(0, str(ROOT))
from tests.conftest import problem_text, run_bcc  # noqa: E402

HGB_CELL = """
import json as _j
import numpy as _np
from sklearn.compose import ColumnTransformer as _CT
from sklearn.ensemble import HistGradientBoostingClassifier as _HC, HistGradientBoostingRegressor as _HR
from sklearn.model_selection import KFold as _KF, StratifiedKFold as _SKF, cross_val_score as _cvs
from sklearn.pipeline import make_pipeline as _mp
from sklearn.preprocessing import OrdinalEncoder as _OE
_cat = [c for c in X_train.columns if not pd.api.types.is_numeric_dtype(X_train[c])]
_num = [c for c in X_train.columns if c not in _cat]
_prep = _CT([("cat", _OE(handle_unknown="use_encoded_value", unknown_value=-1, encoded_missing_value=-1), _cat)], remainder="passthrough")
_cls = final_metrics["task"] == "classification"
_model = _mp(_prep, _HC(random_state=42) if _cls else _HR(random_state=42))
_Xh = X_train.copy()
for _c in _cat:
    _Xh[_c] = _Xh[_c].astype("string").astype(object).where(_Xh[_c].notna(), None)
_strat = _cls and int(y_train.value_counts().min()) >= 5
_folds = (_SKF if _strat else _KF)(n_splits=5, shuffle=True, random_state=42)
_s = _cvs(_model, _Xh, y_train, cv=_folds, scoring="accuracy" if _cls else "r2")
print("HGB_RESULT " + _j.dumps({"hgb_cv_mean": round(float(_np.mean(_s)), 4)}))
"""


def hgb_cv(run: Path) -> float | None:
    nb = nbformat.read(run / "notebook.ipynb", as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(HGB_CELL))
    NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(run)}}
    ).execute()
    for out in nb.cells[-1].outputs:
        if out.get("output_type") == "stream" and "HGB_RESULT " in out.get("text", ""):
            return json.loads(out["text"].split("HGB_RESULT ", 1)[1])["hgb_cv_mean"]
    return None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--keep", type=Path, default=None)
    args = parser.parse_args()
    if not (SHARED / "manifest.csv").exists():
        raise SystemExit("../shared/datasets is absent")
    rows = list(csv.DictReader((SHARED / "manifest.csv").read_text(encoding="utf-8").splitlines()))
    if args.only:
        rows = [r for r in rows if r["file"] in args.only]
    base = args.keep or Path(tempfile.mkdtemp(prefix="bcc-quality-"))
    print(
        "| dataset | exit | wall s | stages | cells | failed behaviors | verify | cv_mean | test_score | HGB cv | ok |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    passed = 0
    for row in rows:
        work = base / Path(row["file"]).stem
        work.mkdir(parents=True, exist_ok=True)
        (work / "problem.md").write_text(problem_text(row))
        out = work / "run"
        start = time.perf_counter()
        proc = run_bcc(
            "run", str(work / "problem.md"), str(SHARED / row["file"]), "--out", str(out), "--quiet"
        )
        wall = time.perf_counter() - start
        summary = (
            json.loads((out / "summary.json").read_text())
            if (out / "summary.json").exists()
            else {}
        )
        metrics = summary.get("artifacts", {}).get("final_metrics") or {}
        hgb = hgb_cv(out) if metrics and proc.returncode == 0 else None
        verify = summary.get("verification", {}).get("status", "-")
        ok = (
            proc.returncode == 0
            and summary.get("final_state") == "WORKFLOW_COMPLETED"
            and verify == "passed"
            and wall <= 120
            and (hgb is None or metrics.get("cv_mean", -1e9) >= hgb - 0.03)
        )
        passed += ok
        fmt = lambda v: "-" if v is None else f"{v:.4f}"  # noqa: E731
        print(
            f"| {row['file']} | {proc.returncode} | {wall:.1f} | {len(summary.get('stages', []))} | "
            f"{summary.get('counts', {}).get('cells', '-')} | {summary.get('counts', {}).get('failed_behaviors', '-')} | "
            f"{verify} | {fmt(metrics.get('cv_mean'))} | {fmt(metrics.get('test_score'))} | {fmt(hgb)} | {'yes' if ok else 'NO'} |",
            flush=True,
        )
    print(f"\n{passed} of {len(rows)} datasets meet every target (runs kept in {base})")


if __name__ == "__main__":
    main()
