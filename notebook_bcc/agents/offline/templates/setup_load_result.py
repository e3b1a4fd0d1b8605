
try:
    _bcc_seps = {",": "comma-separated", "\t": "tab-separated", ";": "semicolon-separated", "|": "pipe-separated"}
    _bcc_how = load_info.get("format") or "text table"
    if load_info.get("compression"):
        _bcc_how += f", {load_info['compression']}-compressed"
    if load_info.get("encoding") is not None:
        _bcc_enc = {"utf-8-sig": "UTF-8", "latin-1": "Latin-1"}.get(load_info["encoding"], load_info["encoding"])
        _bcc_sep = load_info.get("separator")
        _bcc_how += f", {_bcc_enc}, " + _bcc_seps.get(_bcc_sep, "delimiter sniffed" if _bcc_sep in (None, "sniffed") else f"separator {_bcc_sep!r}")
    if load_info.get("sheet") is not None:
        _bcc_how += f", sheet {load_info['sheet']!r}"
        _bcc_other_sheets = [
            f"{s['name']} (empty)" if s["empty"] else s["name"] for s in load_info.get("sheets", []) if s["name"] != load_info["sheet"]
        ]
        if _bcc_other_sheets:
            _bcc_how += "; other sheets: " + ", ".join(_bcc_other_sheets)
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
