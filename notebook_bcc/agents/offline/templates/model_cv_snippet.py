
def _bcc_cv(seed):
    n_splits = int(max(2, min(5, len(y_train))))
    if TASK == "classification" and int(y_train.value_counts().min()) >= n_splits:
        return StratifiedKFold(n_splits=n_splits, shuffle=True, random_state=seed)
    return KFold(n_splits=n_splits, shuffle=True, random_state=seed)
