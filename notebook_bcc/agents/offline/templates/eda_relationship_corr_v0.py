
_corr_cols = [c for c in numeric_cols if c not in _id_cols and clean_dataset[c].nunique() > 1]
correlation_matrix = clean_dataset[_corr_cols].corr() if len(_corr_cols) >= 2 else pd.DataFrame()
strongest_correlations = []
if not correlation_matrix.empty:
    _show = list(correlation_matrix.columns)
    if len(_show) > 15:
        if TARGET in _show:
            _order = correlation_matrix[TARGET].drop(TARGET).abs().sort_values(ascending=False)
            _show = [TARGET] + list(_order.index[:14])
        else:
            _show = list(correlation_matrix.abs().mean().sort_values(ascending=False).index[:15])
    _sub = correlation_matrix.loc[_show, _show]
    _fig, _ax = plt.subplots(figsize=(0.55 * len(_show) + 3, 0.55 * len(_show) + 2))
    _im = _ax.imshow(_sub.to_numpy(dtype=float), cmap="coolwarm", vmin=-1, vmax=1)
    _ax.set_xticks(range(len(_show)), [str(c)[:22] for c in _show], rotation=90, fontsize=8)
    _ax.set_yticks(range(len(_show)), [str(c)[:22] for c in _show], fontsize=8)
    if len(_show) <= 12:
        for _i in range(len(_show)):
            for _j in range(len(_show)):
                _v = _sub.iat[_i, _j]
                _ax.text(_j, _i, "" if pd.isna(_v) else f"{_v:.2f}", ha="center", va="center", fontsize=7)
    _fig.colorbar(_im, ax=_ax, shrink=0.8)
    _ax.set_title("Pearson correlations")
    _fig.savefig("outputs/correlations.png", dpi=100, bbox_inches="tight")
    plt.show()
    plt.close(_fig)
    _mask = np.triu(np.ones(correlation_matrix.shape, dtype=bool), k=1)
    _pairs = correlation_matrix.where(_mask).stack().dropna()
    _pairs = _pairs.reindex(_pairs.abs().sort_values(ascending=False).index).head(8)
    strongest_correlations = [(str(a), str(b), round(float(r), 3)) for (a, b), r in _pairs.items()]
    print("Strongest correlations:")
    display(pd.DataFrame(strongest_correlations, columns=["column", "other column", "r"]))
else:
    print("Fewer than two numeric columns: no correlation matrix.")
