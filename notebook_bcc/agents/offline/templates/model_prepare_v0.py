
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
KEEP = _bcc_columns(__KEEP__, X_all.columns)  # problem.md says: keep, whatever the guards find
for _c in _bcc_columns(__DROP__, X_all.columns):
    X_all = X_all.drop(columns=[_c])
    dropped_features[_c] = "listed under drop: in problem.md"
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
    if _reason and _c not in KEEP:
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

# A feature that predicts the target almost perfectly on its own is a leak until shown
# otherwise: each feature alone, in a depth-2 tree, cross-validated on the training part only.
single_feature_scores = _bcc_single_feature_scores(X_train, y_train, TASK, SEED)
for _c, _s in single_feature_scores.items():
    if _s >= 0.98 and _c not in KEEP:
        dropped_features[_c] = (
            f"predicts the target almost perfectly on its own ({'accuracy' if TASK == 'classification' else 'R²'} "
            f"{_s:.3f} in 3-fold CV of a depth-2 tree): probable leakage; name it under keep: to use it"
        )
if any(c in dropped_features for c in feature_columns):
    num_features = [c for c in num_features if c not in dropped_features]
    cat_features = [c for c in cat_features if c not in dropped_features]
    feature_columns = num_features + cat_features
    if not feature_columns:
        raise ValueError(f"No usable feature columns left after the leakage guards: {dropped_features}")
    X_all, X_train, X_test = X_all[feature_columns], X_train[feature_columns], X_test[feature_columns]

print(f"{len(feature_columns)} features ({len(num_features)} numeric, {len(cat_features)} categorical)")
print(f"train {X_train.shape}, test {X_test.shape}; split {'stratified' if _stratify is not None else 'random'}")
if _watch:
    print(f"Kept, but strongly correlated with the target (check they are known before the outcome): {_watch}")
if dropped_features:
    print("Excluded columns:")
    for _c, _why in dropped_features.items():
        print(f"  {_c}: {_why}")
