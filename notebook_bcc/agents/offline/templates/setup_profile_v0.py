
raw_dataset, _bcc_dropped_unnamed = _bcc_clean_headers(raw_dataset)
data_profile = {
    "n_rows": int(raw_dataset.shape[0]),
    "n_cols": int(raw_dataset.shape[1]),
    "columns": {str(c): str(t) for c, t in list(raw_dataset.dtypes.items())[:200]},
}
if _bcc_dropped_unnamed:
    print(f"Dropped empty unnamed columns: {_bcc_dropped_unnamed}")
print("dtype counts:", raw_dataset.dtypes.astype(str).value_counts().to_dict())
display(raw_dataset.head())
