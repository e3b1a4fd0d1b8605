
_g = globals()
_parts = ["## Analysis summary", "", f"- Rows after cleaning: {len(clean_dataset)}; columns: {clean_dataset.shape[1]}."]
_parts += [f"- {a}" for a in (_g.get("cleaning_log") or [])[:5]]
if isinstance(_g.get("final_metrics"), dict):
    _parts.append(f"- Final metrics: {_g['final_metrics']}")
if isinstance(_g.get("stability_report"), dict):
    _parts.append(f"- Stability: {_g['stability_report']}")
analysis_summary = "\n".join(_parts)
try:
    from IPython.display import Markdown, display

    display(Markdown(analysis_summary))
except Exception:
    print(analysis_summary)
