
cv = _bcc_cv(SEED)
if TASK == "classification" and isinstance(cv, KFold):
    print(f"Rare classes (smallest has {int(y_train.value_counts().min())} training rows): using shuffled KFold.")
model_comparison, _raw_means, _bcc_fold_scores = {}, {}, {}
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
    _bcc_fold_scores[_name] = _valid
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
