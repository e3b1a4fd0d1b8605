
try:
    _bcc_st = stability_report
    _bcc_metric = "accuracy" if _bcc_st["metric"] == "accuracy" else "R²"
    if _bcc_st.get("bootstrap_mean") is not None:
        _bcc_text = (
            f"over {_bcc_st['bootstrap_resamples']} bootstrap resamples the hold-out {_bcc_metric} is "
            f"{_bcc_fmt(_bcc_st['bootstrap_mean'])} (5th–95th percentile {_bcc_fmt(_bcc_st['bootstrap_p05'])} "
            f"to {_bcc_fmt(_bcc_st['bootstrap_p95'])})"
        )
    else:
        _bcc_text = "no bootstrap resample of the hold-out set could be scored"
    if _bcc_st.get("cv_seed_spread") is not None:
        _bcc_text += (
            f"; across {len(_bcc_st['cv_mean_by_seed'])} seeds the CV mean varies by {_bcc_fmt(_bcc_st['cv_seed_spread'])}"
        )
    else:
        _bcc_text += "; cross-validation could not be repeated across seeds"
    _bcc_spread, _bcc_sd = _bcc_st.get("cv_seed_spread"), _bcc_st.get("bootstrap_std")
    if _bcc_spread is not None and _bcc_sd is not None and _bcc_spread == _bcc_spread and _bcc_sd == _bcc_sd:
        _bcc_text += ", so the result is " + ("stable" if _bcc_spread < 0.02 and _bcc_sd < 0.05 else "noticeably variable")
except Exception as exc:
    _bcc_text = f"stability measured (summary line failed: {type(exc).__name__})"
_bcc_result(_bcc_text + ".")
