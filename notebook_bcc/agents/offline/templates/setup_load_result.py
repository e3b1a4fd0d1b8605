
try:
    _bcc_kind = {".parquet": "Parquet", ".pq": "Parquet", ".xlsx": "Excel", ".xlsm": "Excel", ".xls": "Excel"}
    _bcc_seps = {",": "comma-separated", "\t": "tab-separated", ";": "semicolon-separated", "|": "pipe-separated"}
    if data_ext in _bcc_kind:
        _bcc_how = f"{_bcc_kind[data_ext]} file"
    elif load_info.get("encoding") is None:
        _bcc_how = f"{data_ext.lstrip('.').upper() or 'text'} file"
    else:
        _bcc_enc = {"utf-8-sig": "UTF-8", "latin-1": "Latin-1"}.get(load_info["encoding"], load_info["encoding"])
        _bcc_sep = load_info.get("separator")
        _bcc_how = f"{_bcc_enc}, " + _bcc_seps.get(_bcc_sep, "delimiter sniffed" if _bcc_sep in (None, "sniffed") else f"separator {_bcc_sep!r}")
    _bcc_text = (
        f"read {raw_dataset.shape[0]} rows and {raw_dataset.shape[1]} columns from {data_path} ({_bcc_how}); "
    )
    _bcc_k = raw_dataset.select_dtypes(include="number").shape[1]
    _bcc_text += f"{_bcc_k or 'none'} of them {'are' if _bcc_k > 1 else 'is'} numeric"
    if load_info.get("skipped_bad_lines"):
        _bcc_text += "; malformed lines were skipped"
    if _bcc_dropped_unnamed:
        _bcc_text += f"; dropped {_bcc_count(len(_bcc_dropped_unnamed), 'empty unnamed column')}"
except Exception as exc:
    _bcc_text = f"read {raw_dataset.shape[0]} rows and {raw_dataset.shape[1]} columns (summary line failed: {type(exc).__name__})"
_bcc_result(_bcc_text + ".")
