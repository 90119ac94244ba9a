"""How every figure of experiments/ is written: its footer (`provenance`: the command, the
start, the commit of the results it draws) and the PNG (`save_with_footer`).  Used by plot,
train_plot, scaling_figure and linkrate, so that none of them imports another for it."""

from __future__ import annotations

import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)

from jobs import results  # noqa: E402

DPI = 110


def provenance(meta: dict) -> str:
    """The footer of a figure: the command that made the run, when, at which commit."""
    words = list(meta.get("command") or [])
    for i, word in enumerate(words[:-1]):
        if word == "--out":            # where it was written then says nothing here
            words[i + 1] = "DIR"
    if not words:
        return ""
    # a results file older than the footers may lack the start or the commit: say so
    started, commit = (meta.get(key) not in (None, "", results.NOT_RECORDED) and meta[key]
                       for key in ("started", "git_commit"))
    parts = [" ".join(words), started or "start time not recorded",
             f"git {commit}" if commit else "commit not recorded"]
    return "  |  ".join(part for part in parts if part)


def save_with_footer(figure, path: str, footer: str, dpi: int = DPI) -> str:
    """The figure as a PNG at `path`, with its footer (`provenance`) under the axes if it has
    one: how every figure here is written (plot's, train_plot's, scaling_figure's and
    linkrate's)."""
    if footer:
        figure.text(0.01, 0.002, footer, fontsize=5.5, color="dimgray", ha="left",
                    va="bottom", wrap=True)
        figure.tight_layout(rect=(0, 0.03, 1, 1))
    else:
        figure.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    figure.savefig(path, dpi=dpi, bbox_inches="tight")
    plt.close(figure)
    return path
