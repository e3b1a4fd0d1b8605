
data_path = str(user_submit_files[0])
load_info = {"path": data_path}
load_info["format"], _bcc_compression = _bcc_table_format(data_path)
if load_info["format"] in ("CSV", "TSV", "text table"):
    # Several lenient readings (python engine, bad lines skipped); keep the widest table.
    load_info.update(encoding="latin-1", separator="sniffed")
    if _bcc_compression:
        load_info["compression"] = _bcc_compression
    _readings = {}
    for _sep in (None, ",", "\t", ";", "|"):
        try:
            _readings[_sep] = pd.read_csv(_bcc_table_source(data_path, _bcc_compression), sep=_sep, engine="python",
                                          on_bad_lines="skip", encoding="latin-1", skipinitialspace=True)
        except Exception as exc:
            print(f"separator {_sep!r}: {exc}")
    _best = max(_readings, key=lambda k: (len(_readings[k]) > 0, _readings[k].shape[1], len(_readings[k])))
    raw_dataset = _readings[_best]
    load_info["separator"] = "sniffed" if _best is None else _best
    del _readings
else:
    raw_dataset = _bcc_read_table(data_path, load_info, sheet=__SHEET__)

_names = [re.sub(r"\s+", " ", str(c).replace("ï»¿", "").replace("\ufeff", "")).strip() for c in raw_dataset.columns]
_names = [n or f"column_{i}" for i, n in enumerate(_names)]
_names = [n if _names.index(n) == i else f"{n}_{i}" for i, n in enumerate(_names)]
raw_dataset.columns = _names
_bcc_dropped_unnamed = [c for c in _names if c.startswith("Unnamed:") and raw_dataset[c].isna().all()]
raw_dataset = raw_dataset.drop(columns=_bcc_dropped_unnamed)
if len(raw_dataset.columns) and raw_dataset.columns[0].startswith("Unnamed:") and "index" not in raw_dataset.columns:
    raw_dataset = raw_dataset.rename(columns={raw_dataset.columns[0]: "index"})
data_profile = {
    "n_rows": int(len(raw_dataset)),
    "n_cols": int(raw_dataset.shape[1]),
    "columns": {str(c): str(t) for c, t in list(raw_dataset.dtypes.items())[:200]},
}
_bcc_how = "latin-1, defensive read" if load_info.get("encoding") else load_info["format"]
print(f"Loaded {data_path}: {raw_dataset.shape[0]} rows x {raw_dataset.shape[1]} columns ({_bcc_how})")
print(raw_dataset.dtypes.astype(str).value_counts().to_dict())
display(raw_dataset.head())
