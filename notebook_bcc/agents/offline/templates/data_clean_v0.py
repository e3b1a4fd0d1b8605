
clean_dataset = raw_dataset.copy()
cleaning_log = []
_start_shape = clean_dataset.shape


def _bcc_strip(value):
    if isinstance(value, str):
        value = value.strip()
        return value if value else np.nan
    return value


# Strip stray whitespace around text values; empty strings become missing.
_changed = 0
for _c in _bcc_text_columns(clean_dataset):
    _before = clean_dataset[_c]
    _after = _before.map(_bcc_strip)
    _changed += int((_before.notna() & (_before.astype("string") != _after.astype("string"))).fillna(True).sum())
    clean_dataset[_c] = _after
if _changed:
    cleaning_log.append(f"stripped surrounding whitespace / blanked empty strings in {_changed} cells")

# Drop rows with no value at all.
_empty_rows = clean_dataset.isna().all(axis=1)
if _empty_rows.any():
    clean_dataset = clean_dataset.loc[~_empty_rows]
    cleaning_log.append(f"dropped {int(_empty_rows.sum())} fully empty rows")

# Text columns that hold numbers (currency, percent, thousands separators) become numbers.
_converted, _lost = [], 0
for _c in integrity_report.get("numeric_text_columns", []):
    if _c in clean_dataset.columns:
        _numbers = _bcc_to_number(clean_dataset[_c])
        _lost += int(clean_dataset[_c].notna().sum() - _numbers.notna().sum())
        clean_dataset[_c] = _numbers
        _converted.append(_c)
if _converted:
    cleaning_log.append(
        f"converted {len(_converted)} text columns to numbers ({_lost} unparseable values set to NaN): {_converted}"
    )

# Text columns that hold dates become datetimes.
for _c in integrity_report.get("date_like_columns", []):
    if _c in clean_dataset.columns and not pd.api.types.is_datetime64_any_dtype(clean_dataset[_c]):
        _parsed = _bcc_parse_dates(clean_dataset[_c])
        if _parsed is not None and _parsed.notna().sum() >= 0.9 * clean_dataset[_c].notna().sum():
            clean_dataset[_c] = _parsed
            cleaning_log.append(f"parsed {_c!r} as datetime ({int(_parsed.isna().sum())} missing)")

# Infinite values become missing.
_numeric = [c for c in clean_dataset.columns if pd.api.types.is_float_dtype(clean_dataset[c])]
_inf = int(np.isinf(clean_dataset[_numeric].to_numpy(dtype=float)).sum()) if _numeric else 0
if _inf:
    clean_dataset[_numeric] = clean_dataset[_numeric].replace([np.inf, -np.inf], np.nan)
    cleaning_log.append(f"replaced {_inf} infinite values with NaN")

# Empty and constant columns carry no information.
_drop = [c for c in clean_dataset.columns if c != TARGET and clean_dataset[c].nunique(dropna=False) <= 1]
if _drop:
    clean_dataset = clean_dataset.drop(columns=_drop)
    cleaning_log.append(f"dropped empty/constant columns: {_drop}")

# Exact duplicate rows are dropped only when an ID column shows they are the same record, or
# when they are more than half the table; otherwise they may be distinct records (two
# respondents who gave the same answers) and are kept.
_dups = int(clean_dataset.duplicated().sum())
_dup_ids = [c for c in (globals().get("integrity_report") or {}).get("id_like_columns", []) if c in clean_dataset.columns]
_dups_dropped = bool(_dups) and (bool(_dup_ids) or _dups > len(clean_dataset) / 2)
if _dups_dropped:
    clean_dataset = clean_dataset.drop_duplicates()
    _why = f"their ID column {_dup_ids[0]} shows the same records" if _dup_ids else "more than half the rows"
    cleaning_log.append(f"dropped {_dups} exact duplicate rows ({_why})")
elif _dups:
    cleaning_log.append(f"kept {_dups} exact duplicate rows: no ID column shows they are the same records")

# The target must be present (and numeric for a regression).
if TARGET is not None:
    if TASK == "regression" and not pd.api.types.is_numeric_dtype(clean_dataset[TARGET]):
        clean_dataset[TARGET] = _bcc_to_number(clean_dataset[TARGET])
        cleaning_log.append(f"coerced target {TARGET!r} to numbers")
    _no_target = clean_dataset[TARGET].isna()
    if _no_target.any():
        clean_dataset = clean_dataset.loc[~_no_target]
        cleaning_log.append(f"dropped {int(_no_target.sum())} rows with missing target {TARGET!r}")

# What was done.
clean_dataset = clean_dataset.reset_index(drop=True)
if not cleaning_log:
    cleaning_log.append("no cleaning needed")
print(f"shape {_start_shape} -> {clean_dataset.shape}")
print(" - " + "\n - ".join(cleaning_log))
print("dtype counts:", clean_dataset.dtypes.astype(str).value_counts().to_dict())

def _bcc_clean_notes():
    # what the Result: line says about the cleaning, beyond cleaning_log
    notes = []
    if _changed:
        notes.append(f"stripped whitespace or blanked empty strings in {_bcc_count(_changed, 'cell')}")
    if _lost:
        notes.append(f"set {_bcc_count(_lost, 'unparseable number')} to NaN")
    if _inf:
        notes.append(f"replaced {_bcc_count(_inf, 'infinite value')} with NaN")
    if _empty_rows.any():
        notes.append(f"dropped {_bcc_count(int(_empty_rows.sum()), 'fully empty row')}")
    if _dups:
        notes.append(f"{'dropped' if _dups_dropped else 'kept'} {_bcc_count(_dups, 'duplicate row')}")
    if TARGET is not None and _no_target.any():
        notes.append(f"dropped {_bcc_count(int(_no_target.sum()), 'row')} without a target")
    return notes
