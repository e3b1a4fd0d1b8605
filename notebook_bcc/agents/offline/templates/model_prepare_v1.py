
_data = clean_dataset.dropna(subset=[TARGET])
y_all = pd.to_numeric(_data[TARGET], errors="coerce") if TASK == "regression" else _data[TARGET].astype(str)
_data, y_all = _data.loc[y_all.notna()], y_all.loc[y_all.notna()]
_ids = set((globals().get("integrity_report") or {}).get("id_like_columns", []))
X_all = _data.drop(columns=[TARGET]).select_dtypes(include="number").astype("float64")
dropped_features = {c: "ID-like" for c in X_all.columns if c in _ids}
dropped_features.update({c: "constant" for c in X_all.columns if X_all[c].nunique() <= 1})
dropped_features.update({c: "listed under drop: in problem.md" for c in _bcc_columns(__DROP__, X_all.columns)})
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
