
data_path = str(user_submit_files[0])
data_ext = os.path.splitext(data_path)[1].lower()
load_info = {"path": data_path, "encoding": "latin-1", "separator": "sniffed"}
if data_ext in (".parquet", ".pq"):
    raw_dataset = pd.read_parquet(data_path)
elif data_ext in (".xlsx", ".xlsm", ".xls"):
    raw_dataset = pd.read_excel(data_path)
else:
    # Several lenient readings (python engine, bad lines skipped); keep the widest table.
    _readings = {}
    for _sep in (None, ",", "\t", ";", "|"):
        try:
            _readings[_sep] = pd.read_csv(data_path, sep=_sep, engine="python", on_bad_lines="skip",
                                          encoding="latin-1", skipinitialspace=True)
        except Exception as exc:
            print(f"separator {_sep!r}: {exc}")
    _best = max(_readings, key=lambda k: (len(_readings[k]) > 0, _readings[k].shape[1], len(_readings[k])))
    raw_dataset = _readings[_best]
    load_info["separator"] = "sniffed" if _best is None else _best
    del _readings

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
print(f"Loaded {data_path}: {raw_dataset.shape[0]} rows x {raw_dataset.shape[1]} columns (latin-1, defensive read)")
print(raw_dataset.dtypes.astype(str).value_counts().to_dict())
display(raw_dataset.head())
