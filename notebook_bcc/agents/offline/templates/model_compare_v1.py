
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
