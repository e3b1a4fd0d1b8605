
try:
    if strongest_correlations:
        _a, _b, _r = strongest_correlations[0]
        _bcc_text = f"the strongest correlation is {_a} ~ {_b} (r = {_bcc_fmt(_r, '+.2f')})"
    elif correlation_matrix.empty:
        _bcc_text = "fewer than two usable numeric columns, so no correlations"
    else:
        _bcc_text = "no correlation between the numeric columns could be measured"
    if TARGET is not None:
        if len(target_associations):
            _c = target_associations.index[0]
            _bcc_text += (
                f"; the feature most associated with {TARGET} is {_c} "
                f"({_bcc_labels.get(_c, '|r|')} {_bcc_fmt(target_associations.iloc[0], '.2f')})"
            )
        else:
            _bcc_text += f"; no feature association with {TARGET} was measured"
        if TASK == "classification" and TARGET in clean_dataset.columns:
            _shares = clean_dataset[TARGET].dropna().astype(str).value_counts(normalize=True)
            if len(_shares) >= 2:
                _bcc_text += (
                    f"; {TARGET} has {len(_shares)} classes, from {_shares.index[-1]} ({100 * _shares.iloc[-1]:.1f}%) "
                    f"to {_shares.index[0]} ({100 * _shares.iloc[0]:.1f}%)"
                )
    _bcc_text += "".join(f"; {x}" for x in _bcc_extra)
    _bcc_dates = [c for c in clean_dataset.columns if pd.api.types.is_datetime64_any_dtype(clean_dataset[c])]
    if _bcc_dates:
        _d = max(_bcc_dates, key=lambda c: clean_dataset[c].nunique())
        if clean_dataset[_d].notna().any():
            _bcc_text += f"; {_d} spans {clean_dataset[_d].min().date()} to {clean_dataset[_d].max().date()}"
except Exception as exc:
    _bcc_text = f"relationships computed for {clean_dataset.shape[1]} columns (summary line failed: {type(exc).__name__})"
_bcc_result(_bcc_text + ".")
