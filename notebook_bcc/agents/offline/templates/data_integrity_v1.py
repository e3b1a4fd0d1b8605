
_df = raw_dataset
numeric_text_columns, date_like_columns, id_like_columns = [], [], []
for _c in _df.columns:
    _s = _df[_c].dropna()
    if len(_s) == 0 or pd.api.types.is_numeric_dtype(_s):
        continue
    try:
        _as_text = _s.astype(str)
        _cleaned = _as_text.str.replace(r"[^0-9eE+\-.]", "", regex=True)
        if pd.to_numeric(_cleaned, errors="coerce").notna().mean() >= 0.95 and _as_text.str.contains(r"\d").all():
            numeric_text_columns.append(_c)
        elif re.search(r"date|time|day", str(_c), re.I) and pd.to_datetime(_as_text.head(200), errors="coerce", format="mixed").notna().mean() >= 0.9:
            date_like_columns.append(_c)
        elif _s.nunique() == len(_s) and len(_s) >= 20 and _c != TARGET:
            id_like_columns.append(_c)
    except Exception as exc:
        print(f"skipped checks for {_c!r}: {exc}")
for _c in _df.columns:
    if _c != TARGET and _c not in id_like_columns and re.search(r"(^|[^a-z])id([^a-z]|$)", str(_c).lower()):
        if _df[_c].nunique() >= 0.9 * max(_df[_c].notna().sum(), 1):
            id_like_columns.append(_c)
integrity_report = {
    "n_rows": int(len(_df)),
    "n_cols": int(_df.shape[1]),
    "missing": {str(c): int(v) for c, v in _df.isna().sum().items() if v > 0},
    "duplicate_rows": int(_df.astype(str).duplicated().sum()),
    "empty_columns": [str(c) for c in _df.columns if _df[c].isna().all()],
    "constant_columns": [str(c) for c in _df.columns if _df[c].astype(str).nunique() <= 1],
    "id_like_columns": [str(c) for c in id_like_columns],
    "numeric_text_columns": [str(c) for c in numeric_text_columns],
    "date_like_columns": [str(c) for c in date_like_columns],
}
if TARGET is not None:
    integrity_report["target"] = str(TARGET)
    integrity_report["target_missing"] = int(_df[TARGET].isna().sum())
for _key, _value in integrity_report.items():
    print(f"{_key}: {_value}")
