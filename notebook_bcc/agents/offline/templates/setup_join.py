
# Columns shared by two tables are checked as join keys: is the key unique on one side (a
# lookup table), and what share of each side's rows find a match on the other?
_bcc_join_asked, _bcc_join_on = __JOIN__, __JOIN_ON__


def _bcc_key_text(series):
    # keys compared as text, so that 7, 7.0 and "7" match
    values = series.dropna()
    if pd.api.types.is_float_dtype(series) and len(values) and (values == values.round()).all():
        series = series.astype("Int64")
    return series.astype("string").str.strip()


def _bcc_key_check(left, right, column):
    keys = {name: _bcc_key_text(tables[name][column]) for name in (left, right)}
    return {
        "column": column,
        "tables": [left, right],
        "unique_in": [n for n, k in keys.items() if len(k) and k.notna().all() and k.is_unique],
        "match_rate": {
            n: round(float(k.dropna().isin(set(keys[o].dropna())).mean()) if k.notna().any() else 0.0, 3)
            for (n, k), o in zip(keys.items(), (right, left))
        },
    }


def _bcc_joinable(check, lookup):
    # a lookup: the key is unique in it; joined when the problem asks (on this key, if it names
    # one) or when nearly every row of the other table finds its match
    if lookup not in check["unique_in"]:
        return False
    other = next(t for t in check["tables"] if t != lookup)
    named = _bcc_join_on is None or check["column"].lower() == str(_bcc_join_on).lower()
    return (_bcc_join_asked and named) or check["match_rate"][other] >= 0.9


join_report = {"keys": [], "analysed": [], "joined": [], "left_aside": {}}
_bcc_names = list(tables)
for _bcc_i, _bcc_a in enumerate(_bcc_names):
    for _bcc_b in _bcc_names[_bcc_i + 1 :]:
        for _bcc_col in [c for c in tables[_bcc_a].columns if c in set(tables[_bcc_b].columns)]:
            join_report["keys"].append(_bcc_key_check(_bcc_a, _bcc_b, _bcc_col))
for _bcc_k in join_report["keys"]:
    print(f"`{_bcc_k['column']}` in {' and '.join(_bcc_k['tables'])}: unique in {', '.join(_bcc_k['unique_in']) or 'neither'}; "
          + "; ".join(f"{_bcc_r:.1%} of {_bcc_n} rows match" for _bcc_n, _bcc_r in _bcc_k["match_rate"].items()))

# The table analysed: the many side of a lookup join when there is one, else the first file.
_bcc_many = [t for k in join_report["keys"] for t in k["tables"] for lk in k["tables"] if t != lk and _bcc_joinable(k, lk)]
_bcc_base = max(_bcc_many, key=lambda t: (_bcc_many.count(t), len(tables[t]))) if _bcc_many else _bcc_names[0]
raw_dataset = tables[_bcc_base].copy()
join_report["analysed"].append(_bcc_base)
_bcc_grew = True
while _bcc_grew:  # join every lookup that links to what is joined so far
    _bcc_grew = False
    for _bcc_k in join_report["keys"]:
        _bcc_pair = set(_bcc_k["tables"])
        _bcc_new = _bcc_pair - set(join_report["analysed"])
        if len(_bcc_new) != 1 or _bcc_k["column"] not in raw_dataset.columns:
            continue
        _bcc_t = _bcc_new.pop()
        if not _bcc_joinable(_bcc_k, _bcc_t):
            continue
        _bcc_col = _bcc_k["column"]
        _bcc_left = raw_dataset.assign(_bcc_key=_bcc_key_text(raw_dataset[_bcc_col]))
        _bcc_right = tables[_bcc_t].drop(columns=[_bcc_col]).assign(_bcc_key=_bcc_key_text(tables[_bcc_t][_bcc_col]))
        _bcc_matched = int(_bcc_left["_bcc_key"].isin(set(_bcc_right["_bcc_key"])).sum())
        _bcc_stem = re.sub(r"\W+", "_", os.path.splitext(_bcc_t)[0])
        raw_dataset = _bcc_left.merge(_bcc_right, on="_bcc_key", how="left", validate="many_to_one",
                                      suffixes=("", f"_{_bcc_stem}")).drop(columns="_bcc_key")
        join_report["joined"].append({"table": _bcc_t, "on": _bcc_col, "rows": len(_bcc_left), "matched": _bcc_matched})
        join_report["analysed"].append(_bcc_t)
        print(f"Joined {_bcc_t} on `{_bcc_col}`: {_bcc_matched} of {len(_bcc_left)} rows matched "
              f"({_bcc_matched / max(len(_bcc_left), 1):.1%}); {len(_bcc_left) - _bcc_matched} have no match.")
        _bcc_grew = True

for _bcc_t in _bcc_names + [n for n in table_info if n not in tables]:
    if _bcc_t in join_report["analysed"]:
        continue
    if "error" in table_info[_bcc_t]:
        _bcc_why = f"it could not be read ({table_info[_bcc_t]['error']})"
    else:
        _bcc_links = [k for k in join_report["keys"] if _bcc_t in k["tables"] and set(k["tables"]) & set(join_report["analysed"])]
        if not _bcc_links:
            _bcc_why = f"it shares no column with {', '.join(join_report['analysed'])}"
        elif not any(_bcc_t in k["unique_in"] for k in _bcc_links):
            _bcc_cols = ", ".join("`" + k["column"] + "`" for k in _bcc_links)
            _bcc_why = f"it shares {_bcc_cols}, which is not unique in it (not a lookup: joining would repeat rows)"
        else:
            _bcc_k = next(k for k in _bcc_links if _bcc_t in k["unique_in"])
            _bcc_other = next(t for t in _bcc_k["tables"] if t != _bcc_t)
            _bcc_why = (f"only {_bcc_k['match_rate'][_bcc_other]:.1%} of {_bcc_other} rows match it on `{_bcc_k['column']}`"
                        + ("" if _bcc_join_asked else "; ask for the join in the problem to make it"))
    join_report["left_aside"][_bcc_t] = _bcc_why
    print(f"Left aside {_bcc_t}: {_bcc_why}.")

data_path = str(table_info[_bcc_base]["path"])
data_profile = {
    "n_rows": int(raw_dataset.shape[0]),
    "n_cols": int(raw_dataset.shape[1]),
    "columns": {str(c): str(t) for c, t in list(raw_dataset.dtypes.items())[:200]},
    "files": {n: {k: v for k, v in i.items() if k != "columns"} for n, i in table_info.items()},
}
display(raw_dataset.head())
_bcc_text = f"read {len(tables)} of {_bcc_count(len(table_info), 'file')}; "
if join_report["joined"]:
    _bcc_text += f"joined onto {_bcc_base}: " + "; ".join(
        f"{j['table']} on `{j['on']}` ({j['matched']} of {j['rows']} rows matched)" for j in join_report["joined"])
else:
    _bcc_text += f"analysed {_bcc_base}"
if join_report["left_aside"]:
    _bcc_text += "; left aside " + "; ".join(f"{t} ({w})" for t, w in join_report["left_aside"].items())
_bcc_result(_bcc_text + f"; raw_dataset has {raw_dataset.shape[0]} rows x {raw_dataset.shape[1]} columns.")
