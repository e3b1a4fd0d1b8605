
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
    "excluded": dict(dropped_features),  # feature columns left out, and why
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
    _ax.set_xlabel(f"predicted {TARGET}")
    _ax.set_ylabel(f"actual {TARGET}")
    _ax.set_title("Hold-out confusion matrix")
else:
    _mae = mean_absolute_error(y_test, y_pred)
    _rmse = float(np.sqrt(np.mean((np.asarray(y_test, dtype=float) - y_pred) ** 2)))
    print(f"MAE: {_mae:.4g}   RMSE: {_rmse:.4g}")
    _ax.scatter(y_test, y_pred, s=10, alpha=0.6)
    _lims = [float(min(np.min(y_test), np.min(y_pred))), float(max(np.max(y_test), np.max(y_pred)))]
    _ax.plot(_lims, _lims, color="grey", lw=1)
    _ax.set_xlabel(f"actual {TARGET}")
    _ax.set_ylabel(f"predicted {TARGET}")
    _ax.set_title("Hold-out predictions")
_bcc_show(_fig, "outputs/holdout.png")

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
