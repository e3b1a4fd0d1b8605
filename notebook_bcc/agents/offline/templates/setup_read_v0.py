

raw_dataset = _bcc_read_table(data_path, load_info, sheet=__SHEET__)
print(f"Read {data_path}: {raw_dataset.shape[0]} rows x {raw_dataset.shape[1]} columns")
print({key: value for key, value in load_info.items() if key != "path" and value is not None})
