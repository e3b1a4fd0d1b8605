

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


class _BccResult:
    # a step's one-line result: shown as markdown under the cell; its plain text (what
    # the reflector reads) starts with "Result:"
    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return "Result: " + self.text

    def _repr_markdown_(self):
        return "**Result.** " + self.text


def _bcc_result(text):
    text = " ".join(str(text).split())
    display(_BccResult(text if len(text) <= 400 else text[:396].rstrip() + " ..."))



# --- a figure, saved and shown from one drawing
class _BccSavedFigure:
    # the saved file's image, with the figure's text (its titles, axes and what they draw)
    def __init__(self, path, text):
        self.path, self.text = path, text

    def _repr_png_(self):
        with open(self.path, "rb") as handle:
            return handle.read()

    def __repr__(self):
        return self.text


def _bcc_show(fig, path):
    # plt.show() would draw the figure a second time: show the image just saved instead
    fig.savefig(path, dpi=100, bbox_inches="tight")
    text = get_ipython().display_formatter.formatters["text/plain"](fig)
    display(_BccSavedFigure(path, text))
    plt.close(fig)
