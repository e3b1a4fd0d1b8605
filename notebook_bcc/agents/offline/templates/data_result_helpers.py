

# --- one-line result for the reader
def _bcc_names(names, limit=5):
    names = [str(n) if len(str(n)) <= 40 else str(n)[:39] + "..." for n in names]
    if not names:
        return "none"
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def _bcc_count(n, word, plural=None):
    return f"{n} {word if n == 1 else (plural or word + 's')}"


def _bcc_fmt(value, spec=".3f"):
    try:
        value = float(value)
    except (TypeError, ValueError):
        return "n/a"
    return "n/a" if value != value else format(value, spec)


def _bcc_result(text):
    text = " ".join(str(text).split())
    print("Result: " + (text if len(text) <= 400 else text[:396].rstrip() + " ..."))

