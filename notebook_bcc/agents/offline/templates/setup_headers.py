
def _bcc_clean_headers(frame):
    # collapse whitespace/newlines, keep names unique, drop fully empty "Unnamed: N" columns,
    # and name a leading unnamed index column
    headers, seen = [], set()
    for position, name in enumerate(frame.columns):
        text = re.sub(r"\s+", " ", str(name).replace("\ufeff", "")).strip() or f"column_{position}"
        base, k = text, 1
        while text in seen:
            k += 1
            text = f"{base}_{k}"
        seen.add(text)
        headers.append(text)
    frame.columns = headers
    empty = [c for c in frame.columns if c.startswith("Unnamed:") and frame[c].isna().all()]
    frame = frame.drop(columns=empty)
    if len(frame.columns) and frame.columns[0].startswith("Unnamed:") and "index" not in frame.columns:
        frame = frame.rename(columns={frame.columns[0]: "index"})
    return frame, empty
