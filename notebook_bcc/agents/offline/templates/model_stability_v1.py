
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
_bcc_bootstrap_scores = np.asarray(_boot, dtype=float)  # the answers' other reading of the percentiles
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
