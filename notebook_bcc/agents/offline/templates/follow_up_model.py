from sklearn.compose import ColumnTransformer
from sklearn.dummy import DummyClassifier, DummyRegressor
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import KFold, StratifiedKFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

# A model of another target, asked as a follow-up: the cleaned table, one cross-validated
# linear pipeline against a baseline that ignores the features. Its score is the follow-up's
# answer; final_metrics stays the run's own model's.
_bcc_target, _bcc_task = __TARGET__, __TASK__
_bcc_rows = clean_dataset.dropna(subset=[_bcc_target])
_bcc_ids = set((globals().get("integrity_report") or {}).get("id_like_columns", []))
_bcc_x = _bcc_rows.drop(columns=[c for c in [_bcc_target, *_bcc_ids] if c in _bcc_rows.columns])
_bcc_y = _bcc_rows[_bcc_target]
_bcc_numeric = list(_bcc_x.select_dtypes("number").columns)
_bcc_prepare = ColumnTransformer([
    ("numbers", make_pipeline(SimpleImputer(strategy="median"), StandardScaler()), _bcc_numeric),
    ("categories", make_pipeline(SimpleImputer(strategy="most_frequent"), OneHotEncoder(handle_unknown="ignore")),
     [c for c in _bcc_x.columns if c not in _bcc_numeric]),
])
_bcc_classify = _bcc_task == "classification"
_bcc_cv = (StratifiedKFold(5, shuffle=True, random_state=seed) if _bcc_classify
           else KFold(5, shuffle=True, random_state=seed))
_bcc_scoring = "accuracy" if _bcc_classify else "r2"
_bcc_model = LogisticRegression(max_iter=2000) if _bcc_classify else Ridge()
_bcc_base = DummyClassifier(strategy="most_frequent") if _bcc_classify else DummyRegressor()
_bcc_scores = cross_val_score(make_pipeline(_bcc_prepare, _bcc_model), _bcc_x, _bcc_y, cv=_bcc_cv, scoring=_bcc_scoring)
_bcc_baseline = cross_val_score(make_pipeline(_bcc_prepare, _bcc_base), _bcc_x, _bcc_y, cv=_bcc_cv, scoring=_bcc_scoring)
follow_up_model = {
    "target": _bcc_target, "task": _bcc_task, "metric": _bcc_scoring,
    "model": type(_bcc_model).__name__, "rows": int(len(_bcc_rows)), "features": list(_bcc_x.columns),
    "cv_mean": round(float(_bcc_scores.mean()), 4), "cv_std": round(float(_bcc_scores.std()), 4),
    "baseline_score": round(float(_bcc_baseline.mean()), 4),
}
_bcc_text = (f"{follow_up_model['model']} for `{_bcc_target}` on {len(_bcc_rows):,} rows: {_bcc_scoring} "
             f"{follow_up_model['cv_mean']:.4f} ± {follow_up_model['cv_std']:.4f} in 5-fold cross-validation, "
             f"against {follow_up_model['baseline_score']:.4f} for a baseline that ignores the features")
final_answers = dict(globals().get("final_answers") or {})  # the earlier answers stay
for _bcc_q, _bcc_names in __QUESTIONS__:
    final_answers[_bcc_q] = {
        "value": follow_up_model["cv_mean"], "text": _bcc_text,
        "values": {n: follow_up_model.get(n) for n in _bcc_names or ("cv_mean", "cv_std", "baseline_score")},
    }
    if "cv_std" in final_answers[_bcc_q]["values"] and len(_bcc_scores) > 1:
        # cv_std is numpy's .std() (ddof=0); the sample standard deviation is the other reading
        final_answers[_bcc_q]["readings"] = [{
            "reading": "cv_std as the sample standard deviation of the fold scores (ddof=1); "
                       "the headline's is the population one (numpy .std(), ddof=0)",
            "values": {"cv_std": round(float(_bcc_scores.std(ddof=1)), 4)}}]
print(_bcc_text)
