
try:
    _bcc_kept = [c for c in clean_dataset.columns if c in raw_dataset.columns]
    _bcc_to_num = [
        c for c in _bcc_kept
        if pd.api.types.is_numeric_dtype(clean_dataset[c]) and not pd.api.types.is_numeric_dtype(raw_dataset[c])
    ]
    _bcc_to_date = [
        c for c in _bcc_kept
        if pd.api.types.is_datetime64_any_dtype(clean_dataset[c]) and not pd.api.types.is_datetime64_any_dtype(raw_dataset[c])
    ]
    _bcc_dropped = [c for c in raw_dataset.columns if c not in clean_dataset.columns]
    _bcc_actions = []
    if _bcc_to_num:
        _bcc_actions.append(f"converted {_bcc_count(len(_bcc_to_num), 'text column')} to numbers: {_bcc_names(_bcc_to_num, 3)}")
    if _bcc_to_date:
        _bcc_actions.append(f"parsed {_bcc_count(len(_bcc_to_date), 'date column')}: {_bcc_names(_bcc_to_date, 3)}")
    if _bcc_dropped:
        _bcc_actions.append(f"dropped {_bcc_count(len(_bcc_dropped), 'constant or empty column')}: {_bcc_names(_bcc_dropped, 3)}")
    _bcc_actions += _bcc_clean_notes()
    _bcc_text = f"clean_dataset has {clean_dataset.shape[0]} rows and {clean_dataset.shape[1]} columns"
    if _bcc_actions:
        _bcc_text += f" after {_bcc_count(len(_bcc_actions), 'cleaning action')} ({'; '.join(_bcc_actions)})"
    else:
        _bcc_text += "; no cleaning was needed"
except Exception as exc:
    _bcc_text = f"clean_dataset has {clean_dataset.shape[0]} rows and {clean_dataset.shape[1]} columns (summary line failed: {type(exc).__name__})"
_bcc_result(_bcc_text + ".")
