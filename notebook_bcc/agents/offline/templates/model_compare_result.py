
try:
    _bcc_metric = "accuracy" if scoring == "accuracy" else "R²"
    _bcc_ok = {
        n: v for n, v in model_comparison.items() if v.get("cv_mean") is not None and v["cv_mean"] == v["cv_mean"]
    }
    _bcc_base = next((n for n in model_comparison if n.startswith("dummy")), None)
    _bcc_best = model_comparison[best_model_name]
    _bcc_score = f"{_bcc_fmt(_bcc_best['cv_mean'])} ± {_bcc_fmt(_bcc_best['cv_std'])}"
    _bcc_others = [f"{n} {_bcc_fmt(v['cv_mean'])}" for n, v in _bcc_ok.items() if n not in (best_model_name, _bcc_base)]
    if best_model_name == _bcc_base:
        _bcc_text = f"no model beats the baseline {best_model_name}, whose {cv.get_n_splits()}-fold {_bcc_metric} is {_bcc_score}"
    else:
        _bcc_text = f"{best_model_name} has the best {cv.get_n_splits()}-fold {_bcc_metric}, {_bcc_score}, against " + (
            f"{_bcc_fmt(_bcc_ok[_bcc_base]['cv_mean'])} for the baseline" if _bcc_base in _bcc_ok else "a baseline that failed"
        )
    if _bcc_others:
        _bcc_text += f" ({'; '.join(_bcc_others)})"
    _bcc_failed = [n for n in model_comparison if n not in _bcc_ok]
    if _bcc_failed:
        _bcc_text += f"; failed: {_bcc_names(_bcc_failed)}"
    _bcc_text += f"; {len(X_train)} training rows, {_bcc_count(len(feature_columns), 'feature')}"
    if dropped_features:
        _bcc_text += f", {_bcc_count(len(dropped_features), 'column')} excluded ({_bcc_names(dropped_features, 3)})"
except Exception as exc:
    _bcc_text = f"best model {best_model_name} (summary line failed: {type(exc).__name__})"
_bcc_result(_bcc_text + ".")
