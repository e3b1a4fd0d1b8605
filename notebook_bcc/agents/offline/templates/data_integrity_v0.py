
_df = raw_dataset
_n = len(_df)
_text_cols = _bcc_text_columns(_df)
_id_hint = re.compile(r"(^|[^a-z])(id|ids|key|uuid|guid|index|idx|no|num|number|name|code)([^a-z]|$)")



def _bcc_text_kind(values):
    # "number" / "date" when at least 90% of a text column's values parse as such
    if _bcc_to_number(values).notna().mean() >= 0.9:
        return "number"
    sample = values.astype(str).drop_duplicates().head(300)
    if sample.str.contains(r"\d").mean() >= 0.9:
        parsed = _bcc_parse_dates(sample)
        if parsed is not None and parsed.notna().mean() >= 0.9:
            return "date"
    return None


def _bcc_is_id_like(name, values, is_text):
    # unique keys carry no signal: an ID-ish name, unique text, or a consecutive integer run
    is_integral = (pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values)
                   and bool((values % 1 == 0).all()))
    if not (is_text or is_integral):
        return False
    unique_ratio = values.nunique() / len(values)
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", str(name)).lower()
    consecutive = (is_integral and unique_ratio == 1 and len(values) >= 20
                   and float(values.max() - values.min()) == len(values) - 1)
    return bool((_id_hint.search(spaced) and unique_ratio >= 0.9)
                or (is_text and unique_ratio == 1 and len(values) >= 20) or consecutive)


_kinds = {_c: _bcc_text_kind(_df[_c].dropna()) for _c in _text_cols if _df[_c].notna().any()}
numeric_text_columns = [_c for _c, _k in _kinds.items() if _k == "number"]
date_like_columns = [_c for _c, _k in _kinds.items() if _k == "date"]
date_like_columns += [
    _c for _c in _df.columns if pd.api.types.is_datetime64_any_dtype(_df[_c]) and _c not in date_like_columns
]
id_like_columns = [
    _c for _c in _df.columns
    if _c != TARGET and _c not in date_like_columns and _c not in numeric_text_columns
    and _df[_c].notna().sum() >= 2 and _bcc_is_id_like(_c, _df[_c].dropna(), _c in _text_cols)
]


def _bcc_numbered_within_groups(values, frame, text_cols):
    # a record number restarting in each group (1..n per species, say): an ID within groups.
    # Each group is numbered 0.. or 1.. without gaps, the groups hold 90% of the values and 5
    # rows each on average (so groups of one row, where any number "restarts", do not count).
    if not (pd.api.types.is_integer_dtype(values) or (pd.api.types.is_float_dtype(values)
                                                       and bool((values.dropna() % 1 == 0).all()))):
        return False
    if values.notna().sum() < 20 or values.is_unique:
        return False
    for group in text_cols:
        if group == values.name or not 1 < frame[group].nunique() <= 20:
            continue
        runs = values.groupby(frame[group]).agg(["nunique", "count", "min", "max"])
        if runs["count"].sum() < 0.9 * values.notna().sum() or runs["count"].mean() < 5:
            continue
        if ((runs["nunique"] == runs["count"]).all() and runs["min"].isin([0, 1]).all()
                and (runs["max"] - runs["min"] + 1 == runs["count"]).all()):
            return True
    return False


id_like_columns += [
    _c for _c in _df.columns
    if _c != TARGET and _c not in id_like_columns and _c not in _text_cols
    and _bcc_numbered_within_groups(_df[_c], _df, _text_cols)
]

_missing = _df.isna().sum()
_unique = _df.nunique(dropna=False)
integrity_report = {
    "n_rows": int(_n),
    "n_cols": int(_df.shape[1]),
    "missing": {str(c): int(v) for c, v in _missing.items() if v > 0},
    "duplicate_rows": int(_df.duplicated().sum()),
    "empty_columns": [str(c) for c in _df.columns if _missing[c] == _n],
    "constant_columns": [str(c) for c in _df.columns if _unique[c] <= 1],
    "id_like_columns": [str(c) for c in id_like_columns],
    "numeric_text_columns": [str(c) for c in numeric_text_columns],
    "date_like_columns": [str(c) for c in date_like_columns],
}
if TARGET is not None:
    if TARGET not in _df.columns:
        raise KeyError(f"Target column {TARGET!r} not found; columns are {list(_df.columns)}")
    integrity_report["target"] = str(TARGET)
    integrity_report["target_missing"] = int(_df[TARGET].isna().sum())

_flags = {
    "id": id_like_columns, "numeric-text": numeric_text_columns, "date": date_like_columns,
    "constant": integrity_report["constant_columns"], "target": [TARGET],
}
_table = pd.DataFrame({
    "dtype": _df.dtypes.astype(str),
    "missing": _missing,
    "missing_%": (100 * _missing / max(_n, 1)).round(1),
    "unique": _df.nunique(),
    "flags": [", ".join(k for k, v in _flags.items() if c in v) for c in _df.columns],
})
print(f"{_n} rows x {_df.shape[1]} columns; duplicate rows: {integrity_report['duplicate_rows']}")
display(_table.head(60))
if _df.shape[1] > 60:
    print(f"... {_df.shape[1] - 60} more columns")
for _key in ("id_like_columns", "numeric_text_columns", "date_like_columns", "constant_columns", "empty_columns"):
    if integrity_report[_key]:
        print(f"{_key}: {integrity_report[_key]}")
if TARGET is not None:
    print(f"target {TARGET!r}: {integrity_report['target_missing']} missing values")
