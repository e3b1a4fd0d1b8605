
try:
    _bcc_metric = "accuracy" if final_metrics["metric"] == "accuracy" else "R²"
    _bcc_text = (
        f"on the {len(y_test)} hold-out rows {final_metrics['model']} scores {_bcc_metric} "
        f"{_bcc_fmt(final_metrics['test_score'])} (CV {_bcc_fmt(final_metrics['cv_mean'])}), "
    )
    if str(final_metrics["model"]).startswith("dummy"):
        _bcc_text += "so the chosen model is the baseline itself: no model beat it in cross-validation"
    else:
        _bcc_text += f"against {_bcc_fmt(final_metrics['baseline_score'])} for the baseline"
    _bcc_gap = final_metrics["test_score"] - final_metrics["cv_mean"]
    if final_metrics["cv_std"] and abs(_bcc_gap) > 2 * final_metrics["cv_std"]:
        _bcc_text += (
            f"; the hold-out score lies {_bcc_fmt(abs(_bcc_gap))} {'above' if _bcc_gap > 0 else 'below'} "
            "the CV mean, more than two CV standard deviations: the split may have been "
            f"{'a lucky' if _bcc_gap > 0 else 'an unlucky'} one"
        )
    _bcc_text += "".join(f"; {x}" for x in _bcc_extra)
except Exception as exc:
    _bcc_text = f"hold-out metrics {final_metrics} (summary line failed: {type(exc).__name__})"
_bcc_result(_bcc_text + ".")
