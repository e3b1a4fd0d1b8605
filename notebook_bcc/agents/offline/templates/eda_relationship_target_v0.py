
def _bcc_eta(values, groups):
    # correlation ratio: share of the variance of `values` explained by `groups`
    frame = pd.DataFrame({"v": pd.to_numeric(values, errors="coerce"), "g": groups}).dropna()
    if frame["g"].nunique() < 2 or frame["v"].var() == 0 or len(frame) < 3:
        return np.nan
    frame["g"] = frame["g"].astype(str)
    means = frame.groupby("g")["v"].transform("mean")
    total = ((frame["v"] - frame["v"].mean()) ** 2).sum()
    return float(np.sqrt(((means - frame["v"].mean()) ** 2).sum() / total))


def _bcc_cramers_v(a, b):
    table = pd.crosstab(a, b)
    if table.shape[0] < 2 or table.shape[1] < 2:
        return np.nan
    n = table.to_numpy().sum()
    expected = np.outer(table.sum(axis=1), table.sum(axis=0)) / n
    chi2 = ((table.to_numpy() - expected) ** 2 / expected).sum()
    return float(np.sqrt(chi2 / (n * (min(table.shape) - 1))))

target_associations = pd.Series(dtype=float)
_methods, _assoc = {}, {}
if TARGET is not None and TARGET in clean_dataset.columns:
    _y = clean_dataset[TARGET]
    _fig, _ax = plt.subplots(figsize=(7, 3.5))
    if TASK == "classification":
        _counts = _y.astype(str).value_counts()
        _ax.bar([str(k)[:20] for k in _counts.index], _counts.to_numpy(), color="#4C72B0")
        _ax.tick_params(axis="x", rotation=45)
        _ax.set_title(f"Class counts of {TARGET}")
        _ax.set_ylabel("rows")
        print(f"\nClass balance of {TARGET!r} (%):", (100 * _counts / _counts.sum()).round(1).to_dict())
    else:
        _yn = pd.to_numeric(_y, errors="coerce").dropna()
        _ax.hist(_yn, bins=30, color="#4C72B0", edgecolor="white")
        _ax.set_title(f"Distribution of {TARGET}")
        _ax.set_xlabel(str(TARGET))
        _ax.set_ylabel("rows")
        print(f"\n{TARGET!r}: mean {_yn.mean():.4g}, median {_yn.median():.4g}, skew {_yn.skew():.2f}")
    _bcc_show(_fig, "outputs/target.png")
    _scores, _methods = {}, {}
    for _c in clean_dataset.columns:
        if _c == TARGET or _c in _id_cols or _c in date_cols:
            continue
        _x = clean_dataset[_c]
        if _c in numeric_cols:
            if TASK == "regression":
                _scores[_c], _methods[_c] = abs(_x.corr(pd.to_numeric(_y, errors="coerce"))), "|pearson r|"
            else:
                _scores[_c], _methods[_c] = _bcc_eta(_x, _y), "eta (class means)"
        elif 2 <= _x.nunique() <= 50:
            if TASK == "regression":
                _scores[_c], _methods[_c] = _bcc_eta(_y, _x), "eta (group means)"
            else:
                _scores[_c], _methods[_c] = _bcc_cramers_v(_x, _y), "cramers V"
    target_associations = pd.Series(_scores, dtype=float).dropna().sort_values(ascending=False)
    print(f"Features most associated with {TARGET!r}:")
    display(pd.DataFrame({
        "association": target_associations.head(10).round(3),
        "measure": [_methods[_c] for _c in target_associations.index[:10]],
    }))
elif len(category_cols) >= 2:
    _cats = [c for c in category_cols if c not in _id_cols and 2 <= clean_dataset[c].nunique() <= 30][:8]
    _assoc = {
        (a, b): _bcc_cramers_v(clean_dataset[a], clean_dataset[b])
        for i, a in enumerate(_cats) for b in _cats[i + 1:]
    }
    _assoc = {k: v for k, v in _assoc.items() if pd.notna(v)}
    if _assoc:
        print("\nStrongest associations between categorical columns (Cramer's V):")
        for (_a, _b), _v in sorted(_assoc.items(), key=lambda kv: -kv[1])[:6]:
            print(f"  {_a} ~ {_b}: {_v:.3f}")

# Without a target: how numeric columns differ between the groups of low-cardinality categories.
group_differences = {}
if TARGET is None and _corr_cols:
    _groupers = [c for c in category_cols if c not in _id_cols and 2 <= clean_dataset[c].nunique() <= 10][:3]
    for _g in _groupers:
        _etas = pd.Series({c: _bcc_eta(clean_dataset[c], clean_dataset[_g]) for c in _corr_cols}).dropna()
        _etas = _etas.sort_values(ascending=False).head(5)
        if _etas.empty:
            continue
        group_differences[str(_g)] = {str(c): round(float(v), 3) for c, v in _etas.items()}
        print(f"Numeric columns that differ most between the levels of {_g!r} (correlation ratio):")
        _means = clean_dataset.groupby(clean_dataset[_g].astype(str))[list(_etas.index)].mean()
        display(_means.T.assign(eta=_etas.round(3)).round(3))
