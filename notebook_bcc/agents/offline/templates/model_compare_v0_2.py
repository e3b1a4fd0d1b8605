
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
