"""The figures' text, the second part of the in-kernel helper (``helper_source`` sends
``in_kernel.py`` and then this file, ``exec``-ed into one module): a figure's text/plain
output names its titles and axis labels and says, per axes, what is drawn (the kind of plot,
how many bars, points or lines, their ranges, the largest bars), for a model that cannot see
the image. Standard library only at module level, like ``in_kernel.py``; matplotlib is only
touched through the figure it is given.
"""

import json as _json
import sys as _sys


def describe_figure(fig):
    # matplotlib's own repr, plus the titles and axis labels a reader (or a model that cannot
    # see images) needs to know what a figure shows; then a line per axes of what is drawn
    text = repr(fig)
    try:
        parts = []
        suptitle = getattr(fig, "_suptitle", None)
        if suptitle is not None and suptitle.get_text():
            parts.append(f"title {suptitle.get_text()!r}")
        for ax in fig.axes[:6]:
            bits = [repr(ax.get_title())] if ax.get_title() else []
            if ax.get_xlabel() or ax.get_ylabel():
                bits.append(f"x: {ax.get_xlabel() or '-'}, y: {ax.get_ylabel() or '-'}")
            if bits:
                parts.append("axes " + " ".join(bits))
        if len(fig.axes) > 6:
            parts.append(f"{len(fig.axes) - 6} more axes")
        if parts and text.endswith(">"):
            text = text[:-1] + ": " + "; ".join(parts) + ">"
    except Exception:
        pass
    text = text[:400]
    drawn = []
    for i, ax in enumerate(fig.axes[:6], 1):
        try:
            what = _drawn(ax)
        except Exception:
            continue
        if what:
            drawn.append(f"  axes {i}: " + "; ".join(what))
    return _whole_lines("\n".join([text, *drawn]), 1600)


def _whole_lines(text, limit):
    # at most ``limit`` characters, cut between lines and said so: a reader never takes a
    # cut line ("y 2.2 to") for the whole of what is drawn
    if len(text) <= limit:
        return text
    cut = text.rfind("\n", 0, limit)
    cut = cut if cut > 0 else limit
    return text[:cut] + f"\n  ... ({len(text) - cut} more characters of this description)"


def _num(x):
    return f"{float(x):.4g}"


def _across(ax, ln, xs, ys):
    """ "horizontal line at y V" for an ``axhline`` (its x runs over the axes' width, 0 to 1
    of the axes, not of the data), "vertical line at x V" for an ``axvline``; else ""."""
    try:
        x_data, y_data = ln.get_transform().contains_branch_seperately(ax.transData)
        if y_data and not x_data and len(set(map(float, ys))) == 1:
            return f"horizontal line at y {_num(ys[0])}"
        if x_data and not y_data and len(set(map(float, xs))) == 1:
            at = (_date if _date_axis(ax.xaxis) else _num)(float(xs[0]))
            return f"vertical line at x {at}"
    except (TypeError, ValueError, AttributeError):
        pass
    return ""


def _span(values, dates=False):
    values = [float(v) for v in values if v == v]  # NaN is not a value
    if not values:
        return "-"
    show = _date if dates else _num
    return f"{show(min(values))} to {show(max(values))}"


def _date(x):
    # matplotlib's date number (days since its epoch) as the date it is
    return _sys.modules["matplotlib.dates"].num2date(float(x)).strftime("%Y-%m-%d")


def _date_axis(axis):
    get = getattr(axis, "get_converter", None)
    converter = get() if get is not None else getattr(axis, "converter", None)
    return "Date" in type(converter).__name__ and "matplotlib.dates" in _sys.modules


def _profile(ys, n=8):
    # a long line's shape: its values at n evenly spaced points
    step = (len(ys) - 1) / (n - 1)
    return ", ".join(_num(ys[round(i * step)]) for i in range(n))


def _tick_labels(ax, axis):
    ticks = ax.get_xticks() if axis == "x" else ax.get_yticks()
    labels = ax.get_xticklabels() if axis == "x" else ax.get_yticklabels()
    return {
        round(float(t), 6): lb.get_text()
        for t, lb in zip(ticks, labels, strict=False)
        if lb.get_text()
    }


def _bars(ax, container):
    # a bar chart or a histogram: how many bars, their range, and the largest ones
    rects = [r for r in container.patches if r.get_visible()]
    if not rects:
        return ""
    horizontal = getattr(container, "orientation", "vertical") == "horizontal"
    if horizontal:
        spans = [(r.get_y(), r.get_y() + r.get_height(), r.get_width()) for r in rects]
    else:
        spans = [(r.get_x(), r.get_x() + r.get_width(), r.get_height()) for r in rects]
    ordered = sorted(spans)
    contiguous = len(ordered) > 1 and all(
        abs(a[1] - b[0]) <= 1e-9 * max(1.0, abs(b[0]))
        for a, b in zip(ordered, ordered[1:], strict=False)
    )
    names = _tick_labels(ax, "y" if horizontal else "x")
    where, size = ("y", "x") if horizontal else ("x", "y")

    def label(lo, hi):
        if contiguous:
            return f"[{_num(lo)}, {_num(hi)})"
        centre = round((lo + hi) / 2, 6)
        return repr(names[centre]) if centre in names else _num((lo + hi) / 2)

    kind = "histogram" if contiguous else "bar chart"
    top = sorted(spans, key=lambda s: -abs(s[2]))[:3]
    tallest = ", ".join(f"{label(lo, hi)} {_num(v)}" for lo, hi, v in top)
    centres = [round((lo + hi) / 2, 6) for lo, hi, _ in ordered]
    named = not contiguous and all(c in names for c in centres)
    if named and all(_is_number(names[c]) for c in centres):  # bars at 0..n-1 labelled 1..12
        extent = f"{names[centres[0]]} to {names[centres[-1]]} (tick labels)"
    elif named:
        extent = "named"
    elif _date_axis(ax.yaxis if horizontal else ax.xaxis):
        extent = _span((ordered[0][0], ordered[-1][1]), dates=True)
    else:
        extent = f"{_num(ordered[0][0])} to {_num(ordered[-1][1])}"
    return (
        f"{kind} of {len(rects)} bars, {where} {extent}, {size} {_span(s[2] for s in spans)}; "
        f"largest: {tallest}"
    )


def _drawn(ax):
    what = []
    in_containers = set()
    for container in getattr(ax, "containers", []):
        patches = getattr(container, "patches", None)
        if patches is not None:
            in_containers.update(id(p) for p in patches)
            bars = _bars(ax, container)
            if bars:
                what.append(bars)
    dated = _date_axis(ax.xaxis)
    shown = [ln for ln in ax.get_lines() if ln.get_visible() and len(ln.get_xdata()) > 1]
    lines = [ln for ln in shown if len(ln.get_xdata()) > 2]
    if len(shown) - len(lines) <= 3:  # a fit or reference line or two, not a box plot's parts
        lines = shown
    described = 0
    for ln in lines:
        xs, ys = list(ln.get_xdata()), list(ln.get_ydata())
        name = ln.get_label()
        named = f" {name!r}" if name and not name.startswith("_") else ""
        across = _across(ax, ln, xs, ys)  # axhline / axvline: their other axis is the axes'
        if across:
            what.append(f"{across}{named}")
            continue
        described += 1
        if described > 3:
            continue
        try:
            xr = _span(xs, dates=dated)
        except (TypeError, ValueError):  # dates or categories on x: the first and the last
            xr = f"{str(xs[0])[:19]} to {str(xs[-1])[:19]}".replace("T00:00:00", "")
        ends = f"first {_num(ys[0])}, last {_num(ys[-1])}"
        if len(ys) > 12:
            ends += f"; at 8 evenly spaced points: {_profile(ys)}"
        what.append(f"line{named} of {len(ys)} points, x {xr}, y {_span(ys)}; {ends}")
    if described > 3:
        what.append(f"{described - 3} more lines")
    segments = len(shown) - len(lines)
    if segments:  # a box plot's whiskers, caps and medians, reference lines, error bars
        what.append(f"{segments} straight segments (box plot parts, reference or error lines)")
    scatters = [
        c for c in ax.collections if type(c).__name__ == "PathCollection" and len(c.get_offsets())
    ]
    for coll in scatters[:6]:
        offsets = coll.get_offsets()
        xs, ys = [o[0] for o in offsets], [o[1] for o in offsets]
        what.append(f"scatter of {len(offsets)} points, x {_span(xs, dates=dated)}, y {_span(ys)}")
    if len(scatters) > 6:
        what.append(f"{len(scatters) - 6} more point groups")
    for image in ax.get_images()[:2]:
        shape = getattr(image.get_array(), "shape", ())
        what.append("image " + "x".join(str(n) for n in shape[:2]))
    loose = [p for p in ax.patches if id(p) not in in_containers and p.get_visible()]
    if loose and not what:
        what.append(f"{len(loose)} shapes (patches)")
    if what:
        what.append(f"view x {_span(ax.get_xlim(), dates=dated)}, y {_span(ax.get_ylim())}")
        what += _labels(ax)
    return what


def _labels(ax):
    # text tick labels (categories) and legend entries: which bar or group is which
    out = []
    for axis, labels in (("x", ax.get_xticklabels()), ("y", ax.get_yticklabels())):
        texts = [" ".join(t.get_text().split()) for t in labels if t.get_text().strip()]
        if texts and not all(_is_number(t) for t in texts):
            more = f", +{len(texts) - 12} more" if len(texts) > 12 else ""
            out.append(f"{axis} ticks: {', '.join(texts[:12])}{more}")
    legend = ax.get_legend()
    if legend is not None:
        entries = [t.get_text() for t in legend.get_texts() if t.get_text()]
        if entries:
            out.append("legend: " + ", ".join(entries[:12]))
    return out


def _is_number(text):
    try:
        float(text.replace("\u2212", "-").replace(",", ""))
    except ValueError:
        return False
    return True


def figures_ns(request):
    # Figures' text/plain output names their titles and axis labels (installed at kernel
    # start). IPython's select_figure_formats, which the inline backend calls when pyplot
    # first draws, pops every formatter's Figure entry, so it is wrapped to register again.
    import IPython.core.pylabtools as pylabtools
    from IPython import get_ipython

    shell = get_ipython()

    def plain(fig, printer, cycle):
        printer.text(describe_figure(fig))

    def register():
        formatter = shell.display_formatter.formatters["text/plain"]
        formatter.for_type_by_name("matplotlib.figure", "Figure", plain)

    original = pylabtools.select_figure_formats
    if not getattr(original, "_bcc", False):

        def select_figure_formats(*args, **kwargs):
            result = original(*args, **kwargs)
            register()
            return result

        select_figure_formats._bcc = True
        pylabtools.select_figure_formats = select_figure_formats
        inline = _sys.modules.get("matplotlib_inline.backend_inline")
        if inline is not None:
            inline.select_figure_formats = select_figure_formats
    register()
    return _json.dumps({"ok": True})
