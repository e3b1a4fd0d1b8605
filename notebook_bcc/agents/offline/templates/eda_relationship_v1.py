
_num = clean_dataset.select_dtypes(include="number")
_num = _num.loc[:, _num.nunique() > 1]
correlation_matrix = _num.corr() if _num.shape[1] >= 2 else pd.DataFrame()
strongest_correlations = []
target_associations = pd.Series(dtype=float)
timeseries_summary = {}
group_differences = {}
if not correlation_matrix.empty:
    _fig, _ax = plt.subplots(figsize=(9, 7))
    try:
        _sub = correlation_matrix.iloc[:15, :15]
        _ax.imshow(_sub.to_numpy(dtype=float), cmap="coolwarm", vmin=-1, vmax=1)
        _ax.set_xticks(range(len(_sub)), [str(c)[:20] for c in _sub.columns], rotation=90, fontsize=7)
        _ax.set_yticks(range(len(_sub)), [str(c)[:20] for c in _sub.columns], fontsize=7)
    except Exception as exc:
        _ax.text(0.1, 0.5, f"heatmap failed: {exc}")
        print(f"heatmap failed: {exc}")
    _bcc_show(_fig, "outputs/correlations.png")
    _pairs = correlation_matrix.where(np.triu(np.ones(correlation_matrix.shape, dtype=bool), k=1)).stack().dropna()
    for (_a, _b), _r in _pairs.abs().sort_values(ascending=False).head(5).items():
        strongest_correlations.append((str(_a), str(_b), round(float(correlation_matrix.loc[_a, _b]), 3)))
    print("Strongest correlations:", strongest_correlations)
if TARGET is not None:
    _fig, _ax = plt.subplots(figsize=(7, 3.5))
    try:
        if TASK == "classification":
            clean_dataset[TARGET].astype(str).value_counts().plot.bar(ax=_ax)
        else:
            _ax.hist(pd.to_numeric(clean_dataset[TARGET], errors="coerce").dropna(), bins=30)
    except Exception as exc:
        print(f"target plot failed: {exc}")
    _bcc_show(_fig, "outputs/target.png")
    if TARGET in _num.columns and TARGET in correlation_matrix.columns:
        target_associations = correlation_matrix[TARGET].drop(TARGET).abs().sort_values(ascending=False)
        print("Correlation with target:", target_associations.head(10).round(3).to_dict())
_dates = [c for c in clean_dataset.columns if pd.api.types.is_datetime64_any_dtype(clean_dataset[c])]
if _dates and _num.shape[1]:
    try:
        _s = clean_dataset.sort_values(_dates[0])
        _s.plot(x=_dates[0], y=list(_num.columns[:4]), subplots=True, figsize=(10, 8), legend=True)
        _bcc_show(plt.gcf(), "outputs/timeseries.png")
    except Exception as exc:
        print(f"time-series plot failed: {exc}")
_bcc_labels, _bcc_extra = {}, []
