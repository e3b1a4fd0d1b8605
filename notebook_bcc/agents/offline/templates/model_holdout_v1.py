
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
    "excluded": dict(dropped_features),  # feature columns left out, and why
}
print(json.dumps(final_metrics, indent=2))
_bcc_extra = []
