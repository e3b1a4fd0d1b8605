
try:
    _bcc_num, _bcc_dates, _bcc_cats = _bcc_column_groups(clean_dataset)
    if _bcc_num:
        _bcc_text = _bcc_count(len(_bcc_num), "numeric column")
        _bcc_skew = clean_dataset[_bcc_num].astype("float64").skew().dropna()
        if len(_bcc_skew):
            _bcc_top = _bcc_skew.abs().idxmax()
            _bcc_k = int((_bcc_skew.abs() > 1).sum())
            _bcc_text += (
                f", {_bcc_k if _bcc_k else 'none'} strongly skewed (|skew| > 1); "
                f"the most skewed is {_bcc_top} (skew {_bcc_skew[_bcc_top]:+.2f})"
            )
    else:
        _bcc_text = "no numeric columns"
    _bcc_missing = clean_dataset.isna().mean()
    if len(_bcc_missing) and _bcc_missing.max() > 0:
        _bcc_top = _bcc_missing.idxmax()
        _bcc_text += f"; the most incomplete is {_bcc_top} ({100 * _bcc_missing[_bcc_top]:.1f}% missing)"
    else:
        _bcc_text += "; no missing values"
    _bcc_small = []
    for _c in _bcc_cats:
        try:
            if clean_dataset[_c].nunique() <= 30:
                _bcc_small.append(_c)
        except TypeError:
            pass
    _bcc_text += f"; {_bcc_count(len(_bcc_cats), 'categorical column')}"
    if _bcc_cats:
        _bcc_text += f" ({len(_bcc_small)} with at most 30 levels)"
    if _bcc_dates:
        _bcc_text += f"; {_bcc_count(len(_bcc_dates), 'date column')}"
except Exception as exc:
    _bcc_text = f"summarised {clean_dataset.shape[1]} columns (summary line failed: {type(exc).__name__})"
_bcc_result(_bcc_text + ".")
