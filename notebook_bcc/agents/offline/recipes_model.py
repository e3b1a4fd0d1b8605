"""Modelling code recipes: feature preparation, model selection, hold-out, stability.

Builders return ``(markdown, code template)`` pairs; :mod:`recipes` fills the placeholders and
wraps them into cells. Pure text: nothing here imports pandas or scikit-learn.
"""

from __future__ import annotations

from notebook_bcc.agents.offline.context import RecipeContext
from notebook_bcc.agents.offline.recipes_data import TARGET_SNIPPET

Pairs = list[tuple[str, str]]

_NO_TARGET = r"""
feature_columns, model_comparison, best_model_name = [], {}, None
final_model, final_metrics, stability_report = None, None, None
print("Result: no target column was given, so modelling is skipped (EDA-only problem).")
"""

# Rebuilds the CV splitter used in model selection for a given seed.
CV_SNIPPET = r"""
def _bcc_cv(seed):
    n_splits = int(max(2, min(5, len(y_train))))
    if TASK == "classification" and int(y_train.value_counts().min()) >= n_splits:
        return StratifiedKFold(n_splits=n_splits, shuffle=True, random_state=seed)
    return KFold(n_splits=n_splits, shuffle=True, random_state=seed)
"""


# Closing result line of the model comparison cell (both variants).
COMPARE_RESULT = r"""
try:
    _bcc_metric = "accuracy" if scoring == "accuracy" else "R²"
    _bcc_ok = {
        n: v for n, v in model_comparison.items() if v.get("cv_mean") is not None and v["cv_mean"] == v["cv_mean"]
    }
    _bcc_base = next((n for n in model_comparison if n.startswith("dummy")), None)
    _bcc_best = model_comparison[best_model_name]
    _bcc_score = f"{_bcc_fmt(_bcc_best['cv_mean'])} ± {_bcc_fmt(_bcc_best['cv_std'])}"
    _bcc_others = [f"{n} {_bcc_fmt(v['cv_mean'])}" for n, v in _bcc_ok.items() if n not in (best_model_name, _bcc_base)]
    if best_model_name == _bcc_base:
        _bcc_text = f"no model beats the baseline {best_model_name}, whose {cv.get_n_splits()}-fold {_bcc_metric} is {_bcc_score}"
    else:
        _bcc_text = f"{best_model_name} has the best {cv.get_n_splits()}-fold {_bcc_metric}, {_bcc_score}, against " + (
            f"{_bcc_fmt(_bcc_ok[_bcc_base]['cv_mean'])} for the baseline" if _bcc_base in _bcc_ok else "a baseline that failed"
        )
    if _bcc_others:
        _bcc_text += f" ({'; '.join(_bcc_others)})"
    _bcc_failed = [n for n in model_comparison if n not in _bcc_ok]
    if _bcc_failed:
        _bcc_text += f"; failed: {_bcc_names(_bcc_failed)}"
    _bcc_text += f"; {len(X_train)} training rows, {_bcc_count(len(feature_columns), 'feature')}"
    if dropped_features:
        _bcc_text += f", {_bcc_count(len(dropped_features), 'column')} excluded ({_bcc_names(dropped_features, 3)})"
except Exception as exc:
    _bcc_text = f"best model {best_model_name} (summary line failed: {type(exc).__name__})"
_bcc_result(_bcc_text + ".")
"""

PREPARE_V0 = r"""
from sklearn.model_selection import train_test_split

TASK = __TASK__  # the modelling task, decided from the cleaned column types
_y = clean_dataset[TARGET]
if TASK == "regression":
    _y = pd.to_numeric(_y, errors="coerce")
_keep = _y.notna()
y_all = _y.loc[_keep]
if TASK == "classification":
    if pd.api.types.is_float_dtype(y_all) and bool((y_all % 1 == 0).all()):
        y_all = y_all.astype("int64")  # 1.0, 2.0, ... are class codes
    elif not pd.api.types.is_integer_dtype(y_all):
        y_all = y_all.astype(str)  # text, booleans, or non-integral numbers: labels as text
X_all = clean_dataset.loc[_keep].drop(columns=[TARGET])
dropped_features = {}
_id_cols = set((globals().get("integrity_report") or {}).get("id_like_columns", []))

for _c in list(X_all.columns):
    if pd.api.types.is_datetime64_any_dtype(X_all[_c]):
        _d = X_all[_c]
        _parts = {"year": _d.dt.year, "month": _d.dt.month, "dayofyear": _d.dt.day_of_year}
        if (_d.dt.hour.fillna(0) != 0).any():
            _parts["hour"] = _d.dt.hour
        for _part, _values in _parts.items():
            if _values.nunique() > 1:
                X_all[f"{_c}_{_part}"] = _values.astype("float64")
        X_all = X_all.drop(columns=[_c])
        dropped_features[_c] = "datetime: replaced by numeric year/month/day-of-year parts"

_y_numeric = pd.to_numeric(y_all, errors="coerce") if pd.api.types.is_numeric_dtype(y_all) else None
_y_levels = y_all.nunique()
_watch = {}


def _bcc_leakage_reason(name, s):
    # why a candidate feature must not be used (None when it may be used)
    n_unique, n_present = s.nunique(), int(s.notna().sum())
    is_number = pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)
    if name in _id_cols:
        return "ID-like column"
    if n_present == 0 or n_unique <= 1:
        return "empty or constant"
    if is_number and _y_numeric is not None:
        r = s.astype("float64").corr(_y_numeric)
        if pd.notna(r) and abs(r) > 0.98:
            return f"near-perfect correlation with the target (r={r:.3f}): leakage"
        if pd.notna(r) and abs(r) > 0.9:
            _watch[name] = round(float(r), 3)
    elif not is_number and n_unique > 50:
        return "free text / high cardinality" if n_unique > 0.5 * n_present else "more than 50 categories"
    if n_unique <= 50 and _y_levels <= 50 and n_present >= 0.5 * len(s):
        pair = pd.DataFrame({"f": s, "t": y_all}).dropna()
        if (len(pair) and pair["f"].nunique() > 1
                and pair.groupby("f", sort=False)["t"].nunique().max() == 1
                and pair.groupby("t", sort=False)["f"].nunique().max() == 1):
            return "maps one-to-one onto the target: leakage"
    return None


for _c in list(X_all.columns):
    _reason = _bcc_leakage_reason(_c, X_all[_c])
    if _reason:
        dropped_features[_c] = _reason

num_features = [
    c for c in X_all.columns if c not in dropped_features
    and pd.api.types.is_numeric_dtype(X_all[c]) and not pd.api.types.is_bool_dtype(X_all[c])
]
cat_features = [c for c in X_all.columns if c not in dropped_features and c not in num_features]
feature_columns = num_features + cat_features
if not feature_columns:
    raise ValueError(f"No usable feature columns left after the leakage guards: {dropped_features}")
X_all = X_all[feature_columns].copy()
for _c in num_features:
    X_all[_c] = X_all[_c].astype("float64")
for _c in cat_features:
    X_all[_c] = X_all[_c].map(lambda v: np.nan if pd.isna(v) else str(v)).astype(object)

_stratify = None
if TASK == "classification":
    _counts = y_all.value_counts()
    if len(_counts) > 1 and _counts.min() >= 2:
        _stratify = y_all
try:
    X_train, X_test, y_train, y_test = train_test_split(
        X_all, y_all, test_size=0.2, random_state=SEED, stratify=_stratify)
except ValueError as exc:
    print(f"Stratified split impossible ({exc}); using a plain random split.")
    _stratify = None
    X_train, X_test, y_train, y_test = train_test_split(X_all, y_all, test_size=0.2, random_state=SEED)

print(f"{len(feature_columns)} features ({len(num_features)} numeric, {len(cat_features)} categorical)")
print(f"train {X_train.shape}, test {X_test.shape}; split {'stratified' if _stratify is not None else 'random'}")
if _watch:
    print(f"Kept, but strongly correlated with the target (check they are known before the outcome): {_watch}")
if dropped_features:
    print("Excluded columns:")
    for _c, _why in dropped_features.items():
        print(f"  {_c}: {_why}")
"""

COMPARE_V0 = (
    r"""
import warnings

from sklearn.compose import ColumnTransformer
from sklearn.dummy import DummyClassifier, DummyRegressor
from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import KFold, StratifiedKFold, cross_val_score
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder, StandardScaler
from threadpoolctl import threadpool_limits

# One thread per native pool: on small tables (and shared machines) this is faster and
# fully reproducible; fits stay sequential (n_jobs=1).
threadpool_limits(limits=1)
_num = [c for c in feature_columns if pd.api.types.is_float_dtype(X_train[c])]
_cat = [c for c in feature_columns if c not in _num]
_linear_prep = ColumnTransformer([
    ("num", make_pipeline(SimpleImputer(strategy="median"), StandardScaler()), _num),
    ("cat", make_pipeline(SimpleImputer(strategy="most_frequent"), OneHotEncoder(handle_unknown="ignore")), _cat),
])
# Gradient boosting handles missing numbers natively; categories are ordinal-encoded.
_tree_prep = ColumnTransformer([
    ("num", "passthrough", _num),
    ("cat", OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=-1), _cat),
])
if TASK == "classification":
    candidate_models = {
        "dummy_most_frequent": DummyClassifier(strategy="most_frequent"),
        "logistic_regression": Pipeline([("prep", _linear_prep), ("model", LogisticRegression(max_iter=2000))]),
        "hist_gradient_boosting": Pipeline([("prep", _tree_prep), ("model", HistGradientBoostingClassifier(random_state=SEED))]),
    }
    scoring = "accuracy"
else:
    candidate_models = {
        "dummy_mean": DummyRegressor(strategy="mean"),
        "ridge": Pipeline([("prep", _linear_prep), ("model", Ridge(alpha=1.0))]),
        "hist_gradient_boosting": Pipeline([("prep", _tree_prep), ("model", HistGradientBoostingRegressor(random_state=SEED))]),
    }
    scoring = "r2"
"""
    + CV_SNIPPET
    + r"""
cv = _bcc_cv(SEED)
if TASK == "classification" and isinstance(cv, KFold):
    print(f"Rare classes (smallest has {int(y_train.value_counts().min())} training rows): using shuffled KFold.")
model_comparison, _raw_means = {}, {}
for _name, _estimator in candidate_models.items():
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _scores = cross_val_score(_estimator, X_train, y_train, cv=cv, scoring=scoring, error_score=np.nan, n_jobs=1)
    except ValueError as exc:  # raised when every fold failed
        print(f"{_name}: all folds failed ({str(exc).strip().splitlines()[-1][:200]})")
        _scores = np.full(cv.get_n_splits(), np.nan)
    _valid = _scores[np.isfinite(_scores)]
    _raw_means[_name] = float(_valid.mean()) if len(_valid) else None
    model_comparison[_name] = {
        "cv_mean": round(float(_valid.mean()), 4) if len(_valid) else None,
        "cv_std": round(float(_valid.std()), 4) if len(_valid) else None,
        "failed_folds": int(len(_scores) - len(_valid)),
    }
_ranked = [n for n in candidate_models if _raw_means[n] is not None]
if not _ranked:
    raise RuntimeError("Every candidate model failed in cross-validation.")
# ties go to the simpler model: linear before boosting, anything before the baseline
best_model_name = max(
    _ranked, key=lambda n: (round(_raw_means[n], 6), not n.startswith("dummy"), n != "hist_gradient_boosting")
)
print(f"{cv.get_n_splits()}-fold {type(cv).__name__} on the training part, metric: {scoring}")
display(pd.DataFrame(model_comparison).T.sort_values("cv_mean", ascending=False))
print(f"best model: {best_model_name}")
"""
    + COMPARE_RESULT
)

PREPARE_V1 = (
    r"""
import re
import warnings

from sklearn.model_selection import train_test_split
"""
    + TARGET_SNIPPET.replace("FRAME", "clean_dataset")
    + r"""
_data = clean_dataset.dropna(subset=[TARGET])
y_all = pd.to_numeric(_data[TARGET], errors="coerce") if TASK == "regression" else _data[TARGET].astype(str)
_data, y_all = _data.loc[y_all.notna()], y_all.loc[y_all.notna()]
_ids = set((globals().get("integrity_report") or {}).get("id_like_columns", []))
X_all = _data.drop(columns=[TARGET]).select_dtypes(include="number").astype("float64")
dropped_features = {c: "ID-like" for c in X_all.columns if c in _ids}
dropped_features.update({c: "constant" for c in X_all.columns if X_all[c].nunique() <= 1})
if TASK == "regression":
    for c in X_all.columns:
        if c not in dropped_features and abs(X_all[c].corr(y_all)) > 0.98:
            dropped_features[c] = "near-perfect correlation with target"
feature_columns = [c for c in X_all.columns if c not in dropped_features]
if not feature_columns:
    raise ValueError("No numeric features available for the defensive model.")
X_all = X_all[feature_columns]
X_train, X_test, y_train, y_test = train_test_split(X_all, y_all, test_size=0.2, random_state=SEED)
print(f"numeric-only features: {feature_columns}")
print(f"train {X_train.shape}, test {X_test.shape}; excluded: {dropped_features}")
"""
)

COMPARE_V1 = (
    r"""
import warnings

from sklearn.dummy import DummyClassifier, DummyRegressor
from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import KFold, StratifiedKFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

TASK = __TASK__
SEED = __SEED__
threadpool_limits(limits=1)
_clf = TASK == "classification"
candidate_models = {
    "dummy": DummyClassifier() if _clf else DummyRegressor(),
    "linear": make_pipeline(SimpleImputer(strategy="median"), StandardScaler(),
                            LogisticRegression(max_iter=2000) if _clf else Ridge()),
    "hist_gradient_boosting": make_pipeline(SimpleImputer(strategy="median"),
        HistGradientBoostingClassifier(random_state=SEED) if _clf else HistGradientBoostingRegressor(random_state=SEED)),
}
scoring = "accuracy" if _clf else "r2"
cv = KFold(n_splits=int(max(2, min(5, len(y_train)))), shuffle=True, random_state=SEED)
model_comparison = {}
for _name, _estimator in candidate_models.items():
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _scores = cross_val_score(_estimator, X_train, y_train, cv=cv, scoring=scoring, error_score=np.nan)
        _scores = _scores[np.isfinite(_scores)]
        model_comparison[_name] = {"cv_mean": round(float(_scores.mean()), 4), "cv_std": round(float(_scores.std()), 4)}
    except Exception as exc:
        print(f"{_name} failed: {exc}")
_ok = {k: v for k, v in model_comparison.items() if v["cv_mean"] == v["cv_mean"]}
best_model_name = max(_ok, key=lambda k: _ok[k]["cv_mean"])
print(pd.DataFrame(model_comparison).T.to_string())
print("best model:", best_model_name)
"""
    + COMPARE_RESULT
)


def model_selection(ctx: RecipeContext) -> Pairs:
    """Feature preparation with leakage guards, hold-out split, and CV model comparison."""
    if not ctx.target:
        return [("There is no target column, so no model is selected.", _NO_TARGET)]
    metric = "accuracy" if ctx.task == "classification" else "R²"
    if ctx.variant:
        return [
            (
                f"Prepare a defensive feature set for predicting `{ctx.target}`: numeric columns "
                "only (ID-like and constant ones removed), then a seeded 80/20 split.",
                PREPARE_V1,
            ),
            (
                "Compare a baseline, a linear model and gradient boosting, each behind a median "
                f"imputer, with shuffled 5-fold cross-validation ({metric}) on the training part.",
                COMPARE_V1,
            ),
        ]
    return [
        (
            f"Prepare the features for predicting `{ctx.target}` ({ctx.task}). Leakage guards "
            "exclude ID-like columns, columns almost perfectly correlated with the target "
            "(|r| > 0.98), categories that map one-to-one onto it, and free-text columns; dates "
            "become numeric year/month/day-of-year parts. 20% of the rows are held out first "
            "(seeded; stratified when every class has at least two rows) as "
            "`X_test`/`y_test` and stay untouched until the final evaluation.",
            PREPARE_V0,
        ),
        (
            "Compare three models with seeded 5-fold cross-validation on the training part "
            f"(metric: {metric}): a baseline that ignores the features, a regularised linear "
            "model (median imputation, scaling, one-hot categories) and histogram gradient "
            "boosting (native missing values, ordinal categories). Stratified folds are used "
            "when every class has at least five training rows. Results go to "
            "`model_comparison`; the best mean score names `best_model_name`.",
            COMPARE_V0,
        ),
    ]


# Closing result line of the hold-out cell (both variants); ``_bcc_extra`` adds the variant's
# own measurements.
HOLDOUT_RESULT = r"""
try:
    _bcc_metric = "accuracy" if final_metrics["metric"] == "accuracy" else "R²"
    _bcc_text = (
        f"on the {len(y_test)} hold-out rows {final_metrics['model']} scores {_bcc_metric} "
        f"{_bcc_fmt(final_metrics['test_score'])} (CV {_bcc_fmt(final_metrics['cv_mean'])}), "
    )
    if str(final_metrics["model"]).startswith("dummy"):
        _bcc_text += "so the chosen model is the baseline itself: no model beat it in cross-validation"
    else:
        _bcc_text += f"against {_bcc_fmt(final_metrics['baseline_score'])} for the baseline"
    _bcc_text += "".join(f"; {x}" for x in _bcc_extra)
except Exception as exc:
    _bcc_text = f"hold-out metrics {final_metrics} (summary line failed: {type(exc).__name__})"
_bcc_result(_bcc_text + ".")
"""

HOLDOUT_V0 = (
    r"""
import json
import warnings

from sklearn.base import clone
from sklearn.inspection import permutation_importance
from sklearn.metrics import accuracy_score, balanced_accuracy_score, mean_absolute_error, r2_score

_score = accuracy_score if TASK == "classification" else r2_score
warnings.filterwarnings("ignore", message="y_pred contains classes not in y_true")
final_model = clone(candidate_models[best_model_name]).fit(X_train, y_train)
y_pred = final_model.predict(X_test)
_baseline_name = next(n for n in candidate_models if n.startswith("dummy"))
_baseline = clone(candidate_models[_baseline_name]).fit(X_train, y_train)
final_metrics = {
    "task": TASK,
    "metric": "accuracy" if TASK == "classification" else "r2",
    "cv_mean": model_comparison[best_model_name]["cv_mean"],
    "cv_std": model_comparison[best_model_name]["cv_std"],
    "test_score": round(float(_score(y_test, y_pred)), 4),
    "baseline_score": round(float(_score(y_test, _baseline.predict(X_test))), 4),
    "model": str(best_model_name),
}
print(json.dumps(final_metrics, indent=2))

_fig, _ax = plt.subplots(figsize=(5.5, 4.5))
if TASK == "classification":
    _bal = balanced_accuracy_score(y_test, y_pred)
    print(f"balanced accuracy: {_bal:.4f}")
    _labels = sorted(pd.unique(pd.concat([pd.Series(y_test), pd.Series(y_pred)])), key=str)
    _cm = pd.crosstab(pd.Series(np.asarray(y_test), name="actual"), pd.Series(y_pred, name="predicted"))
    _cm = _cm.reindex(index=_labels, columns=_labels, fill_value=0)
    if len(_labels) <= 12:
        display(_cm)
    _ax.imshow(_cm.to_numpy(), cmap="Blues")
    _ax.set_xticks(range(len(_labels)), [str(v)[:12] for v in _labels], rotation=45)
    _ax.set_yticks(range(len(_labels)), [str(v)[:12] for v in _labels])
    _ax.set_xlabel("predicted")
    _ax.set_ylabel("actual")
    _ax.set_title("Hold-out confusion matrix")
else:
    _mae = mean_absolute_error(y_test, y_pred)
    _rmse = float(np.sqrt(np.mean((np.asarray(y_test, dtype=float) - y_pred) ** 2)))
    print(f"MAE: {_mae:.4g}   RMSE: {_rmse:.4g}")
    _ax.scatter(y_test, y_pred, s=10, alpha=0.6)
    _lims = [float(min(np.min(y_test), np.min(y_pred))), float(max(np.max(y_test), np.max(y_pred)))]
    _ax.plot(_lims, _lims, color="grey", lw=1)
    _ax.set_xlabel("actual")
    _ax.set_ylabel("predicted")
    _ax.set_title("Hold-out predictions")
_fig.savefig("outputs/holdout.png", dpi=100, bbox_inches="tight")
plt.show()
plt.close(_fig)

_sample = X_test.sample(n=min(len(X_test), 2000), random_state=SEED)
_imp = permutation_importance(final_model, _sample, y_test.loc[_sample.index], n_repeats=5,
                              random_state=SEED, scoring=final_metrics["metric"], n_jobs=1)
feature_importance = pd.DataFrame(
    {"importance_mean": _imp.importances_mean, "importance_std": _imp.importances_std},
    index=list(X_test.columns),
).sort_values("importance_mean", ascending=False)
print("Permutation importance on the hold-out set (top 10):")
display(feature_importance.head(10).round(4))

if TASK == "classification":
    _bcc_extra = [f"balanced accuracy {_bal:.3f}"]
else:
    _bcc_extra = [f"MAE {_mae:.4g}, RMSE {_rmse:.4g}"]
if len(feature_importance):
    _bcc_extra.append(
        f"it relies most on {feature_importance.index[0]} "
        f"(permutation importance {feature_importance['importance_mean'].iloc[0]:.3f})"
    )
"""
    + HOLDOUT_RESULT
)

HOLDOUT_V1 = (
    r"""
import json

from sklearn.base import clone
from sklearn.metrics import accuracy_score, r2_score

TASK = __TASK__
_score = accuracy_score if TASK == "classification" else r2_score
final_model = clone(candidate_models[best_model_name]).fit(X_train, y_train)
_base = clone(candidate_models[next(k for k in candidate_models if k.startswith("dummy"))]).fit(X_train, y_train)
final_metrics = {
    "task": TASK,
    "metric": "accuracy" if TASK == "classification" else "r2",
    "cv_mean": float(model_comparison[best_model_name]["cv_mean"]),
    "cv_std": float(model_comparison[best_model_name]["cv_std"]),
    "test_score": round(float(_score(y_test, final_model.predict(X_test))), 4),
    "baseline_score": round(float(_score(y_test, _base.predict(X_test))), 4),
    "model": str(best_model_name),
}
print(json.dumps(final_metrics, indent=2))
_bcc_extra = []
"""
    + HOLDOUT_RESULT
)


def holdout_evaluation(ctx: RecipeContext) -> Pairs:
    """Refit the chosen model and score it once on the untouched hold-out set."""
    if not ctx.target:
        return [("There is no target column, so there is nothing to evaluate.", _NO_TARGET)]
    if ctx.variant:
        return [
            (
                "Refit the selected model on the training part and score it once on the hold-out "
                "set, next to the baseline that ignores the features.",
                HOLDOUT_V1,
            )
        ]
    return [
        (
            "Refit the best cross-validated model on the whole training part as `final_model` "
            "and score it once on the untouched 20% hold-out set, next to the baseline. "
            "`final_metrics` records the CV and test scores; a confusion matrix or an "
            "actual-vs-predicted plot goes to `outputs/holdout.png`, and permutation importance "
            "on the hold-out set shows which features the model relies on "
            "(`feature_importance`).",
            HOLDOUT_V0,
        )
    ]


# Closing result line of the stability cell (both variants), read off ``stability_report``.
STABILITY_RESULT = r"""
try:
    _bcc_st = stability_report
    _bcc_metric = "accuracy" if _bcc_st["metric"] == "accuracy" else "R²"
    if _bcc_st.get("bootstrap_mean") is not None:
        _bcc_text = (
            f"over {_bcc_st['bootstrap_resamples']} bootstrap resamples the hold-out {_bcc_metric} is "
            f"{_bcc_fmt(_bcc_st['bootstrap_mean'])} (5th–95th percentile {_bcc_fmt(_bcc_st['bootstrap_p05'])} "
            f"to {_bcc_fmt(_bcc_st['bootstrap_p95'])})"
        )
    else:
        _bcc_text = "no bootstrap resample of the hold-out set could be scored"
    if _bcc_st.get("cv_seed_spread") is not None:
        _bcc_text += (
            f"; across {len(_bcc_st['cv_mean_by_seed'])} seeds the CV mean varies by {_bcc_fmt(_bcc_st['cv_seed_spread'])}"
        )
    else:
        _bcc_text += "; cross-validation could not be repeated across seeds"
    _bcc_spread, _bcc_sd = _bcc_st.get("cv_seed_spread"), _bcc_st.get("bootstrap_std")
    if _bcc_spread is not None and _bcc_sd is not None and _bcc_spread == _bcc_spread and _bcc_sd == _bcc_sd:
        _bcc_text += ", so the result is " + ("stable" if _bcc_spread < 0.02 and _bcc_sd < 0.05 else "noticeably variable")
except Exception as exc:
    _bcc_text = f"stability measured (summary line failed: {type(exc).__name__})"
_bcc_result(_bcc_text + ".")
"""

STABILITY_V0 = (
    r"""
import json
import warnings

from sklearn.base import clone
from sklearn.metrics import accuracy_score, r2_score
from sklearn.model_selection import cross_val_score

_score = accuracy_score if TASK == "classification" else r2_score
_rng = np.random.default_rng(SEED)
_truth = np.asarray(y_test)
_pred = np.asarray(final_model.predict(X_test))
_boot = []
for _ in range(20):
    _idx = _rng.integers(0, len(_truth), len(_truth))
    _boot.append(float(_score(_truth[_idx], _pred[_idx])))
_boot = np.array([b for b in _boot if np.isfinite(b)])

_cv_by_seed = {str(SEED): model_comparison[best_model_name]["cv_mean"]}
for _seed in (SEED + 1, SEED + 2):
    _estimator = clone(candidate_models[best_model_name])
    if "model__random_state" in _estimator.get_params():
        _estimator.set_params(model__random_state=_seed)
    # the same kind of folds as in model selection, shuffled with another seed
    _folds = type(cv)(n_splits=cv.get_n_splits(), shuffle=True, random_state=_seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _scores = cross_val_score(_estimator, X_train, y_train, cv=_folds,
                                  scoring=final_metrics["metric"], error_score=np.nan, n_jobs=1)
    _cv_by_seed[str(_seed)] = round(float(np.nanmean(_scores)), 4)
_seed_means = np.array(list(_cv_by_seed.values()), dtype=float)
_has_boot = len(_boot) > 0
stability_report = {
    "metric": final_metrics["metric"],
    "bootstrap_resamples": int(len(_boot)),
    "bootstrap_mean": round(float(_boot.mean()), 4) if _has_boot else None,
    "bootstrap_std": round(float(_boot.std()), 4) if _has_boot else None,
    "bootstrap_p05": round(float(np.percentile(_boot, 5)), 4) if _has_boot else None,
    "bootstrap_p95": round(float(np.percentile(_boot, 95)), 4) if _has_boot else None,
    "cv_mean_by_seed": _cv_by_seed,
    "cv_seed_spread": round(float(_seed_means.max() - _seed_means.min()), 4),
}
print(json.dumps(stability_report, indent=2))
"""
    + STABILITY_RESULT
)

STABILITY_V1 = (
    r"""
import json

from sklearn.base import clone
from sklearn.metrics import accuracy_score, r2_score
from sklearn.model_selection import KFold, cross_val_score

TASK = __TASK__
SEED = __SEED__
_score = accuracy_score if TASK == "classification" else r2_score
_pred = np.asarray(final_model.predict(X_test))
_truth = np.asarray(y_test)
_boot = []
for i in range(20):
    idx = np.random.RandomState(SEED + i).randint(0, len(_truth), len(_truth))
    try:
        _boot.append(float(_score(_truth[idx], _pred[idx])))
    except Exception as exc:
        print(f"bootstrap {i} skipped: {exc}")
_cv = {}
for seed in (SEED, SEED + 1, SEED + 2):
    try:
        s = cross_val_score(clone(candidate_models[best_model_name]), X_train, y_train,
                            cv=KFold(5, shuffle=True, random_state=seed), scoring=final_metrics["metric"])
        _cv[str(seed)] = round(float(np.nanmean(s)), 4)
    except Exception as exc:
        print(f"seed {seed} skipped: {exc}")
stability_report = {
    "metric": final_metrics["metric"],
    "bootstrap_resamples": len(_boot),
    "bootstrap_mean": round(float(np.mean(_boot)), 4) if _boot else None,
    "bootstrap_std": round(float(np.std(_boot)), 4) if _boot else None,
    "bootstrap_p05": round(float(np.percentile(_boot, 5)), 4) if _boot else None,
    "bootstrap_p95": round(float(np.percentile(_boot, 95)), 4) if _boot else None,
    "cv_mean_by_seed": _cv,
    "cv_seed_spread": round(max(_cv.values()) - min(_cv.values()), 4) if _cv else None,
}
print(json.dumps(stability_report, indent=2))
"""
    + STABILITY_RESULT
)


def stability_check(ctx: RecipeContext) -> Pairs:
    """Bootstrap the hold-out score and repeat CV under other seeds."""
    if not ctx.target:
        return [("There is no target column, so there is no model to stress-test.", _NO_TARGET)]
    if ctx.variant:
        return [
            (
                "Check stability with plain loops: 20 bootstrap resamples of the hold-out "
                "predictions and shuffled 5-fold CV under three seeds, each guarded.",
                STABILITY_V1,
            )
        ]
    return [
        (
            "Check how stable the result is (PCS: stability). The hold-out score is recomputed "
            "on 20 bootstrap resamples of the test set (mean, spread, 5th/95th percentiles), and "
            "cross-validation of the chosen model is repeated with two more seeds (new folds and "
            "model randomness). Results go to `stability_report`.",
            STABILITY_V0,
        )
    ]
