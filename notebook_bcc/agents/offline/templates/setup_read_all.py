
# Every submitted file, read with the same reader and with its headers cleaned the same way.
tables, table_info = {}, {}
for _bcc_path in map(str, user_submit_files):
    _bcc_name = os.path.basename(_bcc_path)
    _bcc_info = {"path": _bcc_path}
    try:
        tables[_bcc_name], _ = _bcc_clean_headers(_bcc_read_table(_bcc_path, _bcc_info, sheet=__SHEET__))
    except Exception as exc:
        table_info[_bcc_name] = {**_bcc_info, "error": f"{type(exc).__name__}: {exc}"}
        print(f"{_bcc_name}: could not be read ({type(exc).__name__}: {exc})")
        continue
    _bcc_frame = tables[_bcc_name]
    table_info[_bcc_name] = {**_bcc_info, "rows": int(_bcc_frame.shape[0]), "columns": [str(c) for c in _bcc_frame.columns]}
    print(f"{_bcc_name}: {_bcc_frame.shape[0]} rows x {_bcc_frame.shape[1]} columns ({_bcc_info.get('format', 'table')})")
    display(_bcc_frame.head(3))
if not tables:
    raise ValueError("none of the submitted files could be read: " + "; ".join(i["error"] for i in table_info.values()))
