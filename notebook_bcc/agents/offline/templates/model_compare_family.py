
# This branch of the fork compares one model family with the baseline; the other family runs
# at the same time in a kernel of its own, and the better cross-validated score is kept.
candidate_models = {
    _n: _m for _n, _m in candidate_models.items()
    if _n.startswith("dummy") or (_n == "hist_gradient_boosting") == (__FAMILY__ == "boosting")
}
