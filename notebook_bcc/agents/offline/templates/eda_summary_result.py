
try:
    _bcc_sections = re.findall(r"^- \*\*([^*]+)\*\*", analysis_summary, re.M)
    if _bcc_sections:
        _bcc_text = f"the summary above covers {_bcc_count(len(_bcc_sections), 'section')} ({_bcc_names(_bcc_sections, 8)})"
    else:
        _bcc_text = f"the summary above lists {_bcc_count(len(re.findall(r'^- ', analysis_summary, re.M)), 'point')}"
    _bcc_text += f"; {clean_dataset.shape[0]} rows x {clean_dataset.shape[1]} columns after cleaning"
    _fm = globals().get("final_metrics")
    if isinstance(_fm, dict) and str(_fm["model"]).startswith("dummy"):
        _bcc_text += f"; no model beat the baseline {_fm['model']} (hold-out {_bcc_fmt(_fm['test_score'])})"
    elif isinstance(_fm, dict):
        _bcc_text += (
            f"; the final model {_fm['model']} scores hold-out {'accuracy' if _fm['metric'] == 'accuracy' else 'R²'} "
            f"{_bcc_fmt(_fm['test_score'])} against {_bcc_fmt(_fm['baseline_score'])} for the baseline"
        )
except Exception as exc:
    _bcc_text = f"the summary above has {len(analysis_summary.splitlines())} lines (summary line failed: {type(exc).__name__})"
_bcc_result(_bcc_text + ".")
