
_corr_cols = [c for c in numeric_cols if c not in _id_cols and clean_dataset[c].nunique() > 1]
correlation_matrix = clean_dataset[_corr_cols].corr() if len(_corr_cols) >= 2 else pd.DataFrame()
strongest_correlations = []


def _bcc_draw_correlations(matrix, target, path):
    # a heatmap of at most 15 columns (those most correlated with the target, or overall),
    # with the values written in when it is small enough to read them
    show = list(matrix.columns)
    if len(show) > 15:
        if target in show:
            order = matrix[target].drop(target).abs().sort_values(ascending=False)
            show = [target] + list(order.index[:14])
        else:
            show = list(matrix.abs().mean().sort_values(ascending=False).index[:15])
    sub = matrix.loc[show, show]
    fig, ax = plt.subplots(figsize=(0.55 * len(show) + 3, 0.55 * len(show) + 2))
    image = ax.imshow(sub.to_numpy(dtype=float), cmap="coolwarm", vmin=-1, vmax=1)
    ax.set_xticks(range(len(show)), [str(c)[:22] for c in show], rotation=90, fontsize=8)
    ax.set_yticks(range(len(show)), [str(c)[:22] for c in show], fontsize=8)
    if len(show) <= 12:
        for i in range(len(show)):
            for j in range(len(show)):
                value = sub.iat[i, j]
                ax.text(j, i, "" if pd.isna(value) else f"{value:.2f}", ha="center", va="center", fontsize=7)
    fig.colorbar(image, ax=ax, shrink=0.8, label="Pearson r")
    ax.set_title("Pearson correlations")
    _bcc_show(fig, path)


def _bcc_strongest_pairs(matrix, n=8):
    # the n column pairs with the largest |r|, each pair once
    mask = np.triu(np.ones(matrix.shape, dtype=bool), k=1)
    pairs = matrix.where(mask).stack().dropna()
    pairs = pairs.reindex(pairs.abs().sort_values(ascending=False).index).head(n)
    return [(str(a), str(b), round(float(r), 3)) for (a, b), r in pairs.items()]


if not correlation_matrix.empty:
    _bcc_draw_correlations(correlation_matrix, TARGET, "outputs/correlations.png")
    strongest_correlations = _bcc_strongest_pairs(correlation_matrix)
    print("Strongest correlations:")
    display(pd.DataFrame(strongest_correlations, columns=["column", "other column", "r"]))
else:
    print("Fewer than two numeric columns: no correlation matrix.")
