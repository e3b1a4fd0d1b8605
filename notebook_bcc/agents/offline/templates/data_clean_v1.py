
clean_dataset = raw_dataset.copy()
cleaning_log = []
for _c in integrity_report.get("numeric_text_columns", []):
    try:
        _cleaned = clean_dataset[_c].astype(str).str.replace(r"[^0-9eE+\-.]", "", regex=True)
        clean_dataset[_c] = pd.to_numeric(_cleaned, errors="coerce")
        cleaning_log.append(f"converted {_c!r} to numbers")
    except Exception as exc:
        cleaning_log.append(f"left {_c!r} as text ({exc})")
for _c in integrity_report.get("date_like_columns", []):
    try:
        clean_dataset[_c] = pd.to_datetime(clean_dataset[_c], errors="coerce", format="mixed")
        cleaning_log.append(f"parsed {_c!r} as datetime")
    except Exception as exc:
        cleaning_log.append(f"left {_c!r} unparsed ({exc})")
_drop = [c for c in clean_dataset.columns if c != TARGET and clean_dataset[c].astype(str).nunique() <= 1]
clean_dataset = clean_dataset.drop(columns=_drop)
if _drop:
    cleaning_log.append(f"dropped constant/empty columns {_drop}")
_n = len(clean_dataset)
_bcc_dup_ids = [c for c in (globals().get("integrity_report") or {}).get("id_like_columns", []) if c in clean_dataset.columns]
_bcc_dups = int(clean_dataset.duplicated().sum())
if _bcc_dups and (_bcc_dup_ids or _bcc_dups > _n / 2):
    clean_dataset = clean_dataset.drop_duplicates()
    cleaning_log.append(f"dropped {_bcc_dups} duplicate rows")
else:
    cleaning_log.append(f"kept {_bcc_dups} duplicate rows (no ID column shows they are the same records)")
    _bcc_dups = 0
_bcc_no_target = 0
if TARGET is not None:
    if TASK == "regression":
        clean_dataset[TARGET] = pd.to_numeric(clean_dataset[TARGET], errors="coerce")
    _n = len(clean_dataset)
    clean_dataset = clean_dataset.dropna(subset=[TARGET])
    _bcc_no_target = _n - len(clean_dataset)
    cleaning_log.append(f"dropped {_bcc_no_target} rows without target")
clean_dataset = clean_dataset.reset_index(drop=True)
print(clean_dataset.shape)
print("\n".join(cleaning_log))

def _bcc_clean_notes():
    # what the Result: line says about the cleaning, beyond cleaning_log
    notes = []
    if _bcc_dups:
        notes.append(f"dropped {_bcc_count(_bcc_dups, 'duplicate row')}")
    if _bcc_no_target:
        notes.append(f"dropped {_bcc_count(_bcc_no_target, 'row')} without a target")
    return notes
