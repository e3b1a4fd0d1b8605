
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
    hint = re.search(r"(^|[^a-z])(id|ids|key|uuid|guid|index|idx|no|num|number|name|code)([^a-z]|$)", spaced)
    return bool((hint and unique_ratio >= 0.9)
                or (is_text and unique_ratio == 1 and len(values) >= 20) or consecutive)


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


def _bcc_audit(frame, target):
    # the integrity findings (a dict) and a table with one row per column
    text_cols = _bcc_text_columns(frame)
    kinds = {c: _bcc_text_kind(frame[c].dropna()) for c in text_cols if frame[c].notna().any()}
    numeric_text = [c for c, k in kinds.items() if k == "number"]
    dates = [c for c, k in kinds.items() if k == "date"]
    dates += [c for c in frame.columns if pd.api.types.is_datetime64_any_dtype(frame[c]) and c not in dates]
    ids = [
        c for c in frame.columns
        if c != target and c not in dates and c not in numeric_text
        and frame[c].notna().sum() >= 2 and _bcc_is_id_like(c, frame[c].dropna(), c in text_cols)
    ]
    ids += [
        c for c in frame.columns
        if c != target and c not in ids and c not in text_cols
        and _bcc_numbered_within_groups(frame[c], frame, text_cols)
    ]
    n = len(frame)
    missing = frame.isna().sum()
    unique = frame.nunique(dropna=False)
    report = {
        "n_rows": int(n),
        "n_cols": int(frame.shape[1]),
        "missing": {str(c): int(v) for c, v in missing.items() if v > 0},
        "duplicate_rows": int(frame.duplicated().sum()),
        "empty_columns": [str(c) for c in frame.columns if missing[c] == n],
        "constant_columns": [str(c) for c in frame.columns if unique[c] <= 1],
        "id_like_columns": [str(c) for c in ids],
        "numeric_text_columns": [str(c) for c in numeric_text],
        "date_like_columns": [str(c) for c in dates],
    }
    if target is not None:
        if target not in frame.columns:
            raise KeyError(f"Target column {target!r} not found; columns are {list(frame.columns)}")
        report["target"] = str(target)
        report["target_missing"] = int(frame[target].isna().sum())
    flags = {"id": ids, "numeric-text": numeric_text, "date": dates,
             "constant": report["constant_columns"], "target": [target]}
    table = pd.DataFrame({
        "dtype": frame.dtypes.astype(str),
        "missing": missing,
        "missing_%": (100 * missing / max(n, 1)).round(1),
        "unique": frame.nunique(),
        "flags": [", ".join(k for k, v in flags.items() if c in v) for c in frame.columns],
    })
    return report, table


integrity_report, column_table = _bcc_audit(raw_dataset, TARGET)
print(f"{len(raw_dataset)} rows x {raw_dataset.shape[1]} columns; duplicate rows: {integrity_report['duplicate_rows']}")
display(column_table.head(60))
if len(column_table) > 60:
    print(f"... {len(column_table) - 60} more columns")

for _key in ("id_like_columns", "numeric_text_columns", "date_like_columns", "constant_columns", "empty_columns"):
    if integrity_report[_key]:
        print(f"{_key}: {integrity_report[_key]}")
if TARGET is not None:
    print(f"target {TARGET!r}: {integrity_report['target_missing']} missing values")
