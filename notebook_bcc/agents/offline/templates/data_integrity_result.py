
try:
    _bcc_missing = integrity_report["missing"]
    if _bcc_missing:
        _bcc_worst = max(_bcc_missing, key=_bcc_missing.get)
        _bcc_text = (
            f"{_bcc_count(sum(_bcc_missing.values()), 'missing value')} in {_bcc_count(len(_bcc_missing), 'column')} "
            f"(most in {_bcc_worst}: {_bcc_missing[_bcc_worst]})"
        )
    else:
        _bcc_text = "no missing values"
    _bcc_text += f", {_bcc_count(integrity_report['duplicate_rows'], 'duplicate row')}"
    _bcc_empty = integrity_report["empty_columns"]
    _bcc_text += f"; constant: {_bcc_names(integrity_report['constant_columns'])}"
    if _bcc_empty:
        _bcc_text += f" ({len(_bcc_empty)} of them entirely empty)"
    _bcc_text += (
        f"; ID-like: {_bcc_names(integrity_report['id_like_columns'])}"
        f"; numbers stored as text: {_bcc_names(integrity_report['numeric_text_columns'])}"
        f"; dates: {_bcc_names(integrity_report['date_like_columns'])}"
    )
    if "target" in integrity_report:
        _bcc_tm = integrity_report["target_missing"]
        _bcc_text += f"; the target {integrity_report['target']} has " + (
            _bcc_count(_bcc_tm, "missing value") if _bcc_tm else "no missing values"
        )
except Exception as exc:
    _bcc_text = f"integrity checked for {raw_dataset.shape[1]} columns (summary line failed: {type(exc).__name__})"
_bcc_result(_bcc_text + ".")
