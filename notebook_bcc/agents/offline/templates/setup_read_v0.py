

if data_ext in (".parquet", ".pq"):
    raw_dataset = pd.read_parquet(data_path)
elif data_ext in (".xlsx", ".xlsm", ".xls"):
    raw_dataset = pd.read_excel(data_path)
elif data_ext == ".json":
    raw_dataset = pd.read_json(data_path)
else:
    raw_dataset = _bcc_read_delimited(data_path, load_info)
print(f"Read {data_path}: {raw_dataset.shape[0]} rows x {raw_dataset.shape[1]} columns "
      f"(encoding={load_info['encoding']}, separator={load_info['separator']!r})")
